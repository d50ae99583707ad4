// Trace context through the real broker (infra/kafka.sh): an HTTP-like span produces through the
// Kafka bus with traceHeaders() in the message headers; a consumer of the bus, started outside any
// span, opens its CONSUMER span from the received headers, and an insert span under it. All one
// trace with the right parents proves the W3C headers survive kafkajs both ways.
import { context, ROOT_CONTEXT, SpanKind } from '@opentelemetry/api';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { installInMemoryTracing, type InMemoryTracing } from '@adp/streaming/testing';
import { Kafka, logLevel } from 'kafkajs';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createKafkaBus, inSpan, traceHeaders } from '@adp/streaming';
import type { IncomingMessage } from '@adp/streaming';
import { gateTitle, isolatedName, serverGate } from './servers.js';

const gate = await serverGate('kafka');

function only(spans: readonly ReadableSpan[], name: string): ReadableSpan {
  const found = spans.filter((span) => span.name === name);
  expect(found, name).toHaveLength(1);
  return found[0] as ReadableSpan;
}

describe.skipIf(!gate.run)(gateTitle('trace context through Kafka', gate), () => {
  let tracing: InMemoryTracing;
  let exporter: InMemoryTracing['exporter'];
  const cleanups: Array<() => Promise<unknown>> = [];

  beforeAll(() => {
    tracing = installInMemoryTracing();
    exporter = tracing.exporter;
  });
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => undefined);
  });
  afterAll(async () => {
    await tracing.uninstall();
  });

  it('links HTTP -> produce -> consume -> insert across the broker', async () => {
    const brokers = gate.address.value.split(',').map((broker) => broker.trim());
    const topic = isolatedName('it_tracing');
    const groupId = isolatedName('it_tracing_group');

    // The bus cannot delete topics; kafkajs' admin cleans up after the test.
    const admin = new Kafka({ clientId: 'adp-tracing-it', brokers, logLevel: logLevel.ERROR }).admin();
    await admin.connect();
    cleanups.push(() => admin.disconnect());
    cleanups.push(() => admin.deleteTopics({ topics: [topic] }));
    cleanups.push(() => admin.deleteGroups([groupId]));

    const bus = createKafkaBus({ brokers, clientId: 'adp-tracing-it' });
    cleanups.push(() => bus.close());
    await bus.ensureTopics([{ name: topic, partitions: 1 }]);

    let received: (message: IncomingMessage) => void = () => {};
    const consumed = new Promise<IncomingMessage>((resolve) => (received = resolve));
    const consumer = await bus.consumer({ groupId, topics: [topic] });
    cleanups.push(() => consumer.close());
    await context.with(ROOT_CONTEXT, () =>
      consumer.run(async (batch) => {
        for (const message of batch.messages) {
          await inSpan(
            `${topic} process`,
            { 'messaging.kafka.offset': message.offset },
            () => inSpan('results insert', { 'db.system.name': 'clickhouse' }, async () => {}),
            message.headers,
            SpanKind.CONSUMER,
          );
          received(message);
        }
      }),
    );

    const producer = await bus.producer();
    cleanups.push(() => producer.close());
    await inSpan('POST /v1/telemetry', {}, () =>
      inSpan(
        `${topic} publish`,
        {},
        () => producer.send(topic, [{ key: 'org/m-1', value: Buffer.from('point'), headers: traceHeaders() }]),
        undefined,
        SpanKind.PRODUCER,
      ),
    );

    const message = await consumed;
    expect(message.headers['traceparent']).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/);

    const spans = exporter.getFinishedSpans();
    const http = only(spans, 'POST /v1/telemetry');
    const produce = only(spans, `${topic} publish`);
    const consume = only(spans, `${topic} process`);
    const insert = only(spans, 'results insert');
    const traceId = http.spanContext().traceId;
    for (const span of [produce, consume, insert]) expect(span.spanContext().traceId).toBe(traceId);
    expect(produce.parentSpanContext?.spanId).toBe(http.spanContext().spanId);
    expect(consume.parentSpanContext?.spanId).toBe(produce.spanContext().spanId);
    expect(consume.parentSpanContext?.isRemote).toBe(true);
    expect(insert.parentSpanContext?.spanId).toBe(consume.spanContext().spanId);
  });
});
