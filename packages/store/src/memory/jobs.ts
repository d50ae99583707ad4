// Jobs in memory: for tests and for a process that runs without a data directory. Gone on restart.
import { StreamingError } from '@adp/streaming/errors';
import {
  FINISHED_JOB_STATUSES,
  isAfter,
  type JobEpisode,
  type JobRecord,
  type JobResultRow,
  type JobStore,
  type JudgedSeries,
} from '../jobs.js';

interface Entry {
  job: JobRecord;
  readonly staged: Map<number, Map<number, Buffer>>;
  readonly done: Map<number, { points: number; period: number; rows: readonly JobResultRow[]; episodes: readonly JobEpisode[] }>;
}

export function createMemoryJobStore(): JobStore {
  const jobs = new Map<string, Entry>();
  let closed = false;
  const assertOpen = (): void => {
    if (closed) throw new StreamingError('STREAMING_CLOSED', 'the job store is closed');
  };
  const entryOf = (orgId: string, jobId: string): Entry | null => {
    const entry = jobs.get(jobId);
    return entry && entry.job.orgId === orgId ? entry : null;
  };

  return {
    async create(job) {
      assertOpen();
      if (job.idempotencyKey !== null) {
        for (const { job: existing } of jobs.values()) {
          if (existing.orgId === job.orgId && existing.idempotencyKey === job.idempotencyKey) return { job: existing, created: false };
        }
      }
      jobs.set(job.jobId, { job, staged: new Map(), done: new Map() });
      return { job, created: true };
    },
    async byIdempotencyKey(orgId, idempotencyKey) {
      assertOpen();
      for (const { job } of jobs.values()) if (job.orgId === orgId && job.idempotencyKey === idempotencyKey) return job;
      return null;
    },
    async get(orgId, jobId) {
      assertOpen();
      return entryOf(orgId, jobId)?.job ?? null;
    },
    async list(orgId, { limit, before }) {
      assertOpen();
      const mine = [...jobs.values()]
        .map((entry) => entry.job)
        .filter((job) => job.orgId === orgId)
        .sort((a, b) => b.createdAtMs - a.createdAtMs || (a.jobId < b.jobId ? 1 : -1));
      const start = before === undefined ? 0 : mine.findIndex((job) => job.jobId === before) + 1;
      return before !== undefined && start === 0 ? [] : mine.slice(start, start + limit);
    },
    async transition(orgId, jobId, from, transition) {
      assertOpen();
      const entry = entryOf(orgId, jobId);
      if (!entry || !from.includes(entry.job.status)) return false;
      entry.job = {
        ...entry.job,
        status: transition.status,
        ...(transition.startedAtMs !== undefined ? { startedAtMs: transition.startedAtMs } : {}),
        ...(transition.finishedAtMs !== undefined ? { finishedAtMs: transition.finishedAtMs } : {}),
        ...(transition.failure !== undefined ? { failure: transition.failure } : {}),
      };
      if (FINISHED_JOB_STATUSES.includes(transition.status)) entry.staged.clear();
      if (transition.status === 'cancelled') entry.done.clear();
      return true;
    },
    async remove(orgId, jobId) {
      assertOpen();
      if (!entryOf(orgId, jobId)) return false;
      jobs.delete(jobId);
      return true;
    },
    async activeLoad(orgId) {
      assertOpen();
      let count = 0;
      let pointsPending = 0;
      for (const entry of jobs.values()) {
        if (entry.job.orgId !== orgId || FINISHED_JOB_STATUSES.includes(entry.job.status)) continue;
        count += 1;
        let done = 0;
        for (const series of entry.done.values()) done += series.points;
        pointsPending += entry.job.pointsTotal - done;
      }
      return { jobs: count, pointsPending };
    },
    async stageChunk(orgId, jobId, seriesIndex, chunkIndex, message) {
      assertOpen();
      const entry = entryOf(orgId, jobId);
      if (!entry || FINISHED_JOB_STATUSES.includes(entry.job.status)) return;
      let series = entry.staged.get(seriesIndex);
      if (!series) entry.staged.set(seriesIndex, (series = new Map()));
      series.set(chunkIndex, Buffer.from(message));
    },
    async stagedChunks(orgId, jobId, seriesIndex) {
      assertOpen();
      return new Map(entryOf(orgId, jobId)?.staged.get(seriesIndex) ?? []);
    },
    async completeSeries(orgId, jobId, judged: readonly JudgedSeries[]) {
      assertOpen();
      const entry = entryOf(orgId, jobId);
      if (!entry || FINISHED_JOB_STATUSES.includes(entry.job.status)) return;
      for (const one of judged) {
        entry.done.set(one.seriesIndex, { points: one.rows.length, period: one.period, rows: [...one.rows], episodes: [...one.episodes] });
        entry.staged.delete(one.seriesIndex);
      }
    },
    async progress(orgId, jobId) {
      assertOpen();
      const entry = entryOf(orgId, jobId);
      let pointsDone = 0;
      const periods = new Map<number, number>();
      for (const [index, series] of entry?.done ?? []) {
        pointsDone += series.points;
        periods.set(index, series.period);
      }
      return { seriesDone: periods.size, pointsDone, periods };
    },
    async results(orgId, jobId, { limit, after }) {
      assertOpen();
      const entry = entryOf(orgId, jobId);
      if (!entry) return [];
      const out: JobResultRow[] = [];
      const indexes = [...entry.done.keys()].sort((a, b) => a - b);
      for (const index of indexes) {
        if (after !== undefined && index < after.seriesIndex) continue;
        for (const row of entry.done.get(index)!.rows) {
          if (!isAfter(row, after)) continue;
          out.push(row);
          if (out.length >= limit) return out;
        }
      }
      return out;
    },
    async episodes(orgId, jobId) {
      assertOpen();
      const entry = entryOf(orgId, jobId);
      if (!entry) return [];
      return [...entry.done.entries()].sort(([a], [b]) => a - b).flatMap(([, series]) => series.episodes);
    },
    async close() {
      closed = true;
    },
  };
}
