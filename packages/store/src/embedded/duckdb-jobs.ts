// Jobs on the embedded default: a DuckDB file of their own under the data directory (`jobs.duckdb`,
// beside results.duckdb), so an accepted job, its staged chunks and its results survive a
// restart. A judged series' rows replace the series' earlier rows in one transaction (delete,
// then append): a series judged twice (a restart between its results and the bus commit) still
// has one row per point. One statement at a time on the one connection; values always bound.
import { DuckDBBlobValue, blobValue, type DuckDBValue } from '@duckdb/node-api';
import { appendJudgedPoint, embeddedUnavailable, JUDGED_POINT_COLUMNS_SQL, judgedPointOf, openDuckDbFile } from './duckdb-file.js';
import { JUDGED_POINT_COLUMN_NAMES } from '../judged-point.js';
import {
  FINISHED_JOB_STATUSES,
  type JobEpisode,
  type JobRecord,
  type JobResultRow,
  type JobStatus,
  type JobStore,
} from '../jobs.js';

export interface DuckDbJobStoreOptions {
  /** Directory of the file; created (mode 0700) when absent. */
  readonly dataDir: string;
  /** Default `jobs.duckdb`. */
  readonly fileName?: string;
}

const SCHEMA = `
CREATE TABLE IF NOT EXISTS jobs (
  job_id VARCHAR PRIMARY KEY,
  org_id VARCHAR NOT NULL,
  idempotency_key VARCHAR,
  created_at_ms BIGINT NOT NULL,
  status VARCHAR NOT NULL,
  record VARCHAR NOT NULL
);
CREATE TABLE IF NOT EXISTS job_chunks (
  job_id VARCHAR NOT NULL,
  series_index INTEGER NOT NULL,
  chunk_index INTEGER NOT NULL,
  message BLOB NOT NULL,
  PRIMARY KEY (job_id, series_index, chunk_index)
);
CREATE TABLE IF NOT EXISTS job_series (
  job_id VARCHAR NOT NULL,
  series_index INTEGER NOT NULL,
  points BIGINT NOT NULL,
  period BIGINT NOT NULL,
  episodes VARCHAR NOT NULL,
  PRIMARY KEY (job_id, series_index)
);
CREATE TABLE IF NOT EXISTS job_results (
  job_id VARCHAR NOT NULL,
  series_index INTEGER NOT NULL,
  point_index BIGINT NOT NULL,
  ts_ms BIGINT,
  ${JUDGED_POINT_COLUMNS_SQL}
);`;

const RESULT_COLUMNS = ['series_index', 'point_index', 'ts_ms', ...JUDGED_POINT_COLUMN_NAMES].join(', ');

function resultOf(row: Record<string, DuckDBValue>): JobResultRow {
  const num = (value: DuckDBValue | undefined): number => Number(value);
  return {
    seriesIndex: num(row['series_index']),
    pointIndex: num(row['point_index']),
    tsMs: row['ts_ms'] === null || row['ts_ms'] === undefined ? null : num(row['ts_ms']),
    ...judgedPointOf(row),
  };
}

export async function createDuckDbJobStore(options: DuckDbJobStoreOptions): Promise<JobStore> {
  const file = await openDuckDbFile(options.dataDir, options.fileName ?? 'jobs.duckdb', SCHEMA, 'the job store');
  const { filePath, connection, serial, assertOpen } = file;

  /** Runs `operation` on the connection in turn, its failures as EMBEDDED_STORE_UNAVAILABLE naming `what`. */
  function run<T>(what: string, operation: () => Promise<T>): Promise<T> {
    assertOpen();
    return serial(async () => {
      try {
        return await operation();
      } catch (cause) {
        throw embeddedUnavailable(`${what} (${filePath})`, cause);
      }
    });
  }

  async function readJob(orgId: string, jobId: string): Promise<JobRecord | null> {
    const reader = await connection.runAndReadAll('SELECT record FROM jobs WHERE job_id = $1 AND org_id = $2', [jobId, orgId]);
    const row = reader.getRowObjects()[0];
    return row ? (JSON.parse(String(row['record'])) as JobRecord) : null;
  }

  /** The job's status, or null: an ownership check without reading the record. */
  async function readStatus(orgId: string, jobId: string): Promise<JobStatus | null> {
    const reader = await connection.runAndReadAll('SELECT status FROM jobs WHERE job_id = $1 AND org_id = $2', [jobId, orgId]);
    const row = reader.getRowObjects()[0];
    return row ? (String(row['status']) as JobStatus) : null;
  }

  async function transaction<T>(body: () => Promise<T>): Promise<T> {
    await connection.run('BEGIN TRANSACTION');
    try {
      const result = await body();
      await connection.run('COMMIT');
      return result;
    } catch (error) {
      await connection.run('ROLLBACK').catch(() => undefined);
      throw error;
    }
  }

  async function dropJobData(jobId: string, what: 'all' | 'chunks'): Promise<void> {
    await connection.run('DELETE FROM job_chunks WHERE job_id = $1', [jobId]);
    if (what === 'chunks') return;
    await connection.run('DELETE FROM job_results WHERE job_id = $1', [jobId]);
    await connection.run('DELETE FROM job_series WHERE job_id = $1', [jobId]);
  }

  return {
    create: (job) =>
      run('recording a job', async () => {
        if (job.idempotencyKey !== null) {
          const reader = await connection.runAndReadAll('SELECT record FROM jobs WHERE org_id = $1 AND idempotency_key = $2', [
            job.orgId,
            job.idempotencyKey,
          ]);
          const row = reader.getRowObjects()[0];
          if (row) return { job: JSON.parse(String(row['record'])) as JobRecord, created: false };
        }
        await connection.run(
          'INSERT INTO jobs (job_id, org_id, idempotency_key, created_at_ms, status, record) VALUES ($1, $2, $3, CAST($4 AS BIGINT), $5, $6)',
          [job.jobId, job.orgId, job.idempotencyKey, job.createdAtMs, job.status, JSON.stringify(job)],
        );
        return { job, created: true };
      }),

    get: (orgId, jobId) => run('reading a job', () => readJob(orgId, jobId)),

    byIdempotencyKey: (orgId, idempotencyKey) =>
      run('reading a job', async () => {
        const reader = await connection.runAndReadAll('SELECT record FROM jobs WHERE org_id = $1 AND idempotency_key = $2', [orgId, idempotencyKey]);
        const row = reader.getRowObjects()[0];
        return row ? (JSON.parse(String(row['record'])) as JobRecord) : null;
      }),

    list: (orgId, { limit, before }) =>
      run('listing jobs', async () => {
        const values: DuckDBValue[] = [orgId, limit];
        let where = 'org_id = $1';
        if (before !== undefined) {
          values.push(before);
          where +=
            ' AND (created_at_ms, job_id) < (SELECT (created_at_ms, job_id) FROM jobs WHERE job_id = $3 AND org_id = $1)';
        }
        const reader = await connection.runAndReadAll(
          `SELECT record FROM jobs WHERE ${where} ORDER BY created_at_ms DESC, job_id DESC LIMIT CAST($2 AS BIGINT)`,
          values,
        );
        return reader.getRowObjects().map((row) => JSON.parse(String(row['record'])) as JobRecord);
      }),

    transition: (orgId, jobId, from, transition) =>
      run('updating a job', () =>
        transaction(async () => {
          const job = await readJob(orgId, jobId);
          if (!job || !from.includes(job.status)) return false;
          const next: JobRecord = {
            ...job,
            status: transition.status,
            ...(transition.startedAtMs !== undefined ? { startedAtMs: transition.startedAtMs } : {}),
            ...(transition.finishedAtMs !== undefined ? { finishedAtMs: transition.finishedAtMs } : {}),
            ...(transition.failure !== undefined ? { failure: transition.failure } : {}),
          };
          await connection.run('UPDATE jobs SET status = $1, record = $2 WHERE job_id = $3', [next.status, JSON.stringify(next), jobId]);
          if (transition.status === 'cancelled') await dropJobData(jobId, 'all');
          else if (FINISHED_JOB_STATUSES.includes(transition.status)) await dropJobData(jobId, 'chunks');
          return true;
        }),
      ),

    remove: (orgId, jobId) =>
      run('removing a job', () =>
        transaction(async () => {
          if ((await readStatus(orgId, jobId)) === null) return false;
          await dropJobData(jobId, 'all');
          await connection.run('DELETE FROM jobs WHERE job_id = $1', [jobId]);
          return true;
        }),
      ),

    activeLoad: (orgId) =>
      run('reading the active jobs', async () => {
        const statuses = FINISHED_JOB_STATUSES as readonly JobStatus[];
        const reader = await connection.runAndReadAll(
          `SELECT count(*) AS jobs,
                  coalesce(sum(CAST(json_extract(j.record, '$.pointsTotal') AS BIGINT)), 0)
                    - coalesce(sum((SELECT sum(points) FROM job_series s WHERE s.job_id = j.job_id)), 0) AS pending
           FROM jobs j WHERE org_id = $1 AND status NOT IN ($2, $3, $4)`,
          [orgId, ...statuses],
        );
        const row = reader.getRowObjects()[0];
        return { jobs: Number(row?.['jobs'] ?? 0), pointsPending: Number(row?.['pending'] ?? 0) };
      }),

    stageChunk: (orgId, jobId, seriesIndex, chunkIndex, message) =>
      run('staging a chunk', async () => {
        await connection.run(
          `INSERT INTO job_chunks (job_id, series_index, chunk_index, message)
           SELECT $1, $2, $3, $4 WHERE EXISTS (SELECT 1 FROM jobs WHERE job_id = $1 AND org_id = $5 AND status IN ('queued', 'running'))
           ON CONFLICT (job_id, series_index, chunk_index) DO UPDATE SET message = excluded.message`,
          [jobId, seriesIndex, chunkIndex, blobValue(message), orgId],
        );
      }),

    stagedChunks: (orgId, jobId, seriesIndex) =>
      run('reading staged chunks', async () => {
        const reader = await connection.runAndReadAll(
          `SELECT chunk_index, message FROM job_chunks c
           WHERE job_id = $1 AND series_index = $2 AND EXISTS (SELECT 1 FROM jobs WHERE job_id = $1 AND org_id = $3)
           ORDER BY chunk_index`,
          [jobId, seriesIndex, orgId],
        );
        const chunks = new Map<number, Buffer>();
        for (const row of reader.getRowObjects()) {
          const message = row['message'];
          if (message instanceof DuckDBBlobValue) chunks.set(Number(row['chunk_index']), Buffer.from(message.bytes));
        }
        return chunks;
      }),

    completeSeries: (orgId, jobId, judged) =>
      run('writing judged series', () =>
        transaction(async () => {
          const status = await readStatus(orgId, jobId);
          if (status === null || FINISHED_JOB_STATUSES.includes(status) || judged.length === 0) return;
          for (const one of judged) {
            // Rows of the series exist only if it was judged before (its rows and its job_series
            // row are written in one transaction): the delete, a scan of the table, only then.
            const before = await connection.runAndReadAll('SELECT 1 FROM job_series WHERE job_id = $1 AND series_index = $2', [jobId, one.seriesIndex]);
            if (before.getRowObjects().length > 0) {
              await connection.run('DELETE FROM job_results WHERE job_id = $1 AND series_index = $2', [jobId, one.seriesIndex]);
            }
          }
          const appender = await connection.createAppender('job_results');
          for (const one of judged) {
            for (const row of one.rows) {
              appender.appendVarchar(jobId);
              appender.appendInteger(row.seriesIndex);
              appender.appendBigInt(BigInt(row.pointIndex));
              if (row.tsMs === null) appender.appendNull();
              else appender.appendBigInt(BigInt(row.tsMs));
              appendJudgedPoint(appender, row);
              appender.endRow();
            }
          }
          appender.closeSync();
          for (const one of judged) {
            await connection.run(
              `INSERT INTO job_series (job_id, series_index, points, period, episodes) VALUES ($1, $2, CAST($3 AS BIGINT), CAST($4 AS BIGINT), $5)
               ON CONFLICT (job_id, series_index) DO UPDATE SET points = excluded.points, period = excluded.period, episodes = excluded.episodes`,
              [jobId, one.seriesIndex, one.rows.length, one.period, JSON.stringify(one.episodes)],
            );
          }
          for (const one of judged) {
            await connection.run('DELETE FROM job_chunks WHERE job_id = $1 AND series_index = $2', [jobId, one.seriesIndex]);
          }
        }),
      ),

    progress: (orgId, jobId) =>
      run('reading a job\'s progress', async () => {
        const reader = await connection.runAndReadAll(
          `SELECT series_index, points, period FROM job_series
           WHERE job_id = $1 AND EXISTS (SELECT 1 FROM jobs WHERE job_id = $1 AND org_id = $2)`,
          [jobId, orgId],
        );
        let pointsDone = 0;
        const periods = new Map<number, number>();
        for (const row of reader.getRowObjects()) {
          pointsDone += Number(row['points']);
          periods.set(Number(row['series_index']), Number(row['period']));
        }
        return { seriesDone: periods.size, pointsDone, periods };
      }),

    results: (orgId, jobId, { limit, after }) =>
      run('reading job results', async () => {
        const values: DuckDBValue[] = [jobId, orgId, limit];
        let where = 'job_id = $1 AND EXISTS (SELECT 1 FROM jobs WHERE job_id = $1 AND org_id = $2)';
        if (after !== undefined) {
          values.push(after.seriesIndex, after.pointIndex);
          where += ' AND (series_index > $4 OR (series_index = $4 AND point_index > CAST($5 AS BIGINT)))';
        }
        const reader = await connection.runAndReadAll(
          `SELECT ${RESULT_COLUMNS} FROM job_results WHERE ${where} ORDER BY series_index, point_index LIMIT CAST($3 AS BIGINT)`,
          values,
        );
        return reader.getRowObjects().map(resultOf);
      }),

    episodes: (orgId, jobId) =>
      run('reading job episodes', async () => {
        const reader = await connection.runAndReadAll(
          `SELECT episodes FROM job_series
           WHERE job_id = $1 AND EXISTS (SELECT 1 FROM jobs WHERE job_id = $1 AND org_id = $2) ORDER BY series_index`,
          [jobId, orgId],
        );
        return reader.getRowObjects().flatMap((row) => JSON.parse(String(row['episodes'])) as JobEpisode[]);
      }),

    async ping(): Promise<void> {},
    close: () => file.close(),
  };
}
