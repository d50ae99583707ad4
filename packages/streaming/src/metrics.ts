// Pipeline metrics on the global meter of @opentelemetry/api. Until an app's instrumentation.ts
// registers a MeterProvider the instruments are no-ops. The metrics API has no proxy provider
// (unlike tracing), so instruments are created on first use and re-created when the global
// provider changes: importing this module before the SDK starts still records once it has.
import { metrics } from '@opentelemetry/api';
import type { Attributes, Counter, Gauge, Histogram, MeterProvider } from '@opentelemetry/api';

/** Instrumentation scope of every instrument this package creates. */
export const METER_NAME = '@adp/streaming';

/** Instrument names, for dashboards and tests (Prometheus shows dots as underscores, plus unit suffixes). */
export const STREAMING_METRIC_NAMES = {
  batchSize: 'adp.streaming.batch.size',
  points: 'adp.streaming.points',
  inferenceDuration: 'adp.streaming.inference.duration',
  lag: 'adp.streaming.lag',
  consumerLag: 'adp.streaming.consumer.lag',
} as const;

export interface StreamingMetrics {
  /** Messages in one consumed batch (histogram, `{message}`). */
  recordBatch(size: number, attributes?: Attributes): void;
  /** Telemetry points scored and stored (counter, `{point}`). */
  recordPoints(n: number, attributes?: Attributes): void;
  /** Time spent scoring one batch, milliseconds (histogram, `ms`). */
  recordInferenceMs(ms: number, attributes?: Attributes): void;
  /** End-to-end lag of a message: processing time minus broker append time, milliseconds (histogram, `ms`; clock skew between broker and worker can make it negative, recorded as 0). */
  recordLagMs(ms: number, attributes?: Attributes): void;
  /** Consumer lag of one partition in messages: high watermark minus committed offset (gauge, `{message}`). */
  setConsumerLag(topic: string, partition: number, lagMessages: number): void;
}

interface Instruments {
  readonly batchSize: Histogram;
  readonly points: Counter;
  readonly inferenceDuration: Histogram;
  readonly lag: Histogram;
  readonly consumerLag: Gauge;
}

function createInstruments(provider: MeterProvider): Instruments {
  const meter = provider.getMeter(METER_NAME);
  return {
    batchSize: meter.createHistogram(STREAMING_METRIC_NAMES.batchSize, {
      description: 'Messages per consumed batch',
      unit: '{message}',
      advice: { explicitBucketBoundaries: [1, 10, 50, 100, 250, 500, 1000, 2500, 5000, 10000] },
    }),
    points: meter.createCounter(STREAMING_METRIC_NAMES.points, {
      description: 'Telemetry points scored and stored',
      unit: '{point}',
    }),
    inferenceDuration: meter.createHistogram(STREAMING_METRIC_NAMES.inferenceDuration, {
      description: 'Time to score one batch',
      unit: 'ms',
      advice: { explicitBucketBoundaries: [1, 2, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000] },
    }),
    lag: meter.createHistogram(STREAMING_METRIC_NAMES.lag, {
      description: 'Processing time minus broker append time of a message',
      unit: 'ms',
      advice: { explicitBucketBoundaries: [5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000, 60000] },
    }),
    consumerLag: meter.createGauge(STREAMING_METRIC_NAMES.consumerLag, {
      description: 'High watermark minus committed offset of a partition',
      unit: '{message}',
    }),
  };
}

/**
 * Metrics bound to one MeterProvider; without one, to whatever provider is global at the time of
 * each call (see the module comment).
 */
export function createStreamingMetrics(provider?: MeterProvider): StreamingMetrics {
  let bound: { readonly provider: MeterProvider; readonly instruments: Instruments } | undefined;
  const instruments = (): Instruments => {
    const current = provider ?? metrics.getMeterProvider();
    if (bound === undefined || bound.provider !== current) {
      bound = { provider: current, instruments: createInstruments(current) };
    }
    return bound.instruments;
  };
  return {
    recordBatch: (size, attributes) => instruments().batchSize.record(size, attributes),
    recordPoints: (n, attributes) => instruments().points.add(n, attributes),
    recordInferenceMs: (ms, attributes) => instruments().inferenceDuration.record(ms, attributes),
    recordLagMs: (ms, attributes) => instruments().lag.record(Math.max(0, ms), attributes),
    setConsumerLag: (topic, partition, lagMessages) =>
      instruments().consumerLag.record(lagMessages, {
        'messaging.destination.name': topic,
        'messaging.destination.partition.id': String(partition),
      }),
  };
}

/** The streaming metrics on the global meter provider. */
export const streamingMetrics: StreamingMetrics = createStreamingMetrics();
