// Usage metering: the one place a served call is counted (per day for usage and quotas, and per
// hour for the marketplace), for the vendor routes, the native routes and telemetry.
import type { ApiKeyKind, Store } from '@adp/store';
import { AppError, ERRORS } from '../errors.js';
import type { VendorRoutesOptions } from '../vendor/contract.js';
import { CALL_DIMENSIONS } from '../marketplace/export.js';

export interface HourlyCallCounting {
  /** Clock in epoch ms for the hour a call counts in. */
  readonly nowMs: () => number;
}

/** Counts served calls for an organization; rejects with the store's error when a count is not durable. */
export interface UsageMeter {
  count(orgId: string, keyKind: ApiKeyKind, endpoint: string, points: number): Promise<void>;
}

/**
 * Adds a call and its points to its organization's usage, and with `hourly` (a marketplace listing)
 * a live call of a billed endpoint to its hour's count.
 */
export function usageMeter(store: Pick<Store, 'recordUsage' | 'metering'>, hourly?: HourlyCallCounting): UsageMeter {
  return {
    async count(orgId, keyKind, endpoint, points) {
      await store.recordUsage(orgId, endpoint, points, keyKind);
      // The marketplace bills live calls per hour; usage above is kept per day.
      const dimension = CALL_DIMENSIONS[endpoint];
      if (hourly && store.metering && keyKind === 'live' && dimension !== undefined) {
        await store.metering.countCall(orgId, dimension, new Date(hourly.nowMs()));
      }
    },
  };
}

/**
 * The vendor routes' `onDetected`: adds the call and its points to the caller's usage, and with
 * `hourly` (a marketplace listing) a live call to its hour's count. A call that
 * cannot be counted is refused with a retriable 503 rather than served for free.
 */
export function meterDetections(store: Store, hourly?: HourlyCallCounting): VendorRoutesOptions['onDetected'] {
  const meter = usageMeter(store, hourly);
  return async (request, endpoint, points) => {
    // `auth` is null only if a route forgot to require a key: a bug, not a client error.
    const auth = request.auth as typeof request.auth | null;
    if (!auth?.orgId) throw new AppError(ERRORS.InternalError, 'Detection ran without an authenticated caller');
    try {
      await meter.count(auth.orgId, auth.keyKind, endpoint, points);
    } catch (cause) {
      throw new AppError(ERRORS.ServiceUnavailable, 'Usage could not be recorded; retry the request.', { cause });
    }
  };
}
