// GET /v1/usage/daily: the caller's organization's calls and points per endpoint label and UTC day,
// for the dashboard's usage page and for anyone who bills by the day.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { Store } from '@adp/store';
import { AppError, ERRORS } from '../errors.js';

export interface DailyUsageRoutesOptions {
  readonly store: Store;
  /** Clock in epoch ms for the default range (tests). */
  readonly nowMs?: () => number;
}

const DAY_MS = 86_400_000;
/** Days in the default range, today included. */
export const DAILY_USAGE_DEFAULT_DAYS = 30;
/** Longest range one call reads, days. */
export const DAILY_USAGE_MAX_DAYS = 366;

const Day = Type.String({ pattern: '^\\d{4}-\\d{2}-\\d{2}$', description: 'A UTC day, YYYY-MM-DD.' });

const DailyUsageQuery = Type.Object(
  {
    from: Type.Optional({ ...Day, description: `First day (included). Default: ${DAILY_USAGE_DEFAULT_DAYS - 1} days before \`to\`.` }),
    to: Type.Optional({ ...Day, description: 'Last day (included). Default: today (UTC).' }),
    kind: Type.Optional(Type.Union([Type.Literal('live'), Type.Literal('test')], { description: 'Only the usage of keys of this kind. Default: both.' })),
  },
  { additionalProperties: false },
);

const DailyUsageResponse = Type.Object(
  {
    org_id: Type.String(),
    from: Day,
    to: Day,
    days: Type.Array(
      Type.Object({
        day: Day,
        endpoint: Type.String({ description: 'Usage label, as GET /v1/usage lists them.' }),
        total_points: Type.Integer({ minimum: 0 }),
        call_count: Type.Integer({ minimum: 0 }),
      }),
      { description: 'One record per day and endpoint with any calls, by day then endpoint; days and endpoints without calls are left out.' },
    ),
  },
  { description: "The caller's organization's usage per UTC day and endpoint" },
);

function dayOf(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10);
}

function msOf(day: string, name: string): number {
  const ms = Date.parse(`${day}T00:00:00Z`);
  if (Number.isNaN(ms) || dayOf(ms) !== day) throw new AppError(ERRORS.InvalidArgument, `${name} must be a real day, YYYY-MM-DD.`);
  return ms;
}

export const dailyUsageRoutes: FastifyPluginAsyncTypebox<DailyUsageRoutesOptions> = async (app, options) => {
  const nowMs = options.nowMs ?? Date.now;
  app.get(
    '/v1/usage/daily',
    {
      schema: {
        summary: "Usage of the caller's organization per UTC day and endpoint",
        tags: ['tenancy'],
        querystring: DailyUsageQuery,
        response: { 200: DailyUsageResponse, 503: Type.Object({ error: Type.Object({ code: Type.String(), message: Type.String() }) }) },
      },
    },
    async (request) => {
      const toMs = request.query.to === undefined ? msOf(dayOf(nowMs()), 'to') : msOf(request.query.to, 'to');
      const fromMs = request.query.from === undefined ? toMs - (DAILY_USAGE_DEFAULT_DAYS - 1) * DAY_MS : msOf(request.query.from, 'from');
      if (fromMs > toMs) throw new AppError(ERRORS.InvalidArgument, 'from must not be after to.');
      if ((toMs - fromMs) / DAY_MS + 1 > DAILY_USAGE_MAX_DAYS) {
        throw new AppError(ERRORS.InvalidArgument, `The range may span at most ${DAILY_USAGE_MAX_DAYS} days.`);
      }
      const daily = options.store.dailyUsage;
      if (!daily) throw new AppError(ERRORS.ServiceUnavailable, 'This store keeps no usage per day.');
      const from = dayOf(fromMs);
      const to = dayOf(toMs);
      const rows = await daily.usageByDay(request.auth.orgId, { fromDay: from, toDay: to, ...(request.query.kind ? { keyKind: request.query.kind } : {}) });
      return {
        org_id: request.auth.orgId,
        from,
        to,
        days: rows.map((row) => ({ day: row.day, endpoint: row.endpoint, total_points: row.points, call_count: row.calls })),
      };
    },
  );
};
