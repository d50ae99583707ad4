// The shapes the pages read, taken from the API's own schemas (type-only imports: nothing of the
// server reaches the bundle), so a changed response breaks the dashboard's typecheck.
import type { Static } from 'typebox';
import type {
  BaselineResponse,
  DetectResponse,
  MachineStatusResponse as MachineStatusSchema,
  MachinesResponse as MachinesSchema,
  MultivariateDetectResponse,
} from '../../api/src/native/schemas.js';
import type { ResultsResponse, ResultRowBody } from '../../api/src/telemetry/schemas.js';
import type { JobBody, JobResultRowBody, JobResultsResponse as JobResultsSchema } from '../../api/src/jobs/schemas.js';
import type {
  IssuedKey as IssuedKeySchema,
  KeyList as KeyListSchema,
  KeyView as KeyViewSchema,
  RotatedKey as RotatedKeySchema,
} from '../../api/src/tenancy/key-schemas.js';
import type { ChangePointDetectResponse, EntireDetectResponse } from '../../api/src/vendor/schemas.js';
import type {
  CreatedWebhook as CreatedWebhookSchema,
  DeliveryList as DeliveryListSchema,
  DeliveryView as DeliveryViewSchema,
  EpisodesResponse as EpisodesSchema,
  WebhookList as WebhookListSchema,
  WebhookView as WebhookViewSchema,
} from '../../api/src/webhooks/schemas.js';
import type { FeedbackList as FeedbackListSchema, FeedbackView as FeedbackViewSchema } from '../../api/src/feedback/schemas.js';

export type { BaselineResponse, ChangePointDetectResponse, DetectResponse, EntireDetectResponse, MultivariateDetectResponse, ResultRowBody, ResultsResponse };
/** A multivariate detection's machine verdict (null without a joint model). */
export type MachineVerdictBody = NonNullable<MultivariateDetectResponse['machine']>;
export type { JobBody, JobResultRowBody };
export type JobResultsResponse = Static<typeof JobResultsSchema>;
export type MachinesResponse = Static<typeof MachinesSchema>;
export type MachineSummary = MachinesResponse['machines'][number];
export type MachineStatusResponse = Static<typeof MachineStatusSchema>;

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

export type KeyView = Static<typeof KeyViewSchema>;
export type KeyList = Static<typeof KeyListSchema>;
export type IssuedKey = Static<typeof IssuedKeySchema>;
export type RotatedKey = Static<typeof RotatedKeySchema>;
export type WebhookView = Static<typeof WebhookViewSchema>;
export type WebhookList = Static<typeof WebhookListSchema>;
export type CreatedWebhook = Static<typeof CreatedWebhookSchema>;
export type DeliveryView = Static<typeof DeliveryViewSchema>;
export type DeliveryList = Static<typeof DeliveryListSchema>;
export type EpisodesResponse = Static<typeof EpisodesSchema>;
export type EpisodeBody = EpisodesResponse['episodes'][number];
export type FeedbackView = Static<typeof FeedbackViewSchema>;
export type FeedbackList = Static<typeof FeedbackListSchema>;
