// POST /v1/jobs and the routes under it, with no job worker running (so a job stays queued until
// the test says otherwise): the coded 400s naming the series and point, before anything is
// accepted; the chunks on the jobs topic (Avro JobChunk, keyed per series); the per-organization
// caps (429 with Retry-After); cancelling; a failing bus (503 and no job left behind); paging.
import { request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { TOPICS, createInProcessBus, loadStreamingCodecs, type Bus, type IncomingMessage } from '@adp/streaming';
import { createMemoryJobStore, type JobStore } from '@adp/store';
import { detectEntireSeries, shapeReferenceOf } from '@adp/detection';
import { encodeMachineModel, fitMachineModel } from '@adp/machine';
import { startJobWorker } from '@adp/stream-worker';
import { jobPoints, pumpChannels, seriesValues, storedBaseline, submit, waitForStatus } from './job-flow.js';
import { API_KEY, eventually, get, post, streamingEnvironment, type StreamingEnvironment } from './streaming-helpers.js';

const codecs = loadStreamingCodecs();
// ajv-formats is CommonJS; under NodeNext its default import is the module object.
const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => Ajv2020;
const silent = { debug: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined };

function minutely(count: number, seed = 0): { timestamp: string; value: number }[] {
  return jobPoints(seriesValues(count, seed));
}

/** Minutely points carrying `channels` (the readings of pumpChannels). */
function multichannel(count: number, names: readonly ('flow' | 'pressure' | 'temp')[] = ['flow', 'pressure', 'temp']): { timestamp: string; channels: Record<string, number> }[] {
  const readings = pumpChannels(count, 0);
  return minutely(count).map((point, i) => ({ timestamp: point.timestamp, channels: Object.fromEntries(names.map((name) => [name, readings[name][i]!])) }));
}

describe('detection jobs: requests', () => {
  let env: StreamingEnvironment;
  let bus: Bus;
  let jobs: JobStore;
  let received: IncomingMessage[];
  let app: FastifyInstance;

  async function start(extraEnv: Record<string, string> = {}, options: { bus?: Bus; jobs?: JobStore } = {}): Promise<FastifyInstance> {
    return env.start({ JOBS_CHUNK_POINTS: '100', ...extraEnv }, { bus: options.bus ?? bus, jobs: options.jobs ?? jobs });
  }

  beforeEach(async () => {
    env = await streamingEnvironment();
    bus = createInProcessBus();
    // One partition: the tests below read the chunks in the order they were sent.
    await bus.ensureTopics([{ name: TOPICS.jobs, partitions: 1 }]);
    received = [];
    const consumer = await bus.consumer({ groupId: 'observer', topics: [TOPICS.jobs] });
    await consumer.run(async (batch) => {
      received.push(...batch.messages);
    });
    jobs = createMemoryJobStore();
    app = await start();
  });
  afterEach(async () => {
    await env.cleanup();
    await bus.close();
    await jobs.close();
  });

  it('publishes each series as ordered Avro JobChunk messages keyed <org>/<job>/<series> and answers 202', async () => {
    const response = await submit(app, {
      granularity: 'minutely',
      series_list: [
        { machine_id: 'pump-1', series: minutely(250) },
        { machine_id: 'pump-2', series: minutely(40, 3) },
      ],
    });
    expect(response.statusCode).toBe(202);
    const job = response.json<{ job_id: string; status: string; points_total: number; series_count: number }>();
    expect(job).toMatchObject({ status: 'queued', points_total: 290, series_count: 2 });
    expect(job.job_id).toMatch(/^job_[0-9a-f]{32}$/);

    await eventually(async () => received.length === 4);
    const orgId = app.bootstrap.organizationId;
    // In order within a series (series are published side by side, so they may interleave).
    const decoded = received
      .map((message) => ({ key: message.key?.toString('utf8'), chunk: codecs.jobChunk.decode(message.value) }))
      .sort((a, b) => a.chunk.series_index - b.chunk.series_index);
    expect(decoded.map(({ key, chunk }) => [key, chunk.series_index, chunk.chunk_index, chunk.chunk_count, chunk.first_point, chunk.values.length])).toEqual([
      [`${orgId}/${job.job_id}/0`, 0, 0, 3, 0, 100],
      [`${orgId}/${job.job_id}/0`, 0, 1, 3, 100, 100],
      [`${orgId}/${job.job_id}/0`, 0, 2, 3, 200, 50],
      [`${orgId}/${job.job_id}/1`, 1, 0, 1, 0, 40],
    ]);
    expect(decoded[1]!.chunk).toMatchObject({ organization: orgId, job_id: job.job_id });
    expect(decoded[1]!.chunk.timestamps?.[0]).toBe(Date.parse(minutely(250)[100]!.timestamp));
  });

  it('reads a JSON body arriving over a socket in pieces as it uploads: the same chunks as in one piece; too large a body is a 413', async () => {
    const limited = await start({ JOBS_BODY_LIMIT_BYTES: '200000' });
    await limited.listen({ host: '127.0.0.1', port: 0 });
    const port = (limited.server.address() as AddressInfo).port;
    /** POSTs `text` written in pieces of `piece` bytes, each after the one before has gone. */
    const upload = (text: string, piece: number) =>
      new Promise<{ status: number; body: string }>((resolve, reject) => {
        const bytes = Buffer.from(text);
        const req = httpRequest(
          { host: '127.0.0.1', port, method: 'POST', path: '/v1/jobs', headers: { 'x-service-key': API_KEY, 'content-type': 'application/json', 'content-length': bytes.length } },
          (res) => {
            const chunks: Buffer[] = [];
            res.on('data', (chunk: Buffer) => chunks.push(chunk));
            res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
          },
        );
        req.on('error', reject);
        const next = (from: number): void => {
          if (from >= bytes.length) {
            req.end();
            return;
          }
          req.write(bytes.subarray(from, from + piece), () => setImmediate(() => next(from + piece)));
        };
        next(0);
      });
    // Values of every length String() writes, timestamps with and without fractions.
    const series = minutely(400).map((point, i) => ({ value: i % 3 === 0 ? point.value : (point.value * 1e-3) / 7, timestamp: i % 2 === 0 ? point.timestamp : point.timestamp.replace('.000Z', 'Z') }));
    const body = JSON.stringify({ granularity: 'minutely', series });
    const pieces = await upload(body, 997);
    expect(pieces.status, pieces.body).toBe(202);
    await eventually(async () => received.length === 4);
    const once = await submit(limited, { granularity: 'minutely', series });
    expect(once.statusCode).toBe(202);
    await eventually(async () => received.length === 8);
    const chunksOf = (messages: readonly IncomingMessage[]) => messages.map((message) => codecs.jobChunk.decode(message.value)).map(({ timestamps, values, chunk_index }) => ({ timestamps, values, chunk_index }));
    const [uploaded, injected] = [chunksOf(received.slice(0, 4)), chunksOf(received.slice(4))];
    expect(uploaded).toEqual(injected);
    expect(uploaded.flatMap((chunk) => chunk.values)).toEqual(series.map((point) => point.value));

    const tooLarge = await upload(JSON.stringify({ granularity: 'minutely', series: minutely(4000) }), 4096);
    expect(tooLarge.status).toBe(413);
    expect(JSON.parse(tooLarge.body)).toMatchObject({ error: { code: 'PayloadTooLarge' } });
    await limited.close();
  });

  it('refuses bad input with coded errors naming the series and the point, and accepts nothing', async () => {
    const cases: [unknown, number, string, string | RegExp][] = [
      [[1, 2], 400, 'InvalidArgument', 'The request body must be a JSON object.'],
      [{}, 400, 'InvalidSeries', "The 'series' field (or 'series_list') is required: 12 to 1000000 points."],
      [{ series: minutely(20), series_list: [{ machine_id: 'a', series: minutely(20) }] }, 400, 'InvalidArgument', "Send either 'series' (one series) or 'series_list' (several), not both."],
      [{ series: minutely(20), sensitivity: 120 }, 400, 'InvalidArgument', 'sensitivity must be an integer from 0 to 99.'],
      [{ series: minutely(20), granularity: 'fortnightly' }, 400, 'InvalidArgument', /^granularity must be one of yearly, monthly, .*, none\.$/],
      [{ series: minutely(20), machine_id: 'bad id' }, 400, 'InvalidMachineId', /^machine_id must be 1 to 128 characters/],
      [{ series: minutely(5) }, 400, 'InvalidSeries', 'series must have at least 12 items; it has 5.'],
      [
        { granularity: 'minutely', series_list: [{ machine_id: 'a', series: minutely(20) }, { machine_id: 'b', series: minutely(20).map((p, i) => (i === 7 ? { ...p, value: 'x' } : p)) }] },
        400,
        'InvalidSeries',
        'series_list[1].series[7].value must be a number from -1e+100 to 1e+100.',
      ],
      [
        { granularity: 'minutely', series: minutely(20).map((p, i) => (i === 9 ? { ...p, timestamp: 'noon' } : p)) },
        400,
        'InvalidSeries',
        'Series 0: series[9].timestamp must be an ISO 8601 date-time such as 2024-01-01T00:00:00Z.',
      ],
      [
        { granularity: 'minutely', series: [...minutely(20).slice(0, 10), ...minutely(20).slice(9)] },
        400,
        'InvalidSeries',
        'Series 0: Duplicate timestamps',
      ],
      [
        { granularity: 'minutely', series: minutely(20).map((p, i) => (i === 13 ? { ...p, timestamp: new Date(Date.parse(p.timestamp) + 1000).toISOString() } : p)) },
        400,
        'InvalidSeries',
        "Series 0: The 'timestamp' at index 13 is invalid in minutely granularity with 1 gran as interval.",
      ],
      [{ series_list: [{ machine_id: 'a', series: minutely(20) }, { machine_id: 'a', series: minutely(20) }] }, 400, 'InvalidArgument', "The machine 'a' appears twice in 'series_list' (index 1)."],
      [{ series_list: [{ series: minutely(20) }] }, 400, 'InvalidMachineId', /^series_list\[0\]\.machine_id is required \(1 to 128 characters/],
      [{ series_list: 'all' }, 400, 'InvalidSeries', 'series_list must be an array of at least 1 item.'],
      [{ series: { timestamp: 'x' } }, 400, 'InvalidSeries', 'series must be an array of at least 12 items.'],
      // Multichannel series: the rules of POST /v1/detect, each message naming the series (and channel).
      [
        { granularity: 'minutely', series_list: [{ machine_id: 'a', series: minutely(20) }, { machine_id: 'pump', series: multichannel(20).map((p, i) => (i === 4 ? { ...p, channels: { flow: 1 } } : p)) }] },
        400,
        'InvalidSeries',
        "Series 1 (machine 'pump'): series[4].channels lacks 'pressure': every point carries the channels of series[0].",
      ],
      [
        { granularity: 'minutely', machine_id: 'pump', series: multichannel(20).map((p, i) => (i === 6 ? { ...p, channels: { ...p.channels, temp: 'hot' } } : p)) },
        400,
        'InvalidSeries',
        'series[6].channels.temp must be a number from -1e+100 to 1e+100.',
      ],
      [{ machine_id: 'pump:1', series: multichannel(20) }, 400, 'InvalidMachineId', /^The 'machine_id' field of a multivariate series must not contain ':'/],
      [
        { series_list: [{ machine_id: 'rig:2', series: multichannel(20) }] },
        400,
        'InvalidMachineId',
        /^The 'machine_id' of the 'series_list' item at index 0 of a multivariate series must not contain ':'/,
      ],
    ];
    for (const [body, status, code, message] of cases) {
      const response = await submit(app, body);
      expect(response.statusCode, JSON.stringify(body).slice(0, 200)).toBe(status);
      const error = response.json<{ error: { code: string; message: string } }>().error;
      expect(error.code, JSON.stringify(body).slice(0, 200)).toBe(code);
      if (typeof message === 'string') expect(error.message).toBe(message);
      else expect(error.message).toMatch(message);
    }
    // No body at all, and no content type (so no content type's schema applies): the same refusal.
    const bodiless = await app.inject({ method: 'POST', url: '/v1/jobs?granularity=yearly', headers: { 'x-service-key': API_KEY } });
    expect(bodiless.statusCode).toBe(400);
    expect(bodiless.json()).toEqual({ error: { code: 'InvalidArgument', message: 'The request body must be a JSON object.' } });
    expect((await get(app, '/v1/jobs')).json()).toEqual({ jobs: [], next_cursor: null });
    expect(received).toEqual([]);
  });

  it('refuses a job over JOBS_MAX_POINTS or JOBS_MAX_SERIES before reading its points, and a bad Idempotency-Key', async () => {
    const limited = await start({ JOBS_MAX_POINTS: '100', JOBS_MAX_SERIES: '2' });
    const tooLong = await submit(limited, { series_list: [{ machine_id: 'a', series: minutely(60) }, { machine_id: 'b', series: minutely(60) }] });
    expect(tooLong.statusCode).toBe(400);
    expect(tooLong.json()).toEqual({ error: { code: 'InvalidSeries', message: 'A job takes at most 100 points, all series together; this one has 120.' } });
    const tooMany = await submit(limited, { series_list: ['a', 'b', 'c'].map((machine_id) => ({ machine_id, series: minutely(20) })) });
    expect(tooMany.json()).toEqual({ error: { code: 'InvalidSeries', message: "A job takes at most 2 series; 'series_list' has 3." } });
    // A multichannel point counts once per channel.
    const tooWide = await submit(limited, { machine_id: 'pump', series: multichannel(40) });
    expect(tooWide.json()).toEqual({ error: { code: 'InvalidSeries', message: 'A job takes at most 100 points, all series together; this one has 120.' } });
    const badKey = await submit(limited, { series: minutely(20) }, { 'idempotency-key': 'with space' });
    expect(badKey.statusCode).toBe(400);
    expect(badKey.json()).toEqual({
      error: { code: 'InvalidArgument', message: 'The Idempotency-Key header must be one value of 1 to 255 visible ASCII characters.' },
    });
  });

  it('caps the jobs an organization has queued or running, and its points not judged yet: 429 with Retry-After', async () => {
    const capped = await start({ JOBS_MAX_ACTIVE_PER_ORG: '2', JOBS_MAX_PENDING_POINTS_PER_ORG: '100', JOBS_RETRY_AFTER_SECONDS: '7' });
    expect((await submit(capped, { series: minutely(50) }, { 'idempotency-key': 'cap-1' })).statusCode).toBe(202);
    const points = await submit(capped, { series: minutely(51) });
    expect(points.statusCode).toBe(429);
    expect(points.headers['retry-after']).toBe('7');
    expect(points.json<{ error: { code: string } }>().error.code).toBe('TooManyPendingPoints');
    expect((await submit(capped, { series: minutely(50, 1) })).statusCode).toBe(202);
    const count = await submit(capped, { series: minutely(12, 2) });
    expect(count.statusCode).toBe(429);
    expect(count.headers['retry-after']).toBe('7');
    expect(count.json()).toEqual({
      error: {
        code: 'TooManyActiveJobs',
        message: 'This organization has 2 jobs queued or running, the most it may have (JOBS_MAX_ACTIVE_PER_ORG 2). Retry once one has finished.',
      },
    });
    // A retry of an accepted job is answered whatever the caps say.
    const retry = await submit(capped, { series: minutely(50) }, { 'idempotency-key': 'cap-1' });
    expect(retry.statusCode).toBe(202);
    expect(retry.headers['idempotent-replayed']).toBe('true');
    const listed = (await get(capped, '/v1/jobs')).json<{ jobs: { job_id: string }[] }>();
    expect(listed.jobs).toHaveLength(2);
  });

  it('cancels a queued job: the worker skips its chunks, then judges the next job', async () => {
    // The worker's first look at a job waits until the test has cancelled it.
    let release!: () => void;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    let looked = false;
    const gated: JobStore = {
      ...jobs,
      get: async (orgId, jobId) => {
        looked = true;
        await gate;
        return jobs.get(orgId, jobId);
      },
    };
    const worker = await startJobWorker({ bus, jobs: gated, groupId: 'jobs-test', logger: silent });
    try {
      const first = (await submit(app, { granularity: 'minutely', series: minutely(300) })).json<{ job_id: string }>();
      await eventually(async () => looked);
      const cancel = await app.inject({ method: 'DELETE', url: `/v1/jobs/${first.job_id}`, headers: { 'x-service-key': API_KEY } });
      expect(cancel.statusCode).toBe(200);
      expect(cancel.json()).toEqual({ job_id: first.job_id, action: 'cancelled' });
      release();
      const second = (await submit(app, { granularity: 'minutely', series: minutely(300, 1) })).json<{ job_id: string }>();
      // One partition: once the second job is done, the first one's chunks were consumed before it.
      expect((await waitForStatus(app, second.job_id, ['done'], 60_000)).status).toBe('done');
      const cancelled = (await get(app, `/v1/jobs/${first.job_id}`)).json<{ status: string; points_done: number; finished_at: string | null }>();
      expect(cancelled).toMatchObject({ status: 'cancelled', points_done: 0 });
      expect(cancelled.finished_at).not.toBeNull();
      expect((await get(app, `/v1/jobs/${first.job_id}/results`)).json()).toMatchObject({ status: 'cancelled', results: [], episodes: [], next_cursor: null });
      expect(await jobs.stagedChunks(app.bootstrap.organizationId, first.job_id, 0)).toEqual(new Map());
      expect(worker.seriesJudged()).toBe(1);
      // A cancelled job is deleted by a second DELETE.
      const again = await app.inject({ method: 'DELETE', url: `/v1/jobs/${first.job_id}`, headers: { 'x-service-key': API_KEY } });
      expect(again.json()).toEqual({ job_id: first.job_id, action: 'deleted' });
    } finally {
      release();
      await worker.stop();
    }
  });

  it("judges a machine's series with its baseline's sensitivity where the request gives none, as POST /v1/detect does", async () => {
    const energies = Array.from({ length: 120 }, (_, i) => 1 + (i % 7) / 10);
    const baseline = await post(app, '/v1/baseline', { machine_id: 'kiln-7', energies, sensitivity: 40 });
    expect(baseline.statusCode, baseline.body).toBe(200);
    const worker = await startJobWorker({ bus, jobs, groupId: 'jobs-baseline', logger: silent });
    try {
      const body = { granularity: 'minutely', series_list: [{ machine_id: 'kiln-7', series: minutely(3000) }, { machine_id: 'other', series: minutely(3000) }] };
      const job = (await submit(app, body)).json<{ job_id: string }>();
      const done = await waitForStatus(app, job.job_id, ['done'], 60_000);
      expect(done.series.map((series) => [series.machine_id, series.sensitivity])).toEqual([
        ['kiln-7', 40],
        ['other', 95],
      ]);
      const rows = (await get(app, `/v1/jobs/${job.job_id}/results?limit=6000`)).json<{ results: { series_index: number; is_anomaly: boolean; upper_margin: number }[] }>().results;
      const input = (seed: number) => ({
        timestampsMs: minutely(3000, seed).map((point) => Date.parse(point.timestamp)),
        values: minutely(3000, seed).map((point) => point.value),
        granularity: 'minutely' as const,
        customInterval: 1,
        imputeMode: 'auto' as const,
      });
      const at40 = detectEntireSeries(input(0), { sensitivity: 40, maxAnomalyRatio: 0.25 });
      const at95 = detectEntireSeries(input(0), { sensitivity: 95, maxAnomalyRatio: 0.25 });
      expect(rows.filter((row) => row.series_index === 0).map((row) => row.upper_margin)).toEqual(at40.upperMargins);
      expect(rows.filter((row) => row.series_index === 1).map((row) => row.upper_margin)).toEqual(at95.upperMargins);
      expect(at40.upperMargins).not.toEqual(at95.upperMargins);

      // A sensitivity in the request wins over the baseline's.
      const given = (await submit(app, { ...body, sensitivity: 95 })).json<{ series: { sensitivity: number }[] }>();
      expect(given.series.map((series) => series.sensitivity)).toEqual([95, 95]);
    } finally {
      await worker.stop();
    }
  });

  it("holds a flag while the series stays away from its baseline's level, as POST /v1/detect does; a machine without one gets the engine's flags", async () => {
    // A 48-point cycle; the judged stretch moves up by 6 from point 1000 to 1140 (entire-series
    // detection reports a level held for less than a twentieth of the series, at its jump).
    const wave = (count: number, offset: number, shiftFrom = -1, shiftTo = -1): number[] =>
      Array.from({ length: count }, (_, i) => 50 + 4 * Math.sin((2 * Math.PI * (i + offset)) / 48) + (((i + offset) * 7919) % 13) / 26 + (i >= shiftFrom && i < shiftTo ? 6 : 0));
    const healthy = wave(1000, 0);
    const org = app.bootstrap.organizationId;
    await app.store.upsertBaseline(org, storedBaseline('press-2', 1000, { shapeReference: shapeReferenceOf(healthy) }));
    const judged = wave(3000, 1000, 1000, 1140);
    const worker = await startJobWorker({ bus, jobs, groupId: 'jobs-level', baselines: app.store, logger: silent });
    try {
      const series = jobPoints(judged);
      const job = (await submit(app, { granularity: 'none', series_list: [{ machine_id: 'press-2', series }, { machine_id: 'other', series }] })).json<{ job_id: string }>();
      await waitForStatus(app, job.job_id, ['done'], 60_000);
      const page = (await get(app, `/v1/jobs/${job.job_id}/results?limit=6000`)).json<{
        results: { series_index: number; is_anomaly: boolean; severity: number }[];
        episodes: { series_index: number; first_point: number; last_point: number }[];
      }>();
      const flagged = (index: number) => page.results.filter((row) => row.series_index === index).flatMap((row, i) => (row.is_anomaly ? [i] : []));
      // Without a baseline: entire-series detection's flags, which mark the shift at a few points.
      const engine = detectEntireSeries(
        { timestampsMs: series.map((point) => Date.parse(point.timestamp)), values: judged, granularity: 'none', customInterval: 1, imputeMode: 'auto' },
        { sensitivity: 95, maxAnomalyRatio: 0.25 },
      );
      const engineFlags = engine.isAnomaly.flatMap((flag, i) => (flag ? [i] : []));
      expect(flagged(1)).toEqual(engineFlags);
      const inShift = engineFlags.filter((i) => i >= 1000 && i < 1140);
      expect(inShift.length).toBeGreaterThan(0);
      expect(inShift.length).toBeLessThan(10);
      // With the baseline's level model the shift is flagged from the engine's first flag in it
      // to (at least) its end, without a break, each held point no more severe than that flag.
      const held = flagged(0).filter((i) => i >= inShift[0]! && i < 1140 + 48);
      expect(held[0]).toBe(inShift[0]);
      expect(held.at(-1)!).toBeGreaterThanOrEqual(1139);
      expect(held).toEqual(held.map((_, k) => held[0]! + k));
      // The shift is one episode.
      const episodes = page.episodes.filter((episode) => episode.series_index === 0 && episode.last_point >= 1000 && episode.first_point < 1140);
      expect(episodes).toHaveLength(1);
      expect(episodes[0]!.last_point).toBeGreaterThanOrEqual(1139);
    } finally {
      await worker.stop();
    }
  });

  it("splits a multichannel series into its channels, adds the machine verdict only with the machine's joint model, and refuses one lacking a model channel", async () => {
    // No baseline: each channel is a series, no machine verdict.
    const plain = await submit(app, { granularity: 'minutely', machine_id: 'pump', series: multichannel(250) });
    expect(plain.statusCode).toBe(202);
    const job = plain.json<{ points_total: number; series: { machine_id: string; kind: string; channel: string | null; channels: string[] | null }[] }>();
    expect(job.points_total).toBe(750);
    expect(job.series.map((one) => [one.machine_id, one.kind, one.channel, one.channels])).toEqual([
      ['pump', 'channel', 'flow', null],
      ['pump', 'channel', 'pressure', null],
      ['pump', 'channel', 'temp', null],
    ]);
    // Each channel's chunks carry its readings alone.
    await eventually(async () => received.length === 9);
    const chunks = received.map((message) => codecs.jobChunk.decode(message.value)).filter((chunk) => chunk.series_index === 1);
    expect(chunks.flatMap((chunk) => chunk.values)).toEqual(pumpChannels(250, 0).pressure);

    // With the machine's multivariate baseline: its joint model judges the readings together.
    const org = app.bootstrap.organizationId;
    const healthy = pumpChannels(400, 0);
    await app.store.upsertBaseline(
      org,
      storedBaseline('pump', 400, {
        sensitivity: 90,
        channels: ['flow', 'pressure', 'temp'],
        machineModel: encodeMachineModel(fitMachineModel({ channels: ['flow', 'pressure', 'temp'], values: [healthy.flow, healthy.pressure, healthy.temp] })),
      }),
    );
    received.length = 0;
    const joint = await submit(app, { granularity: 'minutely', machine_id: 'pump', series: multichannel(250, ['temp', 'flow', 'pressure']) });
    expect(joint.statusCode).toBe(202);
    const jointJob = joint.json<{ points_total: number; series: { kind: string; channel: string | null; channels: string[] | null; sensitivity: number; points: number }[] }>();
    expect(jointJob.points_total).toBe(1000);
    expect(jointJob.series.map((one) => [one.kind, one.channel, one.channels, one.sensitivity, one.points])).toEqual([
      ['channel', 'temp', null, 90, 250],
      ['channel', 'flow', null, 90, 250],
      ['channel', 'pressure', null, 90, 250],
      ['machine', null, ['flow', 'pressure', 'temp'], 90, 250],
    ]);
    // The machine verdict's chunks: each point's readings in the model's order, 33 points a chunk
    // (JOBS_CHUNK_POINTS 100 values over 3 channels).
    await eventually(async () => received.length === 9 + 8);
    const machineChunks = received.map((message) => codecs.jobChunk.decode(message.value)).filter((chunk) => chunk.series_index === 3);
    expect(machineChunks.map((chunk) => chunk.values.length)).toEqual([99, 99, 99, 99, 99, 99, 99, 57]);
    expect(machineChunks[1]!.first_point).toBe(33);
    expect(machineChunks[0]!.values.slice(0, 6)).toEqual([healthy.flow[0], healthy.pressure[0], healthy.temp[0], healthy.flow[1], healthy.pressure[1], healthy.temp[1]]);

    const lacking = await submit(app, { granularity: 'minutely', series_list: [{ machine_id: 'other', series: minutely(30) }, { machine_id: 'pump', series: multichannel(250, ['flow', 'temp']) }] });
    expect(lacking.statusCode).toBe(400);
    expect(lacking.json()).toEqual({
      error: {
        code: 'InvalidSeries',
        message: "Series 1 (machine 'pump'): the machine's baseline models the channels flow, pressure, temp together; the series lacks 'pressure'.",
      },
    });
  });

  it('takes one series as a text/csv file with the options in the query: the same job as its JSON, file problems by line', async () => {
    const points = minutely(300);
    const postCsv = (text: string, query: string, headers: Record<string, string> = {}) =>
      app.inject({ method: 'POST', url: `/v1/jobs${query}`, headers: { 'x-service-key': API_KEY, 'content-type': 'text/csv', ...headers }, payload: text });
    const json = await submit(app, { machine_id: 'pump-9', granularity: 'minutely', sensitivity: 80, series: points }, { 'idempotency-key': 'same-file' });
    expect(json.statusCode).toBe(202);
    // A BOM, CRLF, a header, quotes and a blank line: the dashboard's column rules.
    const file = `\uFEFFtime,reading\r\n${points.map((p, i) => (i === 5 ? `"${p.timestamp}","${p.value}"` : `${p.timestamp},${p.value}`)).join('\r\n')}\r\n\r\n`;
    const same = await postCsv(file, '?machine_id=pump-9&granularity=minutely&sensitivity=80', { 'idempotency-key': 'same-file' });
    expect(same.statusCode).toBe(202);
    expect(same.headers['idempotent-replayed']).toBe('true');
    expect(same.json<{ job_id: string }>().job_id).toBe(json.json<{ job_id: string }>().job_id);
    // Values only: a series without timestamps.
    const values = await postCsv(points.map((p) => p.value).join('\n'), '');
    expect(values.statusCode).toBe(202);
    expect(values.json<{ options: { granularity: string }; points_total: number }>()).toMatchObject({ options: { granularity: 'none' }, points_total: 300 });

    const lines = ['timestamp,value', ...points.slice(0, 20).map((p) => `${p.timestamp},${p.value}`)];
    const cases: [string, string, string][] = [
      [[...lines.slice(0, 8), 'x,1', ...lines.slice(8)].join('\n'), '', 'Line 9, column 1 (timestamp): "x" is not an ISO 8601 timestamp (like 2025-06-01T10:00:00Z)'],
      [[...lines.slice(0, 8), `${points[3]!.timestamp},abc`, ...lines.slice(8)].join('\n'), '', 'Line 9, column 2 (value): "abc" is not a number'],
      [[...lines.slice(0, 8), lines[7]!, ...lines.slice(8)].join('\n'), '', `Line 9, column 1 (timestamp): ${points[6]!.timestamp} repeats line 8's timestamp`],
      [[...lines, 'a,b,c'].join('\n'), '', 'Line 22: 3 columns where line 2 has 2'],
      [lines.join('\n'), '?sensitivity=high', "The 'sensitivity' query parameter must be an integer from 0 to 99."],
    ];
    for (const [text, query, message] of cases) {
      const response = await postCsv(text, query);
      expect(response.statusCode, message).toBe(400);
      expect(response.json<{ error: { message: string } }>().error.message).toBe(message);
    }

    // Three or more columns: a machine's channels, as the dashboard reads them; the same job as its JSON.
    const machinePoints = multichannel(60);
    const machineJson = await submit(app, { machine_id: 'pump-3', granularity: 'minutely', series: machinePoints }, { 'idempotency-key': 'machine-file' });
    expect(machineJson.statusCode).toBe(202);
    const machineLines = ['Timestamp,flow,pressure,temp', ...machinePoints.map((p) => `${p.timestamp},${p.channels['flow']},${p.channels['pressure']},${p.channels['temp']}`)];
    const machineFile = await postCsv(`${machineLines.join('\r\n')}\r\n`, '?machine_id=pump-3&granularity=minutely', { 'idempotency-key': 'machine-file' });
    expect(machineFile.statusCode).toBe(202);
    expect(machineFile.headers['idempotent-replayed']).toBe('true');
    expect(machineFile.json<{ job_id: string; series: { kind: string; channel: string }[] }>()).toMatchObject({
      job_id: machineJson.json<{ job_id: string }>().job_id,
      series: [{ kind: 'channel', channel: 'flow' }, { kind: 'channel', channel: 'pressure' }, { kind: 'channel', channel: 'temp' }],
    });
    const machineCases: [string, string][] = [
      [['time,flow,pressure,temp', ...machineLines.slice(1)].join('\n'), 'Line 1, column 1: a file of several channels starts with a header "timestamp,<channel>,<channel>,..."; the first column is "time"'],
      [['timestamp,flow,9p,temp', ...machineLines.slice(1)].join('\n'), 'Line 1, column 3: "9p" is not a channel name (a letter or _ first, then up to 63 of A-Z a-z 0-9 _ . : -)'],
      [['timestamp,flow,flow,temp', ...machineLines.slice(1)].join('\n'), 'Line 1, column 3: channel "flow" repeats column 2'],
      [[...machineLines.slice(0, 5), machineLines[5]!.replace(/,[^,]*$/, ','), ...machineLines.slice(6)].join('\n'), 'Line 6, column 4 (temp): the value is empty (every row needs every channel)'],
      [[...machineLines.slice(0, 5), machineLines[5]!.replace(/,[^,]*$/, ''), ...machineLines.slice(6)].join('\n'), 'Line 6: 3 columns where the header (line 1) has 4'],
      [[...machineLines.slice(0, 5), machineLines[3]!, ...machineLines.slice(6)].join('\n'), `Line 6, column 1 (timestamp): ${machinePoints[2]!.timestamp} is earlier than line 5's; timestamps must ascend`],
    ];
    for (const [text, message] of machineCases) {
      const response = await postCsv(text, '?machine_id=pump-3');
      expect(response.statusCode, message).toBe(400);
      expect(response.json()).toEqual({ error: { code: 'InvalidSeries', message } });
    }
  });

  it('answers 503 and keeps no job when the bus refuses the chunks; the retry is a new job', async () => {
    const failing: Bus = {
      ...bus,
      producer: async () => ({ send: () => Promise.reject(new Error('broker down')), close: () => Promise.resolve() }),
    };
    const broken = await start({}, { bus: failing });
    const response = await submit(broken, { series: minutely(20) }, { 'idempotency-key': 'retry-me' });
    expect(response.statusCode).toBe(503);
    expect(response.headers['retry-after']).toBe('1');
    expect(response.json<{ error: { code: string } }>().error.code).toBe('ServiceUnavailable');
    expect((await get(broken, '/v1/jobs')).json()).toEqual({ jobs: [], next_cursor: null });
    const retry = await submit(app, { series: minutely(20) }, { 'idempotency-key': 'retry-me' });
    expect(retry.statusCode).toBe(202);
    expect(retry.headers['idempotent-replayed']).toBeUndefined();
  });

  it('pages the job list and answers unknown ids and cursors with coded errors', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push((await submit(app, { series: minutely(20, i) })).json<{ job_id: string }>().job_id);
    const firstPage = (await get(app, '/v1/jobs?limit=2')).json<{ jobs: { job_id: string }[]; next_cursor: string | null }>();
    expect(firstPage.jobs).toHaveLength(2);
    const rest = (await get(app, `/v1/jobs?limit=2&cursor=${firstPage.next_cursor ?? ''}`)).json<{ jobs: { job_id: string }[]; next_cursor: string | null }>();
    expect([...firstPage.jobs, ...rest.jobs].map((job) => job.job_id).sort()).toEqual([...ids].sort());
    expect(rest.next_cursor).toBeNull();

    for (const url of ['/v1/jobs/job_00000000000000000000000000000000', '/v1/jobs/nope', '/v1/jobs/nope/results']) {
      const response = await get(app, url);
      expect(response.statusCode).toBe(404);
      expect(response.json<{ error: { code: string } }>().error.code).toBe('JobNotFound');
    }
    for (const url of ['/v1/jobs?limit=0', '/v1/jobs?cursor=zzz', `/v1/jobs/${ids[0]!}/results?cursor=bad!`, `/v1/jobs/${ids[0]!}/results?limit=10001`]) {
      const response = await get(app, url);
      expect(response.statusCode, url).toBe(400);
      expect(response.json<{ error: { code: string } }>().error.code).toBe('InvalidArgument');
    }
  });

  it('answers 503 on every job route where no job store is configured', async () => {
    const bare = await env.start({}, { bus });
    expect((await submit(bare, { series: minutely(20) })).statusCode).toBe(503);
    expect((await get(bare, '/v1/jobs')).statusCode).toBe(503);
    expect((await get(bare, '/v1/jobs/job_00000000000000000000000000000000')).statusCode).toBe(503);
  });

  it('answers every job route in the shape its OpenAPI document declares, for each status', async () => {
    const document = (await get(app, '/openapi.json')).json<{
      paths: Record<string, Record<string, { responses: Record<string, { content?: Record<string, { schema: object }> }> }>>;
    }>();
    const ajv = new Ajv2020({ strict: false });
    addFormats(ajv);
    const conforms = (path: string, method: string, response: { statusCode: number; json(): unknown }): void => {
      const declared = document.paths[path]?.[method]?.responses[String(response.statusCode)];
      expect(declared, `${method} ${path} ${response.statusCode} is documented`).toBeDefined();
      const schema = declared?.content?.['application/json']?.schema;
      expect(schema, `${method} ${path} ${response.statusCode} has a JSON schema`).toBeDefined();
      const validate = ajv.compile(schema!);
      expect(validate(response.json()), `${method} ${path} ${response.statusCode}: ${JSON.stringify(validate.errors)}`).toBe(true);
    };
    const capped = await start({ JOBS_MAX_PENDING_POINTS_PER_ORG: '30' });
    const worker = await startJobWorker({ bus, jobs, groupId: 'jobs-doc', logger: silent });
    let jobId: string;
    try {
      const accepted = await submit(capped, { series_list: [{ machine_id: 'a', series: minutely(20) }] }, { 'idempotency-key': 'doc' });
      conforms('/v1/jobs', 'post', accepted);
      jobId = accepted.json<{ job_id: string }>().job_id;
      // Judged, so that the results and the job carry every field.
      await waitForStatus(capped, jobId, ['done'], 60_000);
    } finally {
      await worker.stop();
    }
    const statuses: number[] = [];
    for (const [body, headers] of [
      [{ series_list: [{ machine_id: 'a', series: minutely(20) }] }, { 'idempotency-key': 'doc' }],
      [{ series: minutely(20, 1) }, { 'idempotency-key': 'doc' }],
      [{ series: minutely(40, 1) }, {}],
      [{ series: 'no' }, {}],
    ] as const) {
      const response = await submit(capped, body, headers);
      statuses.push(response.statusCode);
      conforms('/v1/jobs', 'post', response);
    }
    expect(statuses).toEqual([202, 409, 429, 400]);
    conforms('/v1/jobs/{job_id}', 'get', await get(capped, `/v1/jobs/${jobId}`));
    conforms('/v1/jobs/{job_id}', 'get', await get(capped, '/v1/jobs/job_00000000000000000000000000000000'));
    conforms('/v1/jobs/{job_id}/results', 'get', await get(capped, `/v1/jobs/${jobId}/results?limit=5`));
    conforms('/v1/jobs/{job_id}/results', 'get', await get(capped, `/v1/jobs/${jobId}/results?cursor=@`));
    conforms('/v1/jobs', 'get', await get(capped, '/v1/jobs'));
    conforms('/v1/jobs', 'get', await get(capped, '/v1/jobs?limit=x'));
    const remove = (id: string) => capped.inject({ method: 'DELETE', url: `/v1/jobs/${id}`, headers: { 'x-service-key': API_KEY } });
    conforms('/v1/jobs/{job_id}', 'delete', await remove(jobId));
    conforms('/v1/jobs/{job_id}', 'delete', await remove(jobId));
  });
});
