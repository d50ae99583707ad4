// The free tier: an organization on the `free` plan may send FREE_TIER_POINTS_PER_MONTH data points
// a calendar month (UTC) on live keys. Once its live usage this month has reached the quota, every
// metered call (the calls that record usage: detection, baselines, telemetry) made with a live key
// is refused with a 403 until the first of the next month. The call that crosses the line is served
// in full; test keys are never refused or counted; `paid` organizations have no quota. The count is
// the store's usage, so it survives restarts and is shared by every replica.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Organization, Plan, Store } from '@adp/store';
import { ERRORS } from '../errors.js';

declare module 'fastify' {
  interface FastifyRequest {
    /**
     * True once the quota check found a quota for this call's organization: its usage must be
     * written before the call is answered, so that the next call's check sees it.
     */
    quotaCounted: boolean;
  }
}

/** The response header that says when a refused organization's quota renews (ISO 8601, UTC). */
export const QUOTA_RENEWS_HEADER = 'x-quota-renews-at';

/** The first instant of `nowMs`'s calendar month, UTC. */
export function monthStartUtc(nowMs: number): Date {
  const now = new Date(nowMs);
  return new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1));
}

/** The first instant of the calendar month after `nowMs`'s, UTC: when a monthly quota renews. */
export function nextMonthStartUtc(nowMs: number): Date {
  const now = new Date(nowMs);
  return new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1));
}

/** The monthly point quota of an organization on `plan`; null for a plan without one. */
export function monthlyQuotaOf(plan: Plan, freeTierPointsPerMonth: number): number | null {
  return plan === 'free' ? freeTierPointsPerMonth : null;
}

/** The points an organization sent on live keys in `nowMs`'s calendar month (UTC): what the quota counts. */
export async function livePointsThisMonth(store: Pick<Store, 'usageFor'>, orgId: string, nowMs: number): Promise<number> {
  return (await store.usageFor(orgId, { keyKind: 'live', since: monthStartUtc(nowMs) })).points;
}

/** An organization's quota as the enforcement below sees it at `nowMs`, for the caller to read. */
export interface QuotaState {
  readonly plan: Plan;
  /** Null when the plan has no quota. */
  readonly monthlyPointQuota: number | null;
  readonly pointsUsedThisMonth: number;
  /** Null when the plan has no quota; 0, never less, once the quota is used (the crossing call is served in full). */
  readonly pointsRemaining: number | null;
  /** Null when the plan has no quota. */
  readonly renewsAt: Date | null;
}

export async function quotaState(
  store: Pick<Store, 'usageFor'>,
  organization: Organization,
  freeTierPointsPerMonth: number,
  nowMs: number,
): Promise<QuotaState> {
  const quota = monthlyQuotaOf(organization.plan, freeTierPointsPerMonth);
  const used = await livePointsThisMonth(store, organization.id, nowMs);
  return {
    plan: organization.plan,
    monthlyPointQuota: quota,
    pointsUsedThisMonth: used,
    pointsRemaining: quota === null ? null : Math.max(0, quota - used),
    renewsAt: quota === null ? null : nextMonthStartUtc(nowMs),
  };
}

/** Whether a route records usage, so the quota applies to it. */
export function isMeteredRoute(method: string, routeUrl: string | undefined): boolean {
  if (method !== 'POST' || routeUrl === undefined) return false;
  if (routeUrl.startsWith('/anomalydetector/')) return routeUrl.endsWith('/detect');
  return routeUrl === '/v1/detect' || routeUrl === '/v1/baseline' || routeUrl === '/v1/telemetry' || routeUrl === '/v1/jobs';
}

/** The vendor gateway's shape for a quota refusal, as it answers its free tier. */
export function vendorQuotaBody(message: string): { error: { code: string; message: string } } {
  return { error: { code: '403', message } };
}

export interface QuotaOptions {
  readonly store: Store;
  /** FREE_TIER_POINTS_PER_MONTH. */
  readonly freeTierPointsPerMonth: number;
  readonly nowMs?: () => number;
}

/** Adds the quota check to `app` itself; register it after the authentication hook. */
export function installQuota(app: FastifyInstance, options: QuotaOptions): void {
  const nowMs = options.nowMs ?? Date.now;
  app.decorateRequest('quotaCounted', false);
  app.addHook('onRequest', async (request, reply) => {
    if (request.routeOptions.config?.public === true) return undefined;
    if (!isMeteredRoute(request.method, request.routeOptions.url)) return undefined;
    // Test keys are never billed, so never refused for quota either.
    if (request.auth.keyKind !== 'live') return undefined;
    const organization = await options.store.getOrganization(request.auth.orgId);
    const quota = organization === null ? null : monthlyQuotaOf(organization.plan, options.freeTierPointsPerMonth);
    if (quota === null) return undefined;
    request.quotaCounted = true;
    const now = nowMs();
    if ((await livePointsThisMonth(options.store, request.auth.orgId, now)) < quota) return undefined;
    return sendQuotaExceeded(request, reply, quota, nextMonthStartUtc(now));
  });
}

function sendQuotaExceeded(request: FastifyRequest, reply: FastifyReply, quota: number, renewsAt: Date): FastifyReply {
  const renews = renewsAt.toISOString();
  const message =
    `This organization has used its free plan's ${quota} data points for this month (UTC). ` +
    `The quota renews at ${renews}. Test keys are not counted; a paid plan has no quota.`;
  request.log.info({ code: ERRORS.QuotaExceeded.code, orgId: request.auth.orgId, renewsAt: renews }, 'monthly quota exceeded');
  reply.header(QUOTA_RENEWS_HEADER, renews);
  const body = /^\/anomalydetector(\/|$)/i.test(request.url)
    ? vendorQuotaBody(message)
    : { error: { code: ERRORS.QuotaExceeded.code, message } };
  return reply.code(ERRORS.QuotaExceeded.statusCode).type('application/json; charset=utf-8').send(JSON.stringify(body));
}
