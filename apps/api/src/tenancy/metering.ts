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

/** The vendor routes' metering: their `onDetected`, and `drain` for their `onClose`. */
export interface DetectionMeter {
  readonly onDetected: VendorRoutesOptions['onDetected'];
  /** Resolves once every count started so far has settled (before the app closes its store). */
  drain(): Promise<void>;
}

/**
 * The vendor routes' metering: adds each call and its points to the caller's usage, and with
 * `hourly` (a marketplace listing) a live call to its hour's count.
 *
 * A call whose count nothing reads at once is counted write-behind while the store takes counts:
 * it is answered as soon as its count is queued (the store still group-commits it), which takes
 * the write, about as long as a last-point detection itself, off the response. Calls a quota
 * counts (`request.quotaCounted`) and live calls billed per hour wait for their count, as before,
 * so that the next call's quota check and the marketplace's hour see them. Once a write-behind
 * count fails, every later call waits for its own count and is refused with a retriable 503 if
 * that fails too (a call that cannot be counted is not served for free); the first count that
 * succeeds goes back to write-behind. So only calls whose counts were already queued when the
 * store began to fail go uncounted, and each of those failures is logged.
 */
export function meterDetections(store: Store, hourly?: HourlyCallCounting): DetectionMeter {
  const meter = usageMeter(store, hourly);
  const inFlight = new Set<Promise<void>>();
  let failing = false;
  return {
    async onDetected(request, endpoint, points) {
      // `auth` is null only if a route forgot to require a key: a bug, not a client error.
      const auth = request.auth as typeof request.auth | null;
      if (!auth?.orgId) throw new AppError(ERRORS.InternalError, 'Detection ran without an authenticated caller');
      const counted = meter.count(auth.orgId, auth.keyKind, endpoint, points);
      const billedHourly = hourly !== undefined && auth.keyKind === 'live';
      if (failing || request.quotaCounted === true || billedHourly) {
        try {
          await counted;
        } catch (cause) {
          throw new AppError(ERRORS.ServiceUnavailable, 'Usage could not be recorded; retry the request.', { cause });
        }
        if (failing) failing = false;
        return;
      }
      const settled: Promise<void> = counted.then(
        () => undefined,
        (cause: unknown) => {
          failing = true;
          request.log.error({ err: cause, endpoint, points }, 'usage of a served detection could not be recorded; calls wait for their count until one succeeds');
        },
      );
      inFlight.add(settled);
      void settled.finally(() => inFlight.delete(settled));
    },
    async drain() {
      while (inFlight.size > 0) await Promise.all(inFlight);
    },
  };
}
