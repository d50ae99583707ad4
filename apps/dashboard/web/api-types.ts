// The shapes the pages read, from @adp/api-types (generated from the API's OpenAPI document: the
// dashboard reads the contract, never the API's source; type-only, so nothing reaches the bundle).
// A changed response changes those types and breaks the dashboard's typecheck.
import type {
  BaselineResponse,
  ChangePointDetectResponse,
  CreatedWebhook,
  DeliveryList,
  DeliveryView,
  DetectResponse,
  EntireDetectResponse,
  IssuedKey,
  JobBody,
  JobResultsResponse,
  KeyList,
  KeyView,
  MachineStatusResponse,
  MachinesResponse,
  MultivariateDetectResponse,
  ResultsResponse,
  RotatedKey,
  WebhookList,
  WebhookView,
} from '@adp/api-types';

export type { BaselineResponse, ChangePointDetectResponse, DetectResponse, EntireDetectResponse, MultivariateDetectResponse, ResultsResponse };
/** One stored result row of GET /v1/machines/{machine_id}/results. */
export type ResultRowBody = ResultsResponse['results'][number];
/** A multivariate detection's machine verdict (null without a joint model). */
export type MachineVerdictBody = NonNullable<MultivariateDetectResponse['machine']>;
export type { JobBody, JobResultsResponse };
/** One row of a job's results. */
export type JobResultRowBody = JobResultsResponse['results'][number];
export type { MachinesResponse, MachineStatusResponse };
export type MachineSummary = MachinesResponse['machines'][number];

/** GET /v1/usage/daily: the organization's calls and points per UTC day and endpoint, newest last. */
export interface DailyUsageResponse {
  readonly org_id: string;
  readonly from: string;
  readonly to: string;
  readonly days: readonly { readonly day: string; readonly endpoint: string; readonly total_points: number; readonly call_count: number }[];
}

/** One record of GET /v1/usage. */
export interface UsageRecord {
  readonly endpoint: string;
  readonly total_points: number;
  readonly call_count: number;
}

/** GET /v1/usage/summary, the parts the usage page reads: the records and the plan's monthly quota (null fields: no quota). */
export interface UsageSummary {
  readonly usage: readonly UsageRecord[];
  readonly plan: 'free' | 'paid';
  readonly monthly_point_quota: number | null;
  readonly points_used_this_month: number;
  readonly points_remaining: number | null;
  /** ISO 8601, UTC. */
  readonly quota_renews_at: string | null;
}

export type { CreatedWebhook, DeliveryList, DeliveryView, IssuedKey, KeyList, KeyView, RotatedKey, WebhookList, WebhookView };
