// The caller's own tenancy view. Needs a key like every non-public route.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { Store } from '@adp/store';
import { AppError, ERRORS } from '../errors.js';
import { quotaState } from './quota.js';

export interface TenancyRoutesOptions {
  readonly store: Store;
  /** FREE_TIER_POINTS_PER_MONTH, for the quota the summary reports. */
  readonly freeTierPointsPerMonth: number;
  /** Clock in epoch ms for the quota's month (tests). */
  readonly nowMs?: () => number;
}

/**
 * Every detection endpoint's usage label, in the order `GET /v1/usage` lists them. They are all
 * listed, with zeros when unused, so clients need not know which ones were called.
 */
export const USAGE_ENDPOINTS = ['entire/detect', 'last/detect', 'changepoint/detect', 'v1/detect', 'v1/baseline', 'telemetry', 'jobs'] as const;

const EndpointUsage = Type.Object({
  endpoint: Type.String({ description: `Usage label: ${USAGE_ENDPOINTS.join(', ')}.` }),
  total_points: Type.Integer({ minimum: 0, description: 'Points the calls carried.' }),
  call_count: Type.Integer({ minimum: 0, description: 'Successful calls.' }),
});

const UsageRecords = Type.Array(EndpointUsage, {
  description: "The caller's organization's usage: one record per endpoint label, zeros included.",
});

const UsageSummary = Type.Object(
  {
    org_id: Type.String(),
    key_id: Type.Union([Type.String(), Type.Null()], { description: "The caller's API key; null for an identity-provider token." }),
    key_kind: Type.Union([Type.Literal('live'), Type.Literal('test')], { description: 'The key kind; live for an identity-provider token.' }),
    subject: Type.Optional(Type.String({ description: "The identity-provider token's subject (sub); absent for an API key." })),
    /** Points and calls since the organization was created, all endpoints. */
    total_points: Type.Integer({ minimum: 0 }),
    call_count: Type.Integer({ minimum: 0 }),
    usage: Type.Array(EndpointUsage, { description: 'One record per endpoint label, zeros included.' }),
    plan: Type.Union([Type.Literal('free'), Type.Literal('paid')], {
      description: 'The organization\'s plan: free has a monthly point quota (FREE_TIER_POINTS_PER_MONTH), paid has none.',
    }),
    monthly_point_quota: Type.Union([Type.Integer({ minimum: 0 }), Type.Null()], {
      description: 'Data points the plan allows on live keys per calendar month (UTC); null when the plan has no quota.',
    }),
    points_used_this_month: Type.Integer({
      minimum: 0,
      description: 'Points sent on live keys this calendar month (UTC), the count the quota is enforced on; whatever `kind` asks.',
    }),
    points_remaining: Type.Union([Type.Integer({ minimum: 0 }), Type.Null()], {
      description: 'monthly_point_quota less points_used_this_month, never below 0; null when the plan has no quota.',
    }),
    quota_renews_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()], {
      description: 'When the quota renews: the first instant of next calendar month, UTC (ISO 8601); null when the plan has no quota.',
    }),
  },
  { description: "The caller (key, or identity-provider subject), its organization's usage, with totals, and its plan's monthly quota" },
);

const NotFoundError = Type.Object(
  { error: Type.Object({ code: Type.String(), message: Type.String() }) },
  { description: "The caller's organization no longer exists" },
);

const UsageQuery = Type.Object(
  {
    kind: Type.Optional(
      Type.Union([Type.Literal('live'), Type.Literal('test')], {
        description: 'Only the usage of keys of this kind (test keys are never billed). Default: both kinds together.',
      }),
    ),
  },
  { additionalProperties: false },
);

export const tenancyRoutes: FastifyPluginAsyncTypebox<TenancyRoutesOptions> = async (app, options) => {
  const nowMs = options.nowMs ?? Date.now;
  /** One record per label: the known labels first in their fixed order, then any other label the store holds. */
  async function usageRecords(orgId: string, kind: 'live' | 'test' | undefined) {
    const usage = await options.store.usageFor(orgId, kind ? { keyKind: kind } : {});
    const recorded = new Map(usage.byEndpoint.map((entry) => [entry.endpoint, entry]));
    const labels = [...USAGE_ENDPOINTS, ...[...recorded.keys()].filter((label) => !(USAGE_ENDPOINTS as readonly string[]).includes(label))];
    const records = labels.map((endpoint) => ({
      endpoint,
      total_points: recorded.get(endpoint)?.points ?? 0,
      call_count: recorded.get(endpoint)?.calls ?? 0,
    }));
    return { usage, records };
  }

  app.get(
    '/v1/usage',
    {
      schema: {
        summary: "Usage of the caller's organization: an array of one record per endpoint",
        tags: ['tenancy'],
        querystring: UsageQuery,
        response: { 200: UsageRecords },
      },
    },
    async (request) => (await usageRecords(request.auth.orgId, request.query.kind)).records,
  );

  app.get(
    '/v1/usage/summary',
    {
      schema: {
        summary: "The caller's organization and key, its usage totals and the per-endpoint records",
        tags: ['tenancy'],
        querystring: UsageQuery,
        response: { 200: UsageSummary, 404: NotFoundError },
      },
    },
    async (request) => {
      const organization = await options.store.getOrganization(request.auth.orgId);
      // Authentication has just found the organization; only one removed since then is missing.
      if (organization === null) throw new AppError(ERRORS.OrganizationNotFound, 'This organization no longer exists.');
      const { usage, records } = await usageRecords(request.auth.orgId, request.query.kind);
      const quota = await quotaState(options.store, organization, options.freeTierPointsPerMonth, nowMs());
      return {
        org_id: usage.orgId,
        key_id: request.auth.keyId,
        key_kind: request.auth.keyKind,
        ...(request.auth.subject === null ? {} : { subject: request.auth.subject }),
        total_points: usage.points,
        call_count: usage.calls,
        usage: records,
        plan: quota.plan,
        monthly_point_quota: quota.monthlyPointQuota,
        points_used_this_month: quota.pointsUsedThisMonth,
        points_remaining: quota.pointsRemaining,
        quota_renews_at: quota.renewsAt === null ? null : quota.renewsAt.toISOString(),
      };
    },
  );
};
