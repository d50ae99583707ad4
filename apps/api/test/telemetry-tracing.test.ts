// The span chain of one POST /v1/telemetry through the embedded platform (the same app, bus and
// worker code as scale-out): the API's SERVER span, its PRODUCER span whose W3C context rides in
// the message headers, the worker's CONSUMER span started from those headers, and the insert span
// under it, all one trace. The SDK is set up as @adp/observability does it (tracer provider, async
// context, W3C propagator), with an in-memory exporter.
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { SpanKind, SpanStatusCode } from '@opentelemetry/api';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { installInMemoryTracing, type InMemoryTracing } from '@adp/streaming/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadWorkerConfig } from '@adp/stream-worker';
import { loadConfig } from '../src/config.js';
import { openPlatform, type Platform } from '../src/platform.js';
import { API_KEY, constantEnergyModel, eventually, get, post } from './streaming-helpers.js';

function one(spans: readonly ReadableSpan[], name: string): ReadableSpan {
  const found = spans.filter((span) => span.name === name);
  expect(found, name).toHaveLength(1);
  return found[0] as ReadableSpan;
}

describe('tracing of POST /v1/telemetry', () => {
  let tracing: InMemoryTracing;
  let exporter: InMemoryTracing['exporter'];
  let dataDir: string;
  let platform: Platform;

  beforeAll(async () => {
    tracing = installInMemoryTracing();
    exporter = tracing.exporter;
    dataDir = await mkdtemp(path.join(os.tmpdir(), 'adp-tracing-'));
    const config = loadConfig({ DATA_DIR: dataDir, BOOTSTRAP_API_KEY: API_KEY, LOG_LEVEL: 'silent' });
    platform = await openPlatform(config, { model: constantEnergyModel(1), worker: loadWorkerConfig({}) });
  });
  afterAll(async () => {
    await platform.close();
    await rm(dataDir, { recursive: true, force: true });
    await tracing.uninstall();
  });

  it('links HTTP -> publish -> consume -> insert in one trace', async () => {
    const points = Array.from({ length: 20 }, (_, index) => ({
      timestamp: new Date(Date.UTC(2025, 5, 1, 0, index)).toISOString(),
      value: 50 + (index % 3),
    }));
    const response = await post(platform.app, '/v1/telemetry', { machine_id: 'pump-1', points });
    expect(response.statusCode).toBe(202);
    await eventually(async () => {
      const results = await get(platform.app, '/v1/machines/pump-1/results');
      return results.statusCode === 200 && (results.json() as { results: unknown[] }).results.length === 20;
    }, 20_000);
    await eventually(async () => exporter.getFinishedSpans().some((span) => span.name === 'telemetry.consume'));

    const spans = exporter.getFinishedSpans();
    const http = one(spans, 'POST /v1/telemetry');
    const publish = one(spans, 'adp.telemetry.v1 publish');
    const consume = one(spans, 'telemetry.consume');
    const insert = one(spans, 'results.insert');

    const traceId = http.spanContext().traceId;
    for (const span of [publish, consume, insert]) expect(span.spanContext().traceId).toBe(traceId);
    expect(http.parentSpanContext).toBeUndefined();
    expect(publish.parentSpanContext?.spanId).toBe(http.spanContext().spanId);
    expect(consume.parentSpanContext?.spanId).toBe(publish.spanContext().spanId);
    expect(consume.parentSpanContext?.isRemote).toBe(true);
    expect(insert.parentSpanContext?.spanId).toBe(consume.spanContext().spanId);
    expect([http.kind, publish.kind, consume.kind, insert.kind]).toEqual([SpanKind.SERVER, SpanKind.PRODUCER, SpanKind.CONSUMER, SpanKind.CLIENT]);
    expect(http.attributes).toMatchObject({ 'http.request.method': 'POST', 'http.route': '/v1/telemetry', 'adp.points': 20 });
    expect(publish.attributes).toMatchObject({ 'messaging.destination.name': 'adp.telemetry.v1', 'messaging.batch.message_count': 1, 'adp.points': 20 });
    for (const span of [http, publish, consume, insert]) expect(span.status.code).toBe(SpanStatusCode.UNSET);
  });

  it('records a refused publish on both spans, and the answer is a retriable 503', async () => {
    exporter.reset();
    await platform.streaming.bus.close();
    const response = await post(platform.app, '/v1/telemetry', {
      machine_id: 'pump-2',
      points: [{ timestamp: '2025-06-01T00:00:00Z', value: 1 }],
    });
    expect(response.statusCode).toBe(503);
    const spans = exporter.getFinishedSpans();
    expect(one(spans, 'adp.telemetry.v1 publish').status.code).toBe(SpanStatusCode.ERROR);
    expect(one(spans, 'POST /v1/telemetry').status.code).toBe(SpanStatusCode.ERROR);
  });
});
