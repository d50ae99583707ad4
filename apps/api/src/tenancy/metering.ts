// Connects successful detections to usage metering for the caller's organization.
import type { Store } from '@adp/store';
import { AppError, ERRORS } from '../errors.js';
import type { VendorRoutesOptions } from '../vendor/contract.js';
import { CALL_DIMENSIONS } from '../marketplace/export.js';

export interface HourlyCallCounting {
  /** Clock in epoch ms for the hour a call counts in. */
  readonly nowMs: () => number;
}

/**
 * The vendor routes' `onDetected`: adds the call and its points to the caller's usage, and with
 * `hourly` (a marketplace listing) a live call to its hour's count. A call that
 * cannot be counted is refused with a retriable 503 rather than served for free.
 */
/**
 * Adds a live call of a metered endpoint to the organization's hourly count (marketplace only).
 * Endpoints without a dimension (e.g. `v1/baseline`) are not counted.
 */
export async function countHourlyCall(store: Store, hourly: HourlyCallCounting | undefined, orgId: string, keyKind: string, endpoint: string): Promise<void> {
  const dimension = CALL_DIMENSIONS[endpoint];
  if (hourly && store.metering && keyKind === 'live' && dimension !== undefined) {
    await store.metering.countCall(orgId, dimension, new Date(hourly.nowMs()));
  }
}

export function meterDetections(store: Store, hourly?: HourlyCallCounting): VendorRoutesOptions['onDetected'] {
  return async (request, endpoint, points) => {
    // `auth` is null only if a route forgot to require a key: a bug, not a client error.
    const auth = request.auth as typeof request.auth | null;
    if (!auth?.orgId) throw new AppError(ERRORS.InternalError, 'Detection ran without an authenticated caller');
    try {
      await store.recordUsage(auth.orgId, endpoint, points, auth.keyKind);
      // The marketplace bills live calls per hour; usage above is kept per day.
      await countHourlyCall(store, hourly, auth.orgId, auth.keyKind, endpoint);
    } catch (cause) {
      throw new AppError(ERRORS.ServiceUnavailable, 'Usage could not be recorded; retry the request.', { cause });
    }
  };
}
