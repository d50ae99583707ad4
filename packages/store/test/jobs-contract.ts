// The contract every JobStore adapter passes (memory, DuckDB here; ClickHouse in test/integration).
import { expect, it } from 'vitest';
import type { JobEpisode, JobRecord, JobResultRow, JobStore } from '../src/index.js';

export function jobRecord(overrides: Partial<JobRecord> = {}): JobRecord {
  return {
    jobId: `job_${'0'.repeat(31)}1`,
    orgId: 'org_a',
    status: 'queued',
    idempotencyKey: null,
    requestHash: 'a'.repeat(64),
    series: [
      { machineId: 'pump-1', points: 4, chunks: 2, timestamps: true },
      { machineId: null, points: 2, chunks: 1, timestamps: false },
    ],
    pointsTotal: 6,
    options: { granularity: 'minutely', customInterval: 1, imputeMode: 'auto', sensitivity: 95, maxAnomalyRatio: 0.25 },
    createdAtMs: 1_700_000_000_000,
    startedAtMs: null,
    finishedAtMs: null,
    failure: null,
    ...overrides,
  };
}

export function resultRows(seriesIndex: number, points: number, flagged: readonly number[] = []): JobResultRow[] {
  return Array.from({ length: points }, (_, pointIndex) => ({
    seriesIndex,
    pointIndex,
    tsMs: seriesIndex === 0 ? 1_700_000_000_000 + pointIndex * 60_000 : null,
    value: pointIndex * 1.5,
    expectedValue: 1,
    upperMargin: 2,
    lowerMargin: 2,
    isAnomaly: flagged.includes(pointIndex),
    isPositiveAnomaly: flagged.includes(pointIndex),
    isNegativeAnomaly: false,
    severity: flagged.includes(pointIndex) ? 0.5 + pointIndex / 100 : 0,
  }));
}

/** Registers the contract's tests; `open` gives a fresh, empty store. */
export function jobStoreContract(open: () => Promise<JobStore>): void {
  it('records a job, reads it only for its organization, and lists newest first', async () => {
    const store = await open();
    try {
      const first = jobRecord();
      const second = jobRecord({ jobId: `job_${'0'.repeat(31)}2`, createdAtMs: first.createdAtMs + 1 });
      expect(await store.create(first)).toEqual({ job: first, created: true });
      await store.create(second);
      await store.create(jobRecord({ jobId: `job_${'0'.repeat(31)}3`, orgId: 'org_b' }));
      expect(await store.get('org_a', first.jobId)).toEqual(first);
      expect(await store.get('org_b', first.jobId)).toBeNull();
      expect((await store.list('org_a', { limit: 10 })).map((job) => job.jobId)).toEqual([second.jobId, first.jobId]);
      expect((await store.list('org_a', { limit: 1, before: second.jobId })).map((job) => job.jobId)).toEqual([first.jobId]);
    } finally {
      await store.close();
    }
  });

  it('answers the existing job for an idempotency key the organization used', async () => {
    const store = await open();
    try {
      const first = jobRecord({ idempotencyKey: 'k-1' });
      await store.create(first);
      const again = await store.create(jobRecord({ jobId: `job_${'0'.repeat(31)}9`, idempotencyKey: 'k-1' }));
      expect(again).toEqual({ job: first, created: false });
      expect(await store.byIdempotencyKey('org_a', 'k-1')).toEqual(first);
      expect(await store.byIdempotencyKey('org_b', 'k-1')).toBeNull();
      const otherOrg = await store.create(jobRecord({ jobId: `job_${'0'.repeat(31)}8`, orgId: 'org_b', idempotencyKey: 'k-1' }));
      expect(otherOrg.created).toBe(true);
    } finally {
      await store.close();
    }
  });

  it('stages chunks, completes series with one row per point, pages results and tracks progress', async () => {
    const store = await open();
    try {
      const job = jobRecord();
      await store.create(job);
      expect(await store.transition('org_a', job.jobId, ['queued'], { status: 'running', startedAtMs: 5 })).toBe(true);
      expect(await store.transition('org_a', job.jobId, ['queued'], { status: 'running' })).toBe(false);
      await store.stageChunk('org_a', job.jobId, 0, 1, Buffer.from('second'));
      await store.stageChunk('org_a', job.jobId, 0, 0, Buffer.from('first'));
      await store.stageChunk('org_a', job.jobId, 0, 0, Buffer.from('first again'));
      await store.stageChunk('org_b', job.jobId, 0, 2, Buffer.from('not theirs'));
      expect(await store.stagedChunks('org_a', job.jobId, 0)).toEqual(new Map([[0, Buffer.from('first again')], [1, Buffer.from('second')]]));
      expect(await store.activeLoad('org_a')).toEqual({ jobs: 1, pointsPending: 6 });

      const rows = resultRows(0, 4, [1, 2]);
      const episode: JobEpisode = {
        seriesIndex: 0,
        firstPoint: 1,
        lastPoint: 2,
        firstTsMs: rows[1]!.tsMs,
        lastTsMs: rows[2]!.tsMs,
        peakSeverity: rows[2]!.severity,
        direction: 'positive',
        flaggedPoints: 2,
        closed: false,
      };
      const judged = { seriesIndex: 0, period: 0, rows, episodes: [episode] };
      await store.completeSeries('org_a', job.jobId, [judged]);
      // Judged again (a replay after a restart): still one row per point.
      await store.completeSeries('org_a', job.jobId, [judged]);
      expect(await store.stagedChunks('org_a', job.jobId, 0)).toEqual(new Map());
      await store.completeSeries('org_a', job.jobId, [{ seriesIndex: 1, period: 0, rows: resultRows(1, 2), episodes: [] }]);
      const progress = await store.progress('org_a', job.jobId);
      expect({ seriesDone: progress.seriesDone, pointsDone: progress.pointsDone }).toEqual({ seriesDone: 2, pointsDone: 6 });
      expect(await store.activeLoad('org_a')).toEqual({ jobs: 1, pointsPending: 0 });

      const all = await store.results('org_a', job.jobId, { limit: 100 });
      expect(all).toEqual([...rows, ...resultRows(1, 2)]);
      const page = await store.results('org_a', job.jobId, { limit: 2, after: { seriesIndex: 0, pointIndex: 2 } });
      expect(page.map((row) => [row.seriesIndex, row.pointIndex])).toEqual([[0, 3], [1, 0]]);
      expect(await store.results('org_b', job.jobId, { limit: 100 })).toEqual([]);
      expect(await store.episodes('org_a', job.jobId)).toEqual([episode]);

      expect(await store.transition('org_a', job.jobId, ['running'], { status: 'done', finishedAtMs: 9 })).toBe(true);
      expect(await store.get('org_a', job.jobId)).toEqual({ ...job, status: 'done', startedAtMs: 5, finishedAtMs: 9 });
      expect(await store.activeLoad('org_a')).toEqual({ jobs: 0, pointsPending: 0 });
      expect(await store.remove('org_b', job.jobId)).toBe(false);
      expect(await store.remove('org_a', job.jobId)).toBe(true);
      expect(await store.get('org_a', job.jobId)).toBeNull();
      expect(await store.results('org_a', job.jobId, { limit: 100 })).toEqual([]);
    } finally {
      await store.close();
    }
  });

  it('a cancelled job keeps its record and loses its staged chunks and results', async () => {
    const store = await open();
    try {
      const job = jobRecord();
      await store.create(job);
      await store.stageChunk('org_a', job.jobId, 0, 0, Buffer.from('x'));
      await store.completeSeries('org_a', job.jobId, [{ seriesIndex: 1, period: 0, rows: resultRows(1, 2), episodes: [] }]);
      expect(await store.transition('org_a', job.jobId, ['queued', 'running'], { status: 'cancelled', finishedAtMs: 3 })).toBe(true);
      expect((await store.get('org_a', job.jobId))?.status).toBe('cancelled');
      expect(await store.stagedChunks('org_a', job.jobId, 0)).toEqual(new Map());
      expect(await store.results('org_a', job.jobId, { limit: 10 })).toEqual([]);
      // A worker still at it: nothing is staged or written for the cancelled job.
      await store.stageChunk('org_a', job.jobId, 0, 1, Buffer.from('late'));
      await store.completeSeries('org_a', job.jobId, [{ seriesIndex: 0, period: 0, rows: resultRows(0, 4), episodes: [] }]);
      expect(await store.stagedChunks('org_a', job.jobId, 0)).toEqual(new Map());
      expect(await store.results('org_a', job.jobId, { limit: 10 })).toEqual([]);
    } finally {
      await store.close();
    }
  });
}
