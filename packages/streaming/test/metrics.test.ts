// The streaming instruments record through @opentelemetry/api into whichever MeterProvider is
// global, including one registered after the module was imported (as instrumentation.ts does
// before the app, and as these tests do after it).
import { metrics } from '@opentelemetry/api';
import { DataPointType, MeterProvider, MetricReader } from '@opentelemetry/sdk-metrics';
import type { MetricData } from '@opentelemetry/sdk-metrics';
import { afterEach, describe, expect, it } from 'vitest';
import { STREAMING_METRIC_NAMES, streamingMetrics } from '../src/index.js';
import { createStreamingMetrics } from '../src/metrics.js';

/** A pull reader: `collect()` on demand, nothing exported in the background. */
class InMemoryReader extends MetricReader {
  protected override async onForceFlush(): Promise<void> {}
  protected override async onShutdown(): Promise<void> {}

  async metricsByName(): Promise<Map<string, MetricData>> {
    const { resourceMetrics, errors } = await this.collect();
    expect(errors).toEqual([]);
    const byName = new Map<string, MetricData>();
    for (const scope of resourceMetrics.scopeMetrics) {
      for (const metric of scope.metrics) byName.set(metric.descriptor.name, metric);
    }
    return byName;
  }
}

function providerWithReader(): { provider: MeterProvider; reader: InMemoryReader } {
  const reader = new InMemoryReader();
  return { provider: new MeterProvider({ readers: [reader] }), reader };
}

describe('streamingMetrics', () => {
  afterEach(() => metrics.disable());

  it('is a no-op without a meter provider', () => {
    expect(() => {
      streamingMetrics.recordBatch(3);
      streamingMetrics.recordPoints(3);
      streamingMetrics.recordInferenceMs(1.5);
      streamingMetrics.recordLagMs(20);
      streamingMetrics.setConsumerLag('adp.telemetry.v1', 0, 7);
    }).not.toThrow();
  });

  it('records every instrument on the global provider registered after import', async () => {
    const { provider, reader } = providerWithReader();
    metrics.setGlobalMeterProvider(provider);

    streamingMetrics.recordBatch(100, { 'messaging.destination.name': 'adp.telemetry.v1' });
    streamingMetrics.recordBatch(20, { 'messaging.destination.name': 'adp.telemetry.v1' });
    streamingMetrics.recordPoints(100);
    streamingMetrics.recordPoints(20);
    streamingMetrics.recordInferenceMs(12.5);
    streamingMetrics.recordLagMs(250);
    streamingMetrics.recordLagMs(-40);
    streamingMetrics.setConsumerLag('adp.telemetry.v1', 3, 10);
    streamingMetrics.setConsumerLag('adp.telemetry.v1', 3, 4);
    streamingMetrics.setConsumerLag('adp.telemetry.v1', 5, 0);

    const byName = await reader.metricsByName();

    const batch = byName.get(STREAMING_METRIC_NAMES.batchSize);
    expect(batch?.dataPointType).toBe(DataPointType.HISTOGRAM);
    expect(batch?.descriptor.unit).toBe('{message}');
    expect(batch?.dataPoints[0]?.attributes).toEqual({ 'messaging.destination.name': 'adp.telemetry.v1' });
    expect(batch?.dataPoints[0]?.value).toMatchObject({ count: 2, sum: 120, min: 20, max: 100 });

    const points = byName.get(STREAMING_METRIC_NAMES.points);
    expect(points?.dataPointType).toBe(DataPointType.SUM);
    expect(points?.dataPoints[0]?.value).toBe(120);

    const inference = byName.get(STREAMING_METRIC_NAMES.inferenceDuration);
    expect(inference?.descriptor.unit).toBe('ms');
    expect(inference?.dataPoints[0]?.value).toMatchObject({ count: 1, sum: 12.5 });

    // Negative lag (clock skew) is recorded as 0.
    const lag = byName.get(STREAMING_METRIC_NAMES.lag);
    expect(lag?.dataPoints[0]?.value).toMatchObject({ count: 2, sum: 250, min: 0, max: 250 });

    const consumerLag = byName.get(STREAMING_METRIC_NAMES.consumerLag);
    expect(consumerLag?.dataPointType).toBe(DataPointType.GAUGE);
    const byPartition = Object.fromEntries(
      (consumerLag?.dataPoints ?? []).map((point) => [point.attributes['messaging.destination.partition.id'], point.value]),
    );
    expect(byPartition).toEqual({ '3': 4, '5': 0 });

    await provider.shutdown();
  });

  it('binds to an explicit provider without touching the global one', async () => {
    const { provider, reader } = providerWithReader();
    const local = createStreamingMetrics(provider);
    local.recordPoints(5);
    streamingMetrics.recordPoints(1_000);

    const byName = await reader.metricsByName();
    expect(byName.get(STREAMING_METRIC_NAMES.points)?.dataPoints[0]?.value).toBe(5);
    await provider.shutdown();
  });
});
