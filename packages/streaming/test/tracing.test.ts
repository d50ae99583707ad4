// Trace context across the bus: an HTTP span, the produce span whose W3C headers ride in the
// message, the consume span started from those headers in "another process" (the root context),
// and the insert span under it must form one trace with the right parents. The SDK is set up the
// way apps/*/src/instrumentation.ts does it (tracer provider, async context, W3C propagator), but
// with an in-memory exporter.
import { context, ROOT_CONTEXT, SpanKind, SpanStatusCode } from '@opentelemetry/api';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { installInMemoryTracing, type InMemoryTracing } from '../src/testing.js';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createInProcessBus, inSpan, traceHeaders } from '../src/index.js';
import type { IncomingMessage, OutgoingMessage } from '../src/index.js';

function byName(spans: readonly ReadableSpan[], name: string): ReadableSpan {
  const found = spans.filter((span) => span.name === name);
  expect(found, name).toHaveLength(1);
  return found[0] as ReadableSpan;
}

describe('without an SDK', () => {
  it('runs the function and injects nothing', async () => {
    await expect(inSpan('noop', { a: 1 }, async () => 42)).resolves.toBe(42);
    expect(traceHeaders()).toEqual({});
    await expect(inSpan('noop', {}, async () => traceHeaders(), { traceparent: 'garbage' })).resolves.toEqual({});
  });
});

describe('with the SDK', () => {
  let tracing: InMemoryTracing;
  let exporter: InMemoryTracing['exporter'];

  beforeAll(() => {
    tracing = installInMemoryTracing();
    exporter = tracing.exporter;
  });
  afterEach(() => exporter.reset());
  afterAll(async () => {
    await tracing.uninstall();
  });

  it('links HTTP -> produce -> consume -> insert in one trace', async () => {
    const topic: OutgoingMessage[] = [];

    await inSpan(
      'POST /v1/machines/:machineId/telemetry',
      { 'http.request.method': 'POST' },
      async () => {
        await inSpan(
          'adp.telemetry.v1 publish',
          { 'messaging.system': 'kafka', 'messaging.destination.name': 'adp.telemetry.v1' },
          async () => {
            topic.push({ key: 'org/m-1', value: Buffer.from('payload'), headers: traceHeaders() });
          },
          undefined,
          SpanKind.PRODUCER,
        );
      },
      undefined,
      SpanKind.SERVER,
    );

    // The worker sees only the message: nothing of the API's context is active there.
    const [message] = topic;
    expect(message?.headers?.['traceparent']).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/);
    await context.with(ROOT_CONTEXT, () =>
      inSpan(
        'adp.telemetry.v1 process',
        { 'messaging.system': 'kafka', 'messaging.kafka.offset': 0 },
        () => inSpan('results insert', { 'db.system.name': 'clickhouse', 'db.operation.batch.size': 1 }, async () => {}),
        message?.headers,
        SpanKind.CONSUMER,
      ),
    );

    const spans = exporter.getFinishedSpans();
    expect(spans).toHaveLength(4);
    const http = byName(spans, 'POST /v1/machines/:machineId/telemetry');
    const produce = byName(spans, 'adp.telemetry.v1 publish');
    const consume = byName(spans, 'adp.telemetry.v1 process');
    const insert = byName(spans, 'results insert');

    const traceId = http.spanContext().traceId;
    for (const span of spans) expect(span.spanContext().traceId).toBe(traceId);
    expect(http.parentSpanContext).toBeUndefined();
    expect(produce.parentSpanContext?.spanId).toBe(http.spanContext().spanId);
    expect(consume.parentSpanContext?.spanId).toBe(produce.spanContext().spanId);
    expect(consume.parentSpanContext?.isRemote).toBe(true);
    expect(insert.parentSpanContext?.spanId).toBe(consume.spanContext().spanId);

    expect(message?.headers?.['traceparent']).toBe(`00-${traceId}-${produce.spanContext().spanId}-01`);
    expect([http.kind, produce.kind, consume.kind, insert.kind]).toEqual([
      SpanKind.SERVER,
      SpanKind.PRODUCER,
      SpanKind.CONSUMER,
      SpanKind.INTERNAL,
    ]);
    expect(insert.attributes).toEqual({ 'db.system.name': 'clickhouse', 'db.operation.batch.size': 1 });
    for (const span of spans) expect(span.status.code).toBe(SpanStatusCode.UNSET);
  });

  it('carries the trace through the in-process bus to the consumer in its own context', async () => {
    const bus = createInProcessBus();
    const topic = 'tracing-test.telemetry';
    await bus.ensureTopics([{ name: topic, partitions: 2 }]);
    const consumer = await bus.consumer({ groupId: 'tracing-test', topics: [topic] });
    const processed: IncomingMessage[] = [];
    let done: () => void = () => {};
    const allProcessed = new Promise<void>((resolve) => (done = resolve));

    // Like the worker: the consumer starts outside any request, one CONSUMER span per message.
    await context.with(ROOT_CONTEXT, () =>
      consumer.run(async (batch) => {
        for (const message of batch.messages) {
          await inSpan(
            `${batch.topic} process`,
            { 'messaging.destination.partition.id': String(batch.partition), 'messaging.kafka.offset': message.offset },
            () => inSpan('results insert', { 'db.operation.batch.size': 1 }, async () => {}),
            message.headers,
            SpanKind.CONSUMER,
          );
          processed.push(message);
        }
        if (processed.length === 2) done();
      }),
    );

    const producer = await bus.producer();
    for (const machineId of ['m-1', 'm-2']) {
      const message = (): OutgoingMessage => ({ key: `org/${machineId}`, value: Buffer.from(machineId), headers: traceHeaders() });
      await inSpan(`POST /v1/telemetry ${machineId}`, {}, () =>
        inSpan(`${topic} publish`, {}, () => producer.send(topic, [message()]), undefined, SpanKind.PRODUCER),
      );
    }
    await allProcessed;
    await consumer.close();
    await producer.close();
    await bus.close();

    const spans = exporter.getFinishedSpans();
    expect(spans).toHaveLength(8);
    const publishes = spans.filter((span) => span.name === `${topic} publish`);
    const consumes = spans.filter((span) => span.name === `${topic} process`);
    const inserts = spans.filter((span) => span.name === 'results insert');
    expect([publishes.length, consumes.length, inserts.length]).toEqual([2, 2, 2]);
    for (const machineId of ['m-1', 'm-2']) {
      const http = byName(spans, `POST /v1/telemetry ${machineId}`);
      const traceId = http.spanContext().traceId;
      const inTrace = spans.filter((span) => span.spanContext().traceId === traceId);
      expect(inTrace).toHaveLength(4);
      const publish = inTrace.find((span) => span.name === `${topic} publish`);
      const consume = inTrace.find((span) => span.name === `${topic} process`);
      const insert = inTrace.find((span) => span.name === 'results insert');
      expect(publish?.parentSpanContext?.spanId).toBe(http.spanContext().spanId);
      expect(consume?.parentSpanContext?.spanId).toBe(publish?.spanContext().spanId);
      expect(consume?.kind).toBe(SpanKind.CONSUMER);
      expect(insert?.parentSpanContext?.spanId).toBe(consume?.spanContext().spanId);
    }
  });

  it('keeps concurrent traces apart across awaits', async () => {
    const headersOf = async (name: string): Promise<Record<string, string>> =>
      inSpan(name, {}, async () => {
        await new Promise((resolve) => setTimeout(resolve, 5));
        return traceHeaders();
      });
    const [a, b] = await Promise.all([headersOf('a'), headersOf('b')]);
    const spans = exporter.getFinishedSpans();
    expect(a['traceparent']).toBe(`00-${byName(spans, 'a').spanContext().traceId}-${byName(spans, 'a').spanContext().spanId}-01`);
    expect(b['traceparent']).toBe(`00-${byName(spans, 'b').spanContext().traceId}-${byName(spans, 'b').spanContext().spanId}-01`);
    expect(a['traceparent']).not.toBe(b['traceparent']);
  });

  it('falls back to the active span when the headers carry no trace context', async () => {
    await inSpan('batch', {}, () => inSpan('message', {}, async () => {}, { 'content-type': 'avro/binary' }));
    const spans = exporter.getFinishedSpans();
    expect(byName(spans, 'message').parentSpanContext?.spanId).toBe(byName(spans, 'batch').spanContext().spanId);
  });

  it('records a failure on the span, rethrows it and ends the span', async () => {
    class InsertFailed extends Error {}
    const failure = new InsertFailed('clickhouse unavailable');
    await expect(inSpan('results insert', {}, async () => Promise.reject(failure))).rejects.toBe(failure);
    await expect(inSpan('odd', {}, async () => Promise.reject('a string'))).rejects.toBe('a string');

    const spans = exporter.getFinishedSpans();
    const insert = byName(spans, 'results insert');
    expect(insert.ended).toBe(true);
    expect(insert.status).toEqual({ code: SpanStatusCode.ERROR, message: 'clickhouse unavailable' });
    expect(insert.events.map((event) => event.name)).toEqual(['exception']);
    expect(insert.events[0]?.attributes?.['exception.message']).toBe('clickhouse unavailable');
    expect(byName(spans, 'odd').status).toEqual({ code: SpanStatusCode.ERROR, message: 'a string' });
  });
});
