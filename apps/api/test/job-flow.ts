// Detection jobs end to end, as one suite run against both configurations: embedded
// (jobs-embedded.test.ts: the durable in-process bus and jobs.duckdb) and scale-out
// (test/integration/jobs-kafka.test.ts: Kafka and ClickHouse). POST /v1/jobs, then GET
// /v1/jobs/{id} until done, then every page of the results: exactly one row per point and the
// flags of entire-series detection over the same points; idempotent resubmission; organizations
// apart; usage; a job accepted before a restart judged after it.
import { afterEach, beforeEach, expect, it } from 'vitest';
import { seriesEpisodes } from '@adp/alerts';
import { detectEntireSeries, type SeriesInput } from '@adp/detection';
import { encodeMachineModel, fitMachineModel, judgeMachine } from '@adp/machine';
import type { FastifyInstance } from 'fastify';
import type { NewBaseline } from '@adp/store';
import type { Platform } from '../src/platform.js';
import { describeApiKey } from '../src/tenancy/keys.js';
import { API_KEY, eventually, get, OTHER_KEY, OTHER_ORG } from './streaming-helpers.js';

export interface JobTarget {
  /** How long a job of this suite may take to be judged. */
  readonly settleMs: number;
  /** Opens the platform (bootstrap key API_KEY); a second call after close reopens the same storage. */
  open(env?: Readonly<Record<string, string>>): Promise<Platform>;
  cleanup(): Promise<void>;
}

const T0 = Date.UTC(2025, 0, 1);
const MINUTE = 60_000;

/** A daily-cycle minutely series with a few spikes and a dip. */
export function seriesValues(count: number, seed = 0): number[] {
  return Array.from({ length: count }, (_, i) => {
    const base = 100 + 10 * Math.sin((2 * Math.PI * i) / 1440) + (((i + seed) * 7919) % 17) / 17;
    if ((i + seed) % 9973 === 4000) return base + 80;
    if ((i + seed) % 15013 === 7000) return base - 70;
    return base;
  });
}

/**
 * A baseline written straight to the store, without a fine-tune (the suites' models do not
 * fine-tune): `fields` add what the test needs (a joint model, shapes, a sensitivity).
 */
export function storedBaseline(machineId: string, rows: number, fields: Partial<NewBaseline> = {}): NewBaseline {
  return {
    machineId,
    baselineId: `bl_${machineId}`,
    label: null,
    granularity: 'minutely',
    sensitivity: null,
    stats: { energyMean: 1, energyStd: 0.5, energyP99: 2, numWindows: rows - 10, seriesLength: rows },
    fineTuneStats: { status: 'skipped', finalLoss: null, epochsRun: 0, epochsMax: 0, earlyStopped: false, windows: 0, durationSeconds: 0 },
    predictorWeights: null,
    normalisation: null,
    ...fields,
  };
}

export function jobPoints(values: readonly number[]): { timestamp: string; value: number }[] {
  return values.map((value, i) => ({ timestamp: new Date(T0 + i * MINUTE).toISOString(), value }));
}

interface JobBody {
  job_id: string;
  status: string;
  points_total: number;
  points_done: number;
  series_done: number;
  failure: unknown;
  series: {
    machine_id: string | null;
    kind: string;
    channel: string | null;
    channels: string[] | null;
    points: number;
    sensitivity: number;
    done: boolean;
    period: number | null;
  }[];
}

interface ResultRow {
  series_index: number;
  machine_id: string | null;
  kind?: 'channel' | 'machine';
  channel?: string;
  point_index: number;
  timestamp: string | null;
  value: number;
  expected_value: number;
  is_anomaly: boolean;
  is_positive_anomaly: boolean;
  is_negative_anomaly: boolean;
  severity: number;
}

interface ResultsPage {
  status: string;
  results: ResultRow[];
  episodes: {
    series_index: number;
    first_point: number;
    last_point: number;
    first_timestamp: string | null;
    last_timestamp: string | null;
    points: number;
    flagged_points: number;
    peak_severity: number;
    direction: string;
    closed: boolean;
    kind?: string;
    channels?: { channel: string; share: number }[];
  }[];
  next_cursor: string | null;
}

export function submit(app: FastifyInstance, body: unknown, headers: Record<string, string> = {}, key = API_KEY) {
  return app.inject({
    method: 'POST',
    url: '/v1/jobs',
    headers: { 'x-service-key': key, 'content-type': 'application/json', ...headers },
    payload: JSON.stringify(body),
  });
}

export async function waitForStatus(app: FastifyInstance, jobId: string, statuses: readonly string[], timeoutMs: number): Promise<JobBody> {
  let last: JobBody | undefined;
  await eventually(async () => {
    const response = await get(app, `/v1/jobs/${jobId}`);
    expect(response.statusCode).toBe(200);
    last = response.json<JobBody>();
    return statuses.includes(last.status);
  }, timeoutMs);
  return last!;
}

/** Every page of a job's results. */
export async function allResults(
  app: FastifyInstance,
  jobId: string,
  limit = 10_000,
  machineId?: string,
): Promise<{ rows: ResultRow[]; episodes: ResultsPage['episodes']; pages: number }> {
  const rows: ResultRow[] = [];
  const episodes = new Map<string, ResultsPage['episodes'][number]>();
  let cursor: string | null = null;
  let pages = 0;
  do {
    const url: string = `/v1/jobs/${jobId}/results?limit=${limit}${machineId ? `&machine_id=${machineId}` : ''}${cursor ? `&cursor=${cursor}` : ''}`;
    const response = await get(app, url);
    expect(response.statusCode).toBe(200);
    const page = response.json<ResultsPage>();
    rows.push(...page.results);
    for (const episode of page.episodes) episodes.set(`${episode.series_index}/${episode.first_point}`, episode);
    cursor = page.next_cursor;
    pages += 1;
  } while (cursor !== null);
  return { rows, episodes: [...episodes.values()], pages };
}

/**
 * A pump's three channels: flow on a cycle, pressure following flow, temperature on its own
 * cycle, each with its own noise; from `fault.from` to `fault.to` the pressure leaves the flow
 * (a valve closing): the channels' relation departs more than any channel's range.
 */
export function pumpChannels(count: number, seed: number, fault?: { from: number; to: number }): Record<'flow' | 'pressure' | 'temp', number[]> {
  const noise = (i: number, k: number): number => ((((i + seed) * 7919 + k * 104729) % 1009) / 1009 - 0.5) * 0.4;
  const flow: number[] = [];
  const pressure: number[] = [];
  const temp: number[] = [];
  for (let i = 0; i < count; i++) {
    const f = 10 + Math.sin((2 * Math.PI * (i + seed)) / 97) + noise(i, 1);
    const inFault = fault !== undefined && i >= fault.from && i < fault.to;
    flow.push(f);
    pressure.push(2 * f + noise(i, 2) + (inFault ? -2.5 : 0));
    temp.push(40 + 0.5 * Math.sin((2 * Math.PI * (i + seed)) / 61) + noise(i, 3));
  }
  return { flow, pressure, temp };
}

function entireFlags(values: readonly number[]): ReturnType<typeof detectEntireSeries> & { isAnomaly: boolean[]; expected: number[] } {
  const input: SeriesInput = {
    timestampsMs: values.map((_, i) => T0 + i * MINUTE),
    values,
    granularity: 'minutely',
    customInterval: 1,
    imputeMode: 'auto',
  };
  const result = detectEntireSeries(input, { sensitivity: 95, maxAnomalyRatio: 0.25 });
  return { ...result, isAnomaly: result.isAnomaly, expected: result.expectedValues };
}

export function jobFlowTests(makeTarget: () => JobTarget): void {
  let target: JobTarget;
  let platform: Platform | null = null;

  beforeEach(() => {
    target = makeTarget();
  });
  afterEach(async () => {
    await platform?.close();
    platform = null;
    await target.cleanup();
  });

  it('judges a 100,000-point series cut into chunks exactly as entire-series detection over the same points, one row per point', async () => {
    // 3,000 points a chunk: the 100,000-point series travels as 34 chunks.
    platform = await target.open({ JOBS_CHUNK_POINTS: '3000' });
    const { app } = platform;
    const values = seriesValues(100_000);
    const accepted = await submit(app, { machine_id: 'press-1', granularity: 'minutely', series: jobPoints(values) });
    expect(accepted.statusCode).toBe(202);
    const job = accepted.json<JobBody>();
    expect(job).toMatchObject({ status: 'queued', points_total: 100_000, points_done: 0, series: [{ machine_id: 'press-1', points: 100_000, done: false, period: null }] });
    expect(accepted.headers['location']).toBe(`/v1/jobs/${job.job_id}`);

    const done = await waitForStatus(app, job.job_id, ['done', 'failed'], target.settleMs);
    expect(done).toMatchObject({ status: 'done', points_done: 100_000, series_done: 1, failure: null });

    const { rows, episodes, pages } = await allResults(app, job.job_id);
    expect(pages).toBe(10);
    expect(rows.map((row) => row.point_index)).toEqual(values.map((_, i) => i));
    const entire = entireFlags(values);
    expect(rows.map((row) => row.is_anomaly)).toEqual(entire.isAnomaly);
    expect(rows.map((row) => row.expected_value)).toEqual(entire.expected);
    expect(rows[0]).toMatchObject({ series_index: 0, machine_id: 'press-1', timestamp: new Date(T0).toISOString(), value: values[0] });
    const flagged = rows.filter((row) => row.is_anomaly).map((row) => row.point_index);
    // The injected spikes and dips are found (the engine reports an event at its first point).
    expect(flagged).toEqual(expect.arrayContaining([4000, 13973, 37026, 93757]));
    // Episodes by the rule of POST /v1/detect and the stream (@adp/alerts seriesEpisodes).
    expect(episodes.map((episode) => [episode.first_point, episode.last_point, episode.flagged_points, episode.peak_severity, episode.closed])).toEqual(
      seriesEpisodes(entire).map((episode) => [episode.start, episode.end, episode.flaggedPoints, episode.severity, episode.closed]),
    );
    expect(episodes.reduce((sum, episode) => sum + episode.flagged_points, 0)).toBe(flagged.length);
  });

  it('answers the episodes POST /v1/detect answers for the same series: flags under 10 points apart are one episode', async () => {
    platform = await target.open();
    const { app } = platform;
    // Two spikes 9 points apart: two events of the engine, one episode.
    const values = seriesValues(1000).map((value, i) => (i === 600 || i === 609 ? value + 80 : value));
    const body = { machine_id: 'press-2', granularity: 'minutely', series: jobPoints(values) };
    const detected = await app.inject({ method: 'POST', url: '/v1/detect', headers: { 'x-service-key': API_KEY }, payload: body });
    expect(detected.statusCode).toBe(200);
    const accepted = await submit(app, body);
    expect(accepted.statusCode).toBe(202);
    const job = accepted.json<JobBody>();
    expect((await waitForStatus(app, job.job_id, ['done', 'failed'], target.settleMs)).status).toBe('done');
    const { rows, episodes } = await allResults(app, job.job_id);
    expect(rows.filter((row) => row.is_anomaly).map((row) => row.point_index)).toEqual([600, 609]);
    const wanted = detected.json<{ episodes: { start: number; end: number; start_timestamp: string; end_timestamp: string; severity: number; flagged_points: number; direction: string; closed: boolean }[] }>().episodes;
    expect(wanted.map((episode) => [episode.start, episode.end, episode.flagged_points])).toEqual([[600, 609, 2]]);
    expect(
      episodes.map((episode) => ({
        start: episode.first_point,
        end: episode.last_point,
        start_timestamp: episode.first_timestamp,
        end_timestamp: episode.last_timestamp,
        severity: episode.peak_severity,
        flagged_points: episode.flagged_points,
        direction: episode.direction,
        closed: episode.closed,
      })),
    ).toEqual(wanted.map(({ start, end, start_timestamp, end_timestamp, severity, flagged_points, direction, closed }) => ({ start, end, start_timestamp, end_timestamp, severity, flagged_points, direction, closed })));
    expect(episodes[0]).toMatchObject({ series_index: 0, machine_id: 'press-2', points: 10 });
  });

  it('takes many series at once, each judged on its own; resubmission with the same Idempotency-Key is the same job', async () => {
    platform = await target.open();
    const { app } = platform;
    const body = {
      granularity: 'minutely',
      series_list: [
        { machine_id: 'fan-1', series: jobPoints(seriesValues(3000, 1)) },
        { machine_id: 'fan-2', series: jobPoints(seriesValues(2000, 2)) },
        { machine_id: 'fan-3', series: jobPoints(seriesValues(1500, 3)) },
      ],
    };
    const first = await submit(app, body, { 'idempotency-key': 'batch-2025-01' });
    expect(first.statusCode).toBe(202);
    const job = first.json<JobBody>();
    const again = await submit(app, body, { 'idempotency-key': 'batch-2025-01' });
    expect(again.statusCode).toBe(202);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.json<JobBody>().job_id).toBe(job.job_id);
    const other = await submit(app, { ...body, sensitivity: 80 }, { 'idempotency-key': 'batch-2025-01' });
    expect(other.statusCode).toBe(409);
    expect(other.json()).toEqual({ error: { code: 'IdempotencyKeyReused', message: expect.stringContaining(job.job_id) } });

    const done = await waitForStatus(app, job.job_id, ['done', 'failed'], target.settleMs);
    expect(done.status).toBe('done');
    expect(done.series.map((series) => [series.machine_id, series.points, series.done])).toEqual([
      ['fan-1', 3000, true],
      ['fan-2', 2000, true],
      ['fan-3', 1500, true],
    ]);
    const { rows } = await allResults(app, job.job_id, 1000);
    expect(rows.length).toBe(6500);
    for (const [index, series] of body.series_list.entries()) {
      const mine = rows.filter((row) => row.series_index === index);
      expect(mine.every((row) => row.machine_id === series.machine_id)).toBe(true);
      expect(mine.map((row) => row.is_anomaly)).toEqual(entireFlags(series.series.map((point) => point.value)).isAnomaly);
    }

    // One machine's results alone, paged.
    const fan2 = await allResults(app, job.job_id, 900, 'fan-2');
    expect(fan2.pages).toBe(3);
    expect(fan2.rows.map((row) => [row.series_index, row.point_index])).toEqual(rows.filter((row) => row.series_index === 1).map((row) => [1, row.point_index]));
    const unknown = await get(app, `/v1/jobs/${job.job_id}/results?machine_id=fan-9`);
    expect(unknown.statusCode).toBe(400);
    expect(unknown.json<{ error: { code: string } }>().error.code).toBe('InvalidArgument');

    const listed = await get(app, '/v1/jobs');
    expect(listed.json<{ jobs: JobBody[] }>().jobs.map((entry) => entry.job_id)).toEqual([job.job_id]);
    const usage = await get(app, '/v1/usage');
    expect(usage.json<{ endpoint: string; total_points: number; call_count: number }[]>().find((entry) => entry.endpoint === 'jobs')).toEqual({
      endpoint: 'jobs',
      total_points: 6500,
      call_count: 1,
    });

    // Another organization sees nothing of it.
    await app.store.createOrganization(OTHER_ORG, 'Second organization');
    await app.store.createApiKey(OTHER_ORG, describeApiKey(OTHER_KEY));
    for (const url of [`/v1/jobs/${job.job_id}`, `/v1/jobs/${job.job_id}/results`]) {
      const response = await get(app, url, OTHER_KEY);
      expect(response.statusCode).toBe(404);
      expect(response.json<{ error: { code: string } }>().error.code).toBe('JobNotFound');
    }
    const foreignDelete = await app.inject({ method: 'DELETE', url: `/v1/jobs/${job.job_id}`, headers: { 'x-service-key': OTHER_KEY } });
    expect(foreignDelete.statusCode).toBe(404);
    expect((await get(app, '/v1/jobs', OTHER_KEY)).json()).toEqual({ jobs: [], next_cursor: null });

    // The owner deletes the finished job: its results are gone.
    const deleted = await app.inject({ method: 'DELETE', url: `/v1/jobs/${job.job_id}`, headers: { 'x-service-key': API_KEY } });
    expect(deleted.json()).toEqual({ job_id: job.job_id, action: 'deleted' });
    expect((await get(app, `/v1/jobs/${job.job_id}/results`)).statusCode).toBe(404);
  });

  it("judges a multichannel series per channel and, against the machine's joint model, as a machine", async () => {
    platform = await target.open({ JOBS_CHUNK_POINTS: '500' });
    const { app } = platform;
    // The machine's multivariate baseline: its joint model fitted on 400 healthy rows (as
    // POST /v1/baseline fits it; the fake model of this suite does not fine-tune the channels).
    const healthy = pumpChannels(400, 0);
    const names = ['flow', 'pressure', 'temp'] as const;
    const model = fitMachineModel({ channels: [...names], values: names.map((name) => healthy[name]) });
    const org = await app.store.ensureDefaultOrganization();
    await app.store.upsertBaseline(org.id, storedBaseline('pump-1', 400, { channels: [...names], machineModel: encodeMachineModel(model) }));

    const judged = pumpChannels(2400, 400, { from: 1200, to: 1500 });
    const series = judged.flow.map((_, i) => ({
      timestamp: new Date(T0 + i * MINUTE).toISOString(),
      // The points name the channels in another order than the model: the model's order rules.
      channels: { temp: judged.temp[i]!, pressure: judged.pressure[i]!, flow: judged.flow[i]! },
    }));
    const accepted = await submit(app, { granularity: 'minutely', series_list: [{ machine_id: 'fan-9', series: jobPoints(seriesValues(1500, 4)) }, { machine_id: 'pump-1', series }] });
    expect(accepted.statusCode).toBe(202);
    const job = accepted.json<JobBody>();
    expect(job.points_total).toBe(1500 + 3 * 2400 + 2400);
    expect(job.series.map((one) => [one.machine_id, one.kind, one.channel, one.channels, one.points])).toEqual([
      ['fan-9', 'series', null, null, 1500],
      ['pump-1', 'channel', 'temp', null, 2400],
      ['pump-1', 'channel', 'pressure', null, 2400],
      ['pump-1', 'channel', 'flow', null, 2400],
      ['pump-1', 'machine', null, ['flow', 'pressure', 'temp'], 2400],
    ]);
    const done = await waitForStatus(app, job.job_id, ['done', 'failed'], target.settleMs);
    expect(done).toMatchObject({ status: 'done', series_done: 5, points_done: job.points_total, failure: null });
    expect(done.series[4]!.period).toBeNull();

    const { rows, episodes } = await allResults(app, job.job_id, 2000, 'pump-1');
    expect(rows.length).toBe(4 * 2400);
    // Each channel is judged alone, as entire-series detection judges it.
    for (const [offset, name] of (['temp', 'pressure', 'flow'] as const).entries()) {
      const mine = rows.filter((row) => row.series_index === 1 + offset);
      expect(mine.every((row) => row.kind === 'channel' && row.channel === name)).toBe(true);
      expect(mine.map((row) => row.is_anomaly)).toEqual(entireFlags(judged[name]).isAnomaly);
    }
    // The machine verdict is the joint model's over the same readings.
    const machineRows = rows.filter((row) => row.series_index === 4);
    const verdict = judgeMachine(model, names.map((name) => judged[name]), 95);
    expect(machineRows.every((row) => row.kind === 'machine' && row.channel === undefined)).toBe(true);
    expect(machineRows.map((row) => row.is_anomaly)).toEqual(verdict.isAnomaly);
    machineRows.forEach((row, t) => {
      expect(row.value).toBeCloseTo(verdict.score[t]!, 9);
      expect(row).toMatchObject({ expected_value: 0, lower_margin: 0, is_negative_anomaly: false });
      expect((row as unknown as { upper_margin: number }).upper_margin).toBeCloseTo(verdict.threshold, 9);
    });
    // The fault is one machine episode, driven by the pressure, and nothing healthy is flagged.
    const machineEpisodes = episodes.filter((episode) => episode.series_index === 4);
    expect(machineEpisodes.length).toBe(verdict.episodes.length);
    const fault = machineEpisodes.find((episode) => episode.first_point <= 1300 && episode.last_point >= 1300);
    expect(fault).toMatchObject({ kind: 'machine' });
    expect(fault!.channels![0]!.channel).toBe('pressure');
    expect(machineRows.filter((row) => row.is_anomaly && (row.point_index < 1200 || row.point_index > 1530)).length).toBe(0);

    // The machine verdict alone, by its series index (what the dashboard reads).
    const verdictOnly = await get(app, `/v1/jobs/${job.job_id}/results?series_index=4&limit=10000`);
    const page = verdictOnly.json<ResultsPage>();
    expect(page.results).toEqual(machineRows);
    expect(page.episodes.every((episode) => episode.series_index === 4)).toBe(true);
    expect(page.next_cursor).toBeNull();
    for (const [query, message] of [
      ['series_index=5', `Job '${job.job_id}' has 5 series; 'series_index' 5 is not one of them.`],
      ['series_index=0&machine_id=pump-1', `Series 0 of job '${job.job_id}' is not machine 'pump-1''s.`],
      ['series_index=-1', "The 'series_index' query parameter must be an integer >= 0."],
    ] as const) {
      const refused = await get(app, `/v1/jobs/${job.job_id}/results?${query}`);
      expect(refused.statusCode).toBe(400);
      expect(refused.json()).toEqual({ error: { code: 'InvalidArgument', message } });
    }
  });

  it('a job accepted while no worker runs is judged after a restart on the same storage', async () => {
    platform = await target.open({ EMBEDDED_WORKER: 'false' });
    const values = seriesValues(12_000, 5);
    const accepted = await submit(platform.app, { machine_id: 'kiln-1', granularity: 'minutely', series: jobPoints(values) });
    expect(accepted.statusCode).toBe(202);
    const jobId = accepted.json<JobBody>().job_id;
    await platform.close();
    platform = await target.open();
    const done = await waitForStatus(platform.app, jobId, ['done', 'failed'], target.settleMs);
    expect(done.status).toBe('done');
    const { rows } = await allResults(platform.app, jobId);
    expect(rows.length).toBe(12_000);
    expect(rows.map((row) => row.is_anomaly)).toEqual(entireFlags(values).isAnomaly);
  });
}
