// Jobs in the scale-out configuration: the tables of schemas/clickhouse/0012_jobs.sql, shared by
// every API replica and job worker. Every table is a ReplacingMergeTree read with FINAL, so a
// write replayed after a crash (a chunk staged again, a series judged again) leaves one row per
// key: one result row per point. A status change writes the job's row again with a higher
// version; ClickHouse has no transactions, so two replicas changing one job at once (a cancel
// racing the last series' completion) end with whichever wrote last. A removed job is a
// tombstone row; its results and chunks go in a background `ALTER TABLE ... DELETE` mutation.
// Queries interpolate only the validated database name, escaped literals and checked integers:
// ClickHouse 18.16 has no server-side query parameters.
import { Readable } from 'node:stream';
import { clickHouseError, judgedPointOfRecord, openClickHouse } from './client.js';
import { JUDGED_POINT_COLUMN_NAMES, type JudgedPointRecord } from '../judged-point.js';
import { JUDGED_POINT_ROW_BINARY_BYTES, RowBinaryWriter, writeJudgedPoint } from './row-binary.js';
import { StreamingError } from '@adp/streaming/errors';
import { sqlInteger, sqlString } from './sql.js';
import { FINISHED_JOB_STATUSES, type JobEpisode, type JobRecord, type JobResultRow, type JobStore } from '../jobs.js';

export interface ClickHouseJobStoreOptions {
  readonly url: string;
  /** Database of the job tables; a plain identifier. Default `adp`. */
  readonly database?: string;
  /** Apply schemas/clickhouse/ migrations before the first use. Default true. */
  readonly migrate?: boolean;
  /** Per-request timeout, ms. Default 60000 (a million result rows is one long insert). */
  readonly requestTimeoutMs?: number;
}

/** job_results' columns in table order (schemas/clickhouse/0012_jobs.sql): `encodeJobResultsRowBinary`'s layout. */
const JOB_RESULT_COLUMNS = ['job_id', 'series_index', 'point_index', 'ts_ms', ...JUDGED_POINT_COLUMN_NAMES, 'written_at_ms'];

/** Result rows per INSERT. */
const ROWS_PER_INSERT = 100_000;

/**
 * Result rows as RowBinary in the column order of job_results: every double stored bit for bit
 * (18.16 parses text doubles to the nearest but one in places), and a quarter of JSON's bytes.
 */
export function encodeJobResultsRowBinary(jobId: string, rows: readonly JobResultRow[], writtenAtMs: number): Buffer {
  const id = Buffer.from(jobId, 'utf8');
  if (id.length >= 0x80) throw new StreamingError('VALUE_INVALID', 'encodeJobResultsRowBinary: job id too long');
  // Per row: id (1 + length), series 4, point 8, ts 1 (+8), the judged point, written 8.
  let size = 0;
  for (const row of rows) size += 1 + id.length + 4 + 8 + 1 + (row.tsMs === null ? 0 : 8) + JUDGED_POINT_ROW_BINARY_BYTES + 8;
  const out = new RowBinaryWriter(size);
  for (const row of rows) {
    out.uint8(id.length);
    out.raw(id);
    out.uint32(row.seriesIndex);
    out.int64(row.pointIndex);
    out.nullableInt64(row.tsMs);
    writeJudgedPoint(out, row);
    out.int64(writtenAtMs);
  }
  return out.finish();
}

interface ResultRecord extends JudgedPointRecord {
  series_index: number;
  point_index: number;
  ts_ms: number | null;
}

export async function createClickHouseJobStore(options: ClickHouseJobStoreOptions): Promise<JobStore> {
  const { client, database } = await openClickHouse({
    ...options,
    database: options.database ?? 'adp',
    requestTimeoutMs: options.requestTimeoutMs ?? 60_000,
  });
  let closed = false;
  // Versions of the job rows this process writes: never below the clock, always rising.
  let lastVersion = 0;
  const nextVersion = (): number => (lastVersion = Math.max(Date.now(), lastVersion + 1));

  function assertOpen(): void {
    if (closed) throw new StreamingError('STREAMING_CLOSED', 'the ClickHouse job store is closed');
  }

  async function select<T>(query: string, what: string): Promise<T[]> {
    assertOpen();
    try {
      const result = await client.query({ query, format: 'JSONEachRow' });
      return await result.json<T>();
    } catch (error) {
      throw clickHouseError(error, what, database);
    }
  }

  async function insert(table: string, values: readonly unknown[], what: string): Promise<void> {
    assertOpen();
    if (values.length === 0) return;
    try {
      await client.insert({ table: `${database}.${table}`, values: values as unknown[], format: 'JSONEachRow' });
    } catch (error) {
      throw clickHouseError(error, what, database);
    }
  }

  async function command(query: string, what: string): Promise<void> {
    assertOpen();
    try {
      await client.command({ query });
    } catch (error) {
      throw clickHouseError(error, what, database);
    }
  }

  const org = (orgId: string): string => `org_id = ${sqlString(orgId)}`;
  const job = (jobId: string): string => `job_id = ${sqlString(jobId)}`;

  async function readJobs(where: string, tail = ''): Promise<JobRecord[]> {
    const rows = await select<{ record: string }>(
      `SELECT record FROM ${database}.jobs FINAL WHERE ${where} AND deleted = 0 ${tail}`,
      'reading jobs',
    );
    return rows.map((row) => JSON.parse(row.record) as JobRecord);
  }

  async function readJob(orgId: string, jobId: string): Promise<JobRecord | null> {
    return (await readJobs(`${org(orgId)} AND ${job(jobId)}`))[0] ?? null;
  }

  async function writeJob(record: JobRecord, deleted = false): Promise<void> {
    await insert(
      'jobs',
      [
        {
          org_id: record.orgId,
          job_id: record.jobId,
          idempotency_key: record.idempotencyKey ?? '',
          created_at_ms: record.createdAtMs,
          status: record.status,
          points_total: record.pointsTotal,
          record: JSON.stringify(record),
          deleted: deleted ? 1 : 0,
          version: nextVersion(),
        },
      ],
      `writing job ${record.jobId}`,
    );
  }

  async function dropData(jobId: string, what: 'all' | 'chunks'): Promise<void> {
    await command(`ALTER TABLE ${database}.job_chunks DELETE WHERE ${job(jobId)}`, 'dropping staged chunks');
    if (what === 'chunks') return;
    await command(`ALTER TABLE ${database}.job_results DELETE WHERE ${job(jobId)}`, 'dropping job results');
    await command(`ALTER TABLE ${database}.job_series DELETE WHERE ${job(jobId)}`, 'dropping judged series');
  }

  async function seriesOf(jobId: string): Promise<{ series_index: number; points: number; period: number; episodes: string }[]> {
    return select(
      `SELECT series_index, points, period, episodes FROM ${database}.job_series FINAL WHERE ${job(jobId)} ORDER BY series_index`,
      'reading judged series',
    );
  }

  /** Whether the job's results are to be read: it exists and was not cancelled (whose rows a mutation is removing). */
  async function visible(orgId: string, jobId: string): Promise<boolean> {
    const current = await readJob(orgId, jobId);
    return current !== null && current.status !== 'cancelled';
  }

  async function byIdempotencyKey(orgId: string, idempotencyKey: string): Promise<JobRecord | null> {
    return (await readJobs(`${org(orgId)} AND idempotency_key = ${sqlString(idempotencyKey)}`, 'ORDER BY created_at_ms LIMIT 1'))[0] ?? null;
  }

  return {
    async create(record) {
      if (record.idempotencyKey !== null) {
        const existing = await byIdempotencyKey(record.orgId, record.idempotencyKey);
        if (existing) return { job: existing, created: false };
      }
      await writeJob(record);
      return { job: record, created: true };
    },

    byIdempotencyKey,

    get: readJob,

    async list(orgId, { limit, before }) {
      let where = org(orgId);
      if (before !== undefined) {
        const anchor = await readJob(orgId, before);
        if (anchor === null) return [];
        const created = sqlInteger(anchor.createdAtMs, 'list');
        where += ` AND (created_at_ms < ${created} OR (created_at_ms = ${created} AND job_id < ${sqlString(anchor.jobId)}))`;
      }
      return readJobs(where, `ORDER BY created_at_ms DESC, job_id DESC LIMIT ${sqlInteger(limit, 'list')}`);
    },

    async transition(orgId, jobId, from, transition) {
      const current = await readJob(orgId, jobId);
      if (current === null || !from.includes(current.status)) return false;
      await writeJob({
        ...current,
        status: transition.status,
        ...(transition.startedAtMs !== undefined ? { startedAtMs: transition.startedAtMs } : {}),
        ...(transition.finishedAtMs !== undefined ? { finishedAtMs: transition.finishedAtMs } : {}),
        ...(transition.failure !== undefined ? { failure: transition.failure } : {}),
      });
      if (transition.status === 'cancelled') await dropData(jobId, 'all');
      else if (FINISHED_JOB_STATUSES.includes(transition.status)) await dropData(jobId, 'chunks');
      return true;
    },

    async remove(orgId, jobId) {
      const current = await readJob(orgId, jobId);
      if (current === null) return false;
      await writeJob(current, true);
      await dropData(jobId, 'all');
      return true;
    },

    async activeLoad(orgId) {
      const active = await select<{ job_id: string; points_total: number }>(
        `SELECT job_id, points_total FROM ${database}.jobs FINAL
         WHERE ${org(orgId)} AND deleted = 0 AND status IN ('queued', 'running')`,
        'reading the active jobs',
      );
      if (active.length === 0) return { jobs: 0, pointsPending: 0 };
      const done = await select<{ points: number }>(
        `SELECT sum(points) AS points FROM ${database}.job_series FINAL
         WHERE job_id IN (${active.map((row) => sqlString(row.job_id)).join(', ')})`,
        'reading the active jobs',
      );
      const total = active.reduce((sum, row) => sum + Number(row.points_total), 0);
      return { jobs: active.length, pointsPending: total - Number(done[0]?.points ?? 0) };
    },

    async stageChunk(orgId, jobId, seriesIndex, chunkIndex, message) {
      const current = await readJob(orgId, jobId);
      if (current === null || FINISHED_JOB_STATUSES.includes(current.status)) return;
      await insert(
        'job_chunks',
        [{ job_id: jobId, series_index: seriesIndex, chunk_index: chunkIndex, message: message.toString('base64'), written_at_ms: nextVersion() }],
        'staging a chunk',
      );
    },

    async stagedChunks(orgId, jobId, seriesIndex) {
      const chunks = new Map<number, Buffer>();
      // Dropped chunks may linger until their mutation runs: a finished job or a judged series has none.
      const current = await readJob(orgId, jobId);
      if (current === null || FINISHED_JOB_STATUSES.includes(current.status)) return chunks;
      if ((await seriesOf(jobId)).some((row) => Number(row.series_index) === seriesIndex)) return chunks;
      const rows = await select<{ chunk_index: number; message: string }>(
        `SELECT chunk_index, message FROM ${database}.job_chunks FINAL
         WHERE ${job(jobId)} AND series_index = ${sqlInteger(seriesIndex, 'stagedChunks')} ORDER BY chunk_index`,
        'reading staged chunks',
      );
      for (const row of rows) chunks.set(Number(row.chunk_index), Buffer.from(row.message, 'base64'));
      return chunks;
    },

    async completeSeries(orgId, jobId, judged) {
      const current = await readJob(orgId, jobId);
      if (current === null || FINISHED_JOB_STATUSES.includes(current.status) || judged.length === 0) return;
      const writtenAtMs = nextVersion();
      const rows = judged.flatMap((one) => one.rows);
      for (let start = 0; start < rows.length; start += ROWS_PER_INSERT) {
        const slice = rows.slice(start, start + ROWS_PER_INSERT);
        assertOpen();
        try {
          const result = await client.exec({
            query: `INSERT INTO ${database}.job_results (${JOB_RESULT_COLUMNS.join(', ')}) FORMAT RowBinary`,
            values: Readable.from([encodeJobResultsRowBinary(jobId, slice, writtenAtMs)]),
          });
          for await (const _ of result.stream) {
            // The body of an INSERT's answer is empty; reading it frees the connection.
          }
        } catch (error) {
          throw clickHouseError(error, `writing ${slice.length} job results`, database);
        }
      }
      // The series count as done only once every row is in.
      await insert(
        'job_series',
        judged.map((one) => ({
          job_id: jobId,
          series_index: one.seriesIndex,
          points: one.rows.length,
          period: one.period,
          episodes: JSON.stringify(one.episodes),
          written_at_ms: writtenAtMs,
        })),
        'recording judged series',
      );
    },

    async progress(orgId, jobId) {
      const periods = new Map<number, number>();
      let pointsDone = 0;
      if (await visible(orgId, jobId)) {
        for (const row of await seriesOf(jobId)) {
          pointsDone += Number(row.points);
          periods.set(Number(row.series_index), Number(row.period));
        }
      }
      return { seriesDone: periods.size, pointsDone, periods };
    },

    async results(orgId, jobId, { limit, after }) {
      if (!(await visible(orgId, jobId))) return [];
      let where = job(jobId);
      if (after !== undefined) {
        const series = sqlInteger(after.seriesIndex, 'results');
        where += ` AND (series_index > ${series} OR (series_index = ${series} AND point_index > ${sqlInteger(after.pointIndex, 'results')}))`;
      }
      const rows = await select<ResultRecord>(
        `SELECT ${JOB_RESULT_COLUMNS.slice(1, -1).join(', ')}
         FROM ${database}.job_results FINAL WHERE ${where}
         ORDER BY series_index, point_index LIMIT ${sqlInteger(limit, 'results')}`,
        'reading job results',
      );
      return rows.map(
        (row): JobResultRow => ({
          seriesIndex: Number(row.series_index),
          pointIndex: Number(row.point_index),
          tsMs: row.ts_ms === null ? null : Number(row.ts_ms),
          ...judgedPointOfRecord(row),
        }),
      );
    },

    async episodes(orgId, jobId) {
      if (!(await visible(orgId, jobId))) return [];
      return (await seriesOf(jobId)).flatMap((row) => JSON.parse(row.episodes) as JobEpisode[]);
    },

    async ping() {
      const result = await client.ping().catch((error: unknown) => ({ success: false as const, error }));
      if (!result.success) throw clickHouseError(result.error, 'pinging', database);
    },

    async close() {
      if (closed) return;
      closed = true;
      await client.close();
    },
  };
}
