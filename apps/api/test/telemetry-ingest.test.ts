// POST /v1/telemetry: validation with exact wire shapes, Avro single-object messages keyed by
// organization and machine on the telemetry topic, usage metering, and a failing bus (503, never
// a 500 and never a silent loss).
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import {
  TOPICS,
  createInProcessBus,
  loadStreamingCodecs,
  type Bus,
  type BusProducer,
  type IncomingMessage,
  type OutgoingMessage,
} from '@adp/streaming';
import { API_KEY, OTHER_KEY, OTHER_ORG, eventually, get, post, streamingEnvironment, type StreamingEnvironment } from './streaming-helpers.js';

const codecs = loadStreamingCodecs();

describe('POST /v1/telemetry', () => {
  let env: StreamingEnvironment;
  let bus: Bus;
  let received: IncomingMessage[];
  let app: FastifyInstance;
  let orgId: string;

  beforeEach(async () => {
    env = await streamingEnvironment();
    bus = createInProcessBus();
    await bus.ensureTopics([{ name: TOPICS.telemetry, partitions: 4 }]);
    received = [];
    const consumer = await bus.consumer({ groupId: 'test', topics: [TOPICS.telemetry] });
    await consumer.run(async (batch) => {
      received.push(...batch.messages);
    });
    app = await env.start({ TELEMETRY_MAX_POINTS: '5' }, { bus });
    orgId = app.bootstrap.organizationId;
  });
  afterEach(async () => {
    await env.cleanup();
    await bus.close();
  });

  it('queues the points as one Avro TelemetryBatch keyed <org>/<machine_id> and answers 202', async () => {
    const response = await post(app, '/v1/telemetry', {
      machine_id: 'pump-1',
      // The organization comes from the key: a body field of that name is ignored.
      organization: 'org_someone_else',
      tags: { site: 'north' },
      points: [
        { timestamp: '2024-01-01T00:00:00Z', value: 10.5 },
        { timestamp: '2024-01-01T00:01:00.000Z', value: -3 },
        { timestamp: '2024-01-01T00:02:00.0000000Z', channels: { temperature: 71.5, pressure: 1.2 } },
      ],
    });
    expect(response.statusCode).toBe(202);
    expect(response.headers['content-type']).toMatch(/^application\/json/);
    expect(response.json()).toEqual({ accepted: 3, machine_id: 'pump-1' });

    await eventually(async () => received.length === 1);
    const [message] = received;
    expect(message!.key?.toString('utf8')).toBe(`${orgId}/pump-1`);
    // Single-object encoding with the batch schema's fingerprint.
    expect(message!.value.subarray(0, 10).toString('hex')).toBe(`c301${codecs.telemetryBatch.fingerprintHex}`);
    expect(codecs.telemetryBatch.decode(message!.value)).toEqual({
      organization: orgId,
      machine_id: 'pump-1',
      points: [
        { timestamp: Date.UTC(2024, 0, 1, 0, 0), value: 10.5, channels: null },
        { timestamp: Date.UTC(2024, 0, 1, 0, 1), value: -3, channels: null },
        {
          timestamp: Date.UTC(2024, 0, 1, 0, 2),
          value: null,
          channels: [
            { name: 'temperature', value: 71.5 },
            { name: 'pressure', value: 1.2 },
          ],
        },
      ],
      tags: { site: 'north' },
    });
  });

  it("meters the points under 'telemetry' and keeps organizations apart", async () => {
    await env.addOtherOrganization();
    const points = [1, 2, 3, 4].map((value, index) => ({ timestamp: new Date(Date.UTC(2024, 0, 1, 0, index)).toISOString(), value }));
    expect((await post(app, '/v1/telemetry', { machine_id: 'pump-1', points })).statusCode).toBe(202);
    expect((await post(app, '/v1/telemetry', { machine_id: 'pump-1', points: points.slice(0, 2) })).statusCode).toBe(202);
    expect((await post(app, '/v1/telemetry', { machine_id: 'pump-1', points: points.slice(0, 1) }, OTHER_KEY)).statusCode).toBe(202);

    const usage = (await get(app, '/v1/usage')).json() as { endpoint: string; total_points: number; call_count: number }[];
    expect(usage.find((entry) => entry.endpoint === 'telemetry')).toEqual({ endpoint: 'telemetry', total_points: 6, call_count: 2 });
    const other = (await get(app, '/v1/usage', OTHER_KEY)).json() as { endpoint: string; total_points: number }[];
    expect(other.find((entry) => entry.endpoint === 'telemetry')?.total_points).toBe(1);

    // One message per call.
    await eventually(async () => received.length === 3);
    expect(received.map((message) => codecs.telemetryBatch.decode(message.value).points.length).sort()).toEqual([1, 2, 4]);
    const keys = new Set(received.map((message) => message.key?.toString('utf8')));
    expect(keys).toEqual(new Set([`${orgId}/pump-1`, `${OTHER_ORG}/pump-1`]));
  });

  const ts = (minute: number) => new Date(Date.UTC(2024, 0, 1, 0, minute)).toISOString();
  const one = (point: unknown) => ({ machine_id: 'pump-1', points: [point] });

  it.each<[string, unknown, string, string]>([
    ['a body that is not an object', [1, 2], 'InvalidArgument', 'The request body must be a JSON object.'],
    ['no machine_id', { points: [{ timestamp: ts(0), value: 1 }] }, 'InvalidMachineId', "machine_id is required (1 to 128 characters from A-Z a-z 0-9 . _ - starting with a letter or digit; no ':', which separates a machine from its channels in '<machine_id>:<channel>')."],
    ['a bad machine_id', { machine_id: '-pump', points: [{ timestamp: ts(0), value: 1 }] }, 'InvalidMachineId', "machine_id must be 1 to 128 characters from A-Z a-z 0-9 . _ - starting with a letter or digit; no ':', which separates a machine from its channels in '<machine_id>:<channel>'."],
    [
      "a machine_id with ':'",
      { machine_id: 'coll:x', points: [{ timestamp: ts(0), value: 1 }] },
      'InvalidMachineId',
      "machine_id must be 1 to 128 characters from A-Z a-z 0-9 . _ - starting with a letter or digit; no ':', which separates a machine from its channels in '<machine_id>:<channel>'.",
    ],
    ['tags that are not an object', { machine_id: 'pump-1', tags: 'north', points: [{ timestamp: ts(0), value: 1 }] }, 'InvalidArgument', 'tags must be an object.'],
    ['a tag that is not a string', { machine_id: 'pump-1', tags: { site: 7 }, points: [{ timestamp: ts(0), value: 1 }] }, 'InvalidArgument', 'tags.site must be a string of at most 256 characters.'],
    ['no points', { machine_id: 'pump-1' }, 'InvalidPoints', 'points is required (an array of at least 1 item).'],
    ['empty points', { machine_id: 'pump-1', points: [] }, 'InvalidPoints', 'points must have at least 1 item; it has 0.'],
    ['more than TELEMETRY_MAX_POINTS', { machine_id: 'pump-1', points: [0, 1, 2, 3, 4, 5].map((m) => ({ timestamp: ts(m), value: m })) }, 'InvalidPoints', 'points must have 1 to 5 items; it has 6.'],
    ['a point that is not an object', one(5), 'InvalidPoints', 'points[0] must be an object.'],
    ['no timestamp', one({ value: 1 }), 'InvalidPoints', 'points[0].timestamp is required (an ISO 8601 date-time such as 2024-01-01T00:00:00Z).'],
    ['an unparsable timestamp', one({ timestamp: '2024-13-01T00:00:00Z', value: 1 }), 'InvalidPoints', 'points[0].timestamp must be an ISO 8601 date-time such as 2024-01-01T00:00:00Z.'],
    ['a timestamp before 1970', one({ timestamp: '1969-12-31T23:59:59Z', value: 1 }), 'InvalidPoints', 'points[0].timestamp must be 1970-01-01T00:00:00Z or later.'],
    [
      'a channel whose series id would be too long',
      { machine_id: 'm'.repeat(120), points: [{ timestamp: ts(0), channels: { temperature: 1 } }] },
      'InvalidPoints',
      "points[0].channels.temperature: '<machine_id>:<channel>' must be at most 128 characters (each channel is judged as that series).",
    ],
    ['a numeric timestamp', one({ timestamp: 1704067200000, value: 1 }), 'InvalidPoints', 'points[0].timestamp must be an ISO 8601 date-time such as 2024-01-01T00:00:00Z.'],
    ['neither value nor channels', one({ timestamp: ts(0) }), 'InvalidPoints', 'points[0].value is required (a number from -1e+100 to 1e+100).'],
    ['both value and channels', one({ timestamp: ts(0), value: 1, channels: { a: 1 } }), 'InvalidPoints', "points[0] must have exactly one of 'value' (a number) and 'channels' (an object)."],
    ['a string value', one({ timestamp: ts(0), value: '1' }), 'InvalidPoints', 'points[0].value must be a number from -1e+100 to 1e+100.'],
    ['a huge value', one({ timestamp: ts(0), value: 1e101 }), 'InvalidPoints', 'points[0].value must be a number from -1e+100 to 1e+100.'],
    ['empty channels', one({ timestamp: ts(0), channels: {} }), 'InvalidPoints', 'points[0].channels must have 1 to 64 entries; it has 0.'],
    ['channels that are an array', one({ timestamp: ts(0), channels: [1, 2] }), 'InvalidPoints', 'points[0].channels must be an object.'],
    ['an integer-like channel name', one({ timestamp: ts(0), channels: { '7': 1 } }), 'InvalidPoints', "points[0].channels has the key '7', which is not 1 to 64 characters from A-Z a-z 0-9 _ . : - starting with a letter or underscore."],
    ['a channel reading that is not a number', one({ timestamp: ts(0), channels: { temperature: null } }), 'InvalidPoints', 'points[0].channels.temperature must be a number from -1e+100 to 1e+100.'],
    [
      'timestamps out of order',
      { machine_id: 'pump-1', points: [{ timestamp: ts(1), value: 1 }, { timestamp: ts(0), value: 2 }] },
      'InvalidPoints',
      'points[1].timestamp must be later than the point before it (ascending, no duplicates).',
    ],
    [
      'a duplicated timestamp',
      { machine_id: 'pump-1', points: [{ timestamp: ts(1), value: 1 }, { timestamp: '2024-01-01T00:01:00.000Z', value: 2 }] },
      'InvalidPoints',
      'points[1].timestamp must be later than the point before it (ascending, no duplicates).',
    ],
  ])('answers %s with a 400, queues nothing and meters nothing', async (_name, body, code, message) => {
    const response = await post(app, '/v1/telemetry', body);
    expect(response.statusCode).toBe(400);
    expect(response.headers['content-type']).toMatch(/^application\/json/);
    expect(response.json()).toEqual({ error: { code, message } });
    const usage = (await get(app, '/v1/usage/summary')).json() as { call_count: number };
    expect(usage.call_count).toBe(0);
    expect(received).toHaveLength(0);
  });

  it('answers malformed JSON with the platform 400 and a missing key with the gateway 401', async () => {
    const bad = await post(app, '/v1/telemetry', '{"machine_id":');
    expect(bad.statusCode).toBe(400);
    expect(bad.json()).toMatchObject({ error: { code: 'BadRequest' } });
    const anonymous = await app.inject({ method: 'POST', url: '/v1/telemetry', payload: { machine_id: 'pump-1', points: [] } });
    expect(anonymous.statusCode).toBe(401);
    expect(anonymous.json()).toMatchObject({ error: { code: '401' } });
  });
});

describe('POST /v1/telemetry when the bus fails', () => {
  let env: StreamingEnvironment;
  beforeEach(async () => {
    env = await streamingEnvironment();
  });
  afterEach(async () => {
    await env.cleanup();
  });

  const body = { machine_id: 'pump-1', points: [{ timestamp: '2024-01-01T00:00:00Z', value: 1 }] };
  const QUEUE_FAILED = {
    error: {
      code: 'ServiceUnavailable',
      message: 'The telemetry could not be queued; retry the request (points are stored once per timestamp, so a retry is safe).',
    },
  };

  it('answers 503 with Retry-After when a send is refused, and meters nothing', async () => {
    const producer: BusProducer = { send: () => Promise.reject(new Error('broker down')), close: () => Promise.resolve() };
    const app = await env.start({}, { bus: { producer: () => Promise.resolve(producer) } });
    const response = await post(app, '/v1/telemetry', body);
    expect(response.statusCode).toBe(503);
    expect(response.headers['retry-after']).toBe('1');
    expect(response.headers['content-type']).toMatch(/^application\/json/);
    expect(response.json()).toEqual(QUEUE_FAILED);
    expect(((await get(app, '/v1/usage/summary')).json() as { call_count: number }).call_count).toBe(0);
  });

  it('answers 503 when no producer can be opened, and opens one on the next call', async () => {
    const sent: OutgoingMessage[][] = [];
    let opens = 0;
    const bus = {
      producer: (): Promise<BusProducer> => {
        opens += 1;
        if (opens === 1) return Promise.reject(new Error('no brokers'));
        return Promise.resolve({
          send: (_topic: string, messages: readonly OutgoingMessage[]) => {
            sent.push([...messages]);
            return Promise.resolve();
          },
          close: () => Promise.resolve(),
        });
      },
    };
    const app = await env.start({}, { bus });
    const first = await post(app, '/v1/telemetry', body);
    expect(first.statusCode).toBe(503);
    expect(first.json()).toEqual(QUEUE_FAILED);
    const second = await post(app, '/v1/telemetry', body);
    expect(second.statusCode).toBe(202);
    expect(sent).toHaveLength(1);
    expect(opens).toBe(2);
  });

  it('answers 503 when the server has no bus', async () => {
    const app = await env.start();
    const response = await post(app, '/v1/telemetry', body);
    expect(response.statusCode).toBe(503);
    expect(response.json()).toEqual({
      error: { code: 'ServiceUnavailable', message: 'Telemetry ingestion is not configured on this server.' },
    });
  });

  it('still validates before it needs a bus', async () => {
    const app = await env.start();
    const response = await post(app, '/v1/telemetry', { machine_id: 'pump 1', points: [] }, API_KEY);
    expect(response.statusCode).toBe(400);
    expect(response.json()).toMatchObject({ error: { code: 'InvalidMachineId' } });
  });
});
