// The job worker on the embedded pieces (durable in-process bus, jobs.duckdb): the cut rule (a
// series sent in many chunks is judged whole, exactly as detectEntireSeries over its points,
// while the same points judged in two halves give other flags), and a crash mid-job: the worker
// fails after staging, the process goes away, a new one on the same data directory finishes the
// job with exactly one result row per point.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { detectEntireSeries, type SeriesInput } from '@adp/detection';
import { TOPICS, loadStreamingCodecs, openDurableInProcessBus, type InProcessBus, type OutgoingMessage } from '@adp/streaming';
import { createDuckDbJobStore, type JobRecord, type JobStore } from '@adp/store';
import { startJobWorker, type RunningJobWorker } from '../src/index.js';

const codecs = loadStreamingCodecs();
const silent = { debug: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined };
const T0 = Date.UTC(2025, 0, 1);
const MINUTE = 60_000;
const ORG = 'org_a';

function values(count: number): number[] {
  return Array.from({ length: count }, (_, i) => {
    const base = 20 + 4 * Math.sin((2 * Math.PI * i) / 288) + ((i * 7919) % 11) / 11;
    return i === 1700 || i === 2900 ? base + 30 : base;
  });
}

function input(points: readonly number[], from = 0): SeriesInput {
  return { timestampsMs: points.map((_, i) => T0 + (from + i) * MINUTE), values: points, granularity: 'minutely', customInterval: 1, imputeMode: 'auto' };
}

const OPTIONS = { sensitivity: 95, maxAnomalyRatio: 0.25 };

function job(jobId: string, points: readonly number[][], chunkPoints: number): { record: JobRecord; messages: OutgoingMessage[] } {
  const messages: OutgoingMessage[] = [];
  const series = points.map((one, seriesIndex) => {
    const chunks = Math.ceil(one.length / chunkPoints);
    for (let chunkIndex = 0; chunkIndex < chunks; chunkIndex++) {
      const from = chunkIndex * chunkPoints;
      const slice = one.slice(from, from + chunkPoints);
      messages.push({
        key: `${ORG}/${jobId}/${seriesIndex}`,
        value: codecs.jobChunk.encode({
          organization: ORG,
          job_id: jobId,
          series_index: seriesIndex,
          chunk_index: chunkIndex,
          chunk_count: chunks,
          first_point: from,
          timestamps: slice.map((_, i) => T0 + (from + i) * MINUTE),
          values: slice,
        }),
      });
    }
    return { machineId: `m-${seriesIndex}`, points: one.length, chunks, timestamps: true };
  });
  const record: JobRecord = {
    jobId,
    orgId: ORG,
    status: 'queued',
    idempotencyKey: null,
    requestHash: 'h',
    series,
    pointsTotal: points.reduce((sum, one) => sum + one.length, 0),
    options: { granularity: 'minutely', customInterval: 1, imputeMode: 'auto', ...OPTIONS },
    createdAtMs: 1,
    startedAtMs: null,
    finishedAtMs: null,
    failure: null,
  };
  return { record, messages };
}

async function until(condition: () => Promise<boolean>, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describe('job worker', () => {
  const dirs: string[] = [];
  const open: { close(): Promise<void> }[] = [];
  afterEach(async () => {
    for (const piece of open.splice(0).reverse()) await piece.close().catch(() => undefined);
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  });

  async function pieces(dir: string): Promise<{ bus: InProcessBus; jobs: JobStore }> {
    const jobs = await createDuckDbJobStore({ dataDir: dir });
    const bus = await openDurableInProcessBus({ dir: join(dir, 'bus') });
    open.push(jobs, bus);
    return { bus, jobs };
  }

  function worker(bus: InProcessBus, jobs: JobStore): Promise<RunningJobWorker> {
    return startJobWorker({ bus, jobs, groupId: 'jobs', partitions: 2, logger: silent }).then((running) => {
      open.unshift({ close: () => running.stop() });
      return running;
    });
  }

  it('judges a series sent in chunks as one series: the flags of detectEntireSeries, not those of its halves', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'adp-job-worker-'));
    dirs.push(dir);
    const { bus, jobs } = await pieces(dir);
    const points = values(4000);
    const { record, messages } = job('job_00000000000000000000000000000001', [points], 450);
    await jobs.create(record);
    await worker(bus, jobs);
    await (await bus.producer()).send(TOPICS.jobs, messages);
    await until(async () => (await jobs.get(ORG, record.jobId))?.status === 'done');

    const rows = await jobs.results(ORG, record.jobId, { limit: 10_000 });
    const whole = detectEntireSeries(input(points), OPTIONS);
    expect(rows.map((row) => row.pointIndex)).toEqual(points.map((_, i) => i));
    expect(rows.map((row) => row.isAnomaly)).toEqual(whole.isAnomaly);
    expect(rows.map((row) => row.severity)).toEqual(whole.severity);
    expect((await jobs.progress(ORG, record.jobId)).periods.get(0)).toBe(whole.period);
    // The rule matters: the same points judged as two independent halves answer otherwise.
    const halves = [
      ...detectEntireSeries(input(points.slice(0, 2000)), OPTIONS).expectedValues,
      ...detectEntireSeries(input(points.slice(2000), 2000), OPTIONS).expectedValues,
    ];
    expect(halves).not.toEqual(whole.expectedValues);
  });

  it("a baseline read that fails delivers the batch again: the series is judged once the store answers", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'adp-job-worker-'));
    dirs.push(dir);
    const { bus, jobs } = await pieces(dir);
    const points = values(600);
    const { record, messages } = job('job_00000000000000000000000000000009', [points], 1000);
    await jobs.create(record);
    let reads = 0;
    const baselines = {
      async getBaseline() {
        reads++;
        if (reads === 1) throw new Error('store unreachable');
        return null;
      },
    };
    const running = await startJobWorker({ bus, jobs, groupId: 'jobs', partitions: 2, logger: silent, baselines });
    open.unshift({ close: () => running.stop() });
    await (await bus.producer()).send(TOPICS.jobs, messages);
    await until(async () => (await jobs.get(ORG, record.jobId))?.status === 'done');
    expect(reads).toBe(2);
    // Without a baseline: entire-series detection's flags.
    const rows = await jobs.results(ORG, record.jobId, { limit: 10_000 });
    expect(rows.map((row) => row.isAnomaly)).toEqual(detectEntireSeries(input(points), OPTIONS).isAnomaly);
  });

  it('a series the engine refuses fails the job, saying why and on which series; the worker goes on', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'adp-job-worker-'));
    dirs.push(dir);
    const { bus, jobs } = await pieces(dir);
    // A period longer than half the second series: the engine's refusal (the API checks it first;
    // this job bypasses the API).
    const bad = job('job_00000000000000000000000000000004', [values(3000), values(500)], 400);
    const badRecord: JobRecord = { ...bad.record, options: { ...bad.record.options, period: 1000 } };
    const good = job('job_00000000000000000000000000000005', [values(1000)], 400);
    await jobs.create(badRecord);
    await jobs.create(good.record);
    await worker(bus, jobs);
    await (await bus.producer()).send(TOPICS.jobs, [...bad.messages, ...good.messages]);
    await until(async () => (await jobs.get(ORG, good.record.jobId))?.status === 'done');
    await until(async () => (await jobs.get(ORG, badRecord.jobId))?.status === 'failed');
    expect((await jobs.get(ORG, badRecord.jobId))?.failure).toEqual({
      code: 'InvalidArgument',
      message: "The 'series' field must have more than 2 periods points",
      seriesIndex: 1,
      machineId: 'm-1',
    });
  });

  it('a crash between a series\' results and the commit of its last chunk: the redelivered chunk finds the series judged', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'adp-job-worker-'));
    dirs.push(dir);
    const jobs = await createDuckDbJobStore({ dataDir: dir });
    // One message a batch: every chunk but the last is committed before the series is judged.
    const bus = await openDurableInProcessBus({ dir: join(dir, 'bus'), maxBatchMessages: 1 });
    open.push(jobs, bus);
    const points = values(2000);
    const { record, messages } = job('job_00000000000000000000000000000003', [points], 300);
    await jobs.create(record);
    let crashed = false;
    let written = 0;
    const crashing: JobStore = {
      ...jobs,
      completeSeries: async (orgId, jobId, judged) => {
        await jobs.completeSeries(orgId, jobId, judged);
        written += 1;
        if (!crashed) {
          crashed = true;
          throw new Error('process killed after writing the results');
        }
      },
    };
    const running = await startJobWorker({ bus, jobs: crashing, groupId: 'jobs', partitions: 1, logger: silent });
    open.unshift({ close: () => running.stop() });
    await (await bus.producer()).send(TOPICS.jobs, messages);
    await until(async () => (await jobs.get(ORG, record.jobId))?.status === 'done');
    expect(crashed).toBe(true);
    // Judged once: the redelivered last chunk did not judge the series again or fail the job.
    expect(written).toBe(1);
    const rows = await jobs.results(ORG, record.jobId, { limit: 10_000 });
    expect(rows.map((row) => row.isAnomaly)).toEqual(detectEntireSeries(input(points), OPTIONS).isAnomaly);
  });

  it('a crash mid-job: a new worker on the same data directory completes it, one row per point', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'adp-job-worker-'));
    dirs.push(dir);
    const series = [values(3000), values(2500).map((v) => v * 2)];
    const { record, messages } = job('job_00000000000000000000000000000002', series, 400);
    {
      const { bus, jobs } = await pieces(dir);
      await jobs.create(record);
      // The first process dies while writing the second series' results (after the first
      // series' are in), before its bus offsets are committed.
      let failures = 0;
      const crashing: JobStore = {
        ...jobs,
        completeSeries: async (orgId, jobId, judged) => {
          const others = judged.filter((one) => one.seriesIndex !== 1);
          if (others.length > 0) await jobs.completeSeries(orgId, jobId, others);
          if (others.length < judged.length) {
            failures += 1;
            throw new Error('process killed');
          }
        },
      };
      const first = await startJobWorker({ bus, jobs: crashing, groupId: 'jobs', partitions: 2, logger: silent });
      await (await bus.producer()).send(TOPICS.jobs, messages);
      await until(async () => failures > 0 && (await jobs.progress(ORG, record.jobId)).seriesDone === 1);
      await first.stop();
      await bus.close();
      await jobs.close();
      open.splice(0);
    }
    const { bus, jobs } = await pieces(dir);
    expect((await jobs.get(ORG, record.jobId))?.status).toBe('running');
    await worker(bus, jobs);
    await until(async () => (await jobs.get(ORG, record.jobId))?.status === 'done');
    const rows = await jobs.results(ORG, record.jobId, { limit: 10_000 });
    expect(rows).toHaveLength(5500);
    expect(new Set(rows.map((row) => `${row.seriesIndex}/${row.pointIndex}`)).size).toBe(5500);
    for (const [index, one] of series.entries()) {
      expect(rows.filter((row) => row.seriesIndex === index).map((row) => row.isAnomaly)).toEqual(detectEntireSeries(input(one), OPTIONS).isAnomaly);
    }
    expect(await jobs.progress(ORG, record.jobId)).toMatchObject({ seriesDone: 2, pointsDone: 5500 });
  });
});
