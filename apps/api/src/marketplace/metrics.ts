// The marketplace metering metric on the global meter of @opentelemetry/api (a no-op until
// instrumentation.ts registers a MeterProvider; re-bound when the global provider changes, like
// @adp/streaming's metrics).
import { metrics } from '@opentelemetry/api';
import type { Counter, MeterProvider } from '@opentelemetry/api';

export const METER_NAME = '@adp/api';

export const MARKETPLACE_METRIC_NAMES = {
  unreportedHours: 'adp.marketplace.metering.unreported_hours',
} as const;

/** Why an hour was not (or not yet) reported: it left the acceptance window, or keeps failing. */
export type UnreportedReason = 'outside_window' | 'failing';

export interface MarketplaceMetrics {
  /** One hour the marketplace has not taken (counter, `{hour}`, attribute `reason`). */
  recordUnreportedHour(reason: UnreportedReason): void;
}

export function createMarketplaceMetrics(provider?: MeterProvider): MarketplaceMetrics {
  let bound: { readonly provider: MeterProvider; readonly counter: Counter } | undefined;
  const counter = (): Counter => {
    const current = provider ?? metrics.getMeterProvider();
    if (bound === undefined || bound.provider !== current) {
      const created = current.getMeter(METER_NAME).createCounter(MARKETPLACE_METRIC_NAMES.unreportedHours, {
        description: 'UTC hours of marketplace metering not accepted: outside the acceptance window, or failing repeatedly',
        unit: '{hour}',
      });
      bound = { provider: current, counter: created };
    }
    return bound.counter;
  };
  return { recordUnreportedHour: (reason) => counter().add(1, { reason }) };
}
