// Connects successful detections to usage metering for the caller's organization.
import type { Store } from '@adp/store';
import { AppError, ERRORS } from '../errors.js';
import type { VendorRoutesOptions } from '../vendor/contract.js';

/**
 * The vendor routes' `onDetected`: adds the call and its points to the caller's usage. A call that
 * cannot be counted is refused with a retriable 503 rather than served for free.
 */
export function meterDetections(store: Store): VendorRoutesOptions['onDetected'] {
  return async (request, endpoint, points) => {
    // `auth` is null only if a route forgot to require a key: a bug, not a client error.
    const auth = request.auth as typeof request.auth | null;
    if (!auth?.orgId) throw new AppError(ERRORS.InternalError, 'Detection ran without an authenticated caller');
    try {
      await store.recordUsage(auth.orgId, endpoint, points, auth.keyKind);
    } catch (cause) {
      throw new AppError(ERRORS.ServiceUnavailable, 'Usage could not be recorded; retry the request.', { cause });
    }
  };
}
