// POST /v1/jobs and the jobs' queries after Fastify has validated them against ./schemas.ts. A
// job is refused before it is accepted for anything the engine would refuse: beyond the schema,
// the limits of configuration (points and series), the multichannel rules of POST /v1/detect, and
// the timestamps' order, uniqueness and grid (the engine's own alignment, run here over each
// series; messages name the series). So a job that is accepted fails later only on a server fault.
import { alignSeries, SeriesError, type SeriesInput } from '@adp/detection';
import type { JobDetectOptions, JobResultsCursor } from '@adp/store';
import { AppError, ERRORS } from '../errors.js';
import { invalidArgument, invalidSeries } from '../request-checks.js';
import { isMultichannelSeries, parseMultivariateMachineId, splitChannels } from '../native/multivariate.js';
import { detectionOptions, seriesPoints, toNativeError, type ParseTimestamp, type SchemaPoint } from '../native/request.js';
export type { ParseTimestamp } from '../native/request.js';
import { MIN_SERIES_POINTS } from '../vendor/request.js';
import type { Static } from 'typebox';
import type { JobRequest, JobResultsQuery, JobsQuery } from './schemas.js';

export interface JobLimits {
  /** JOBS_MAX_POINTS: most points of a job, all series together. */
  readonly maxPoints: number;
  /** JOBS_MAX_SERIES. */
  readonly maxSeries: number;
}

export interface ParsedJobSeries {
  readonly machineId: string | null;
  /** The channel of a multichannel series this series is (each channel is judged as a series). */
  readonly channel?: string;
  readonly timestampsMs: readonly number[] | null;
  readonly values: readonly number[];
}

/** A multichannel series of the request: its channels are `series` from..from+channels.length-1. */
export interface ParsedMultichannel {
  /** Its index in the request (`series_list`'s, or 0). */
  readonly index: number;
  readonly machineId: string | null;
  readonly from: number;
  readonly channels: readonly string[];
}

export interface ParsedJobRequest {
  /** Every series to judge; a multichannel series gives one per channel, in its channels' order. */
  readonly series: readonly ParsedJobSeries[];
  readonly multichannel: readonly ParsedMultichannel[];
  readonly options: JobDetectOptions;
  readonly points: number;
  /** False when the body left `sensitivity` out (a machine's baseline may then set it). */
  readonly sensitivityGiven: boolean;
}

/** How a series is named in messages: its index and, when it has one, its machine. */
export function seriesName(index: number, machineId: string | null): string {
  return machineId === null ? `Series ${index}` : `Series ${index} (machine '${machineId}')`;
}

/**
 * `POST /v1/jobs`: one series (`series`, with an optional `machine_id`) or several
 * (`series_list`: objects of `machine_id` and `series`), and the detection options of POST /v1/detect.
 */
export function parseJobRequest(body: JobRequest, limits: JobLimits, parseTimestamp: ParseTimestamp): ParsedJobRequest {
  const single = body.series ?? null;
  const list = body.series_list ?? null;
  if (single !== null && list !== null) {
    throw invalidArgument("Send either 'series' (one series) or 'series_list' (several), not both.");
  }
  const { series: input, options: detect } = detectionOptions(body);
  const options: JobDetectOptions = {
    ...input,
    ...(detect.period !== undefined ? { period: detect.period } : {}),
    sensitivity: detect.sensitivity,
    maxAnomalyRatio: detect.maxAnomalyRatio,
  };
  const rules: SeriesRules = { input, period: detect.period };

  const entries: { machineId: string | null; series: readonly unknown[] }[] = [];
  if (list !== null) {
    if (list.length > limits.maxSeries) {
      throw invalidSeries(`A job takes at most ${limits.maxSeries} series; 'series_list' has ${list.length}.`);
    }
    const seen = new Set<string>();
    list.forEach((entry, index) => {
      const where = `'machine_id' of the 'series_list' item at index ${index}`;
      const machineId = isMultichannelSeries(entry.series) ? parseMultivariateMachineId(entry.machine_id, where) : entry.machine_id;
      if (seen.has(machineId)) throw invalidArgument(`The machine '${machineId}' appears twice in 'series_list' (index ${index}).`);
      seen.add(machineId);
      entries.push({ machineId, series: entry.series });
    });
  } else {
    if (single === null) {
      throw invalidSeries(`The 'series' field (or 'series_list') is required: ${MIN_SERIES_POINTS} to ${limits.maxPoints} points.`);
    }
    const machineId = body.machine_id ?? null;
    entries.push({ machineId: machineId !== null && isMultichannelSeries(single) ? parseMultivariateMachineId(machineId) : machineId, series: single });
  }

  // The total first, from the array lengths alone: a body over the limit is refused before any point is read.
  // A multichannel series counts a point per channel reading (each channel is judged as a series).
  let points = 0;
  for (const entry of entries) {
    const first = entry.series[0] as { channels?: Record<string, number> | null } | undefined;
    points += entry.series.length * Math.max(1, first?.channels ? Object.keys(first.channels).length : 1);
  }
  if (points > limits.maxPoints) {
    throw invalidSeries(`A job takes at most ${limits.maxPoints} points, all series together; this one has ${points}.`);
  }
  const series: ParsedJobSeries[] = [];
  const multichannel: ParsedMultichannel[] = [];
  entries.forEach((entry, index) => {
    if (!isMultichannelSeries(entry.series)) {
      series.push(parseSeries(entry.series as SchemaPoint[], entry.machineId, seriesName(index, entry.machineId), rules, parseTimestamp));
      return;
    }
    // The multichannel rules of POST /v1/detect (every point carries the first point's channels),
    // then each channel under the univariate rules, its messages naming the series and channel.
    let split: ReturnType<typeof splitChannels>;
    try {
      split = splitChannels(entry.series, entry.machineId);
    } catch (error) {
      throw inSeries(error, seriesName(index, entry.machineId));
    }
    multichannel.push({ index, machineId: entry.machineId, from: series.length, channels: split.names });
    for (const channel of split.names) {
      const name = `${seriesName(index, entry.machineId)}, channel '${channel}'`;
      series.push({ ...parseSeries(split.perChannel.get(channel)!, entry.machineId, name, rules, parseTimestamp), channel });
    }
  });
  return { series, multichannel, options, points, sensitivityGiven: body.sensitivity != null };
}

/** How every series of a job is read: the options' part of the engine's input, and the period. */
interface SeriesRules {
  readonly input: Omit<SeriesInput, 'timestampsMs' | 'values'>;
  readonly period: number | undefined;
}

function parseSeries(points: readonly SchemaPoint[], machineId: string | null, name: string, rules: SeriesRules, parseTimestamp: ParseTimestamp): ParsedJobSeries {
  const input: SeriesInput = { ...rules.input, ...inSeriesCall(name, () => seriesPoints(points, rules.input.granularity, parseTimestamp)) };
  // The engine's own checks of order, duplicates, grid and period, before the job is accepted.
  try {
    alignSeries(input, rules.period);
  } catch (error) {
    if (error instanceof SeriesError) throw inSeries(toNativeError(error, 'InvalidSeries'), name);
    throw error;
  }
  return { machineId, timestampsMs: input.timestampsMs, values: input.values };
}

function inSeriesCall<T>(name: string, call: () => T): T {
  try {
    return call();
  } catch (error) {
    throw inSeries(error, name);
  }
}

/** The error with the series named in front of its message. */
function inSeries(error: unknown, name: string): unknown {
  if (error instanceof AppError && (error.code === ERRORS.InvalidSeries.code || error.code === ERRORS.InvalidArgument.code)) {
    return new AppError(error.code === ERRORS.InvalidSeries.code ? ERRORS.InvalidSeries : ERRORS.InvalidArgument, `${name}: ${error.message}`);
  }
  return error;
}

/** `Idempotency-Key`: absent, or 1 to 255 visible ASCII characters. */
export function parseIdempotencyKey(value: string | string[] | undefined): string | null {
  if (value === undefined) return null;
  if (Array.isArray(value) || !/^[\x21-\x7e]{1,255}$/.test(value)) {
    throw invalidArgument('The Idempotency-Key header must be one value of 1 to 255 visible ASCII characters.');
  }
  return value;
}

const JOB_ID_PATTERN = /^job_[0-9a-f]{32}$/;

/** A job id from a path; a malformed one is simply not found. */
export function parseJobId(value: unknown): string | null {
  return typeof value === 'string' && JOB_ID_PATTERN.test(value) ? value : null;
}

export const RESULTS_DEFAULT_LIMIT = 1000;
export const RESULTS_MAX_LIMIT = 10_000;
export const JOBS_DEFAULT_LIMIT = 50;
export const JOBS_MAX_LIMIT = 500;

/** Results cursors: the last row's series and point, opaque to clients. */
export function encodeResultsCursor(cursor: JobResultsCursor): string {
  return Buffer.from(`j1.${cursor.seriesIndex}.${cursor.pointIndex}`, 'utf8').toString('base64url');
}

function decodeResultsCursor(token: string): JobResultsCursor | null {
  if (!/^[A-Za-z0-9_-]{1,64}$/.test(token)) return null;
  const match = /^j1\.(\d{1,7})\.(\d{1,9})$/.exec(Buffer.from(token, 'base64url').toString('utf8'));
  return match ? { seriesIndex: Number(match[1]), pointIndex: Number(match[2]) } : null;
}

/** `GET /v1/jobs/{id}/results?limit=&cursor=&machine_id=&series_index=`, as its schema admits it. */
export function parseJobResultsQuery(query: Static<typeof JobResultsQuery>): { limit: number; after?: JobResultsCursor; machineId?: string; seriesIndex?: number } {
  const filters = {
    limit: query.limit ?? RESULTS_DEFAULT_LIMIT,
    ...(query.machine_id === undefined ? {} : { machineId: query.machine_id }),
    ...(query.series_index === undefined ? {} : { seriesIndex: query.series_index }),
  };
  if (query.cursor === undefined || query.cursor === '') return filters;
  const after = decodeResultsCursor(query.cursor);
  if (after === null) throw invalidArgument("The 'cursor' query parameter is not one this API gave (use the previous page's next_cursor).");
  return { ...filters, after };
}

/** `GET /v1/jobs?limit=&cursor=`: the cursor is the last listed job's id. */
export function parseJobsQuery(query: Static<typeof JobsQuery>): { limit: number; before?: string } {
  const limit = query.limit ?? JOBS_DEFAULT_LIMIT;
  if (query.cursor === undefined || query.cursor === '') return { limit };
  const before = parseJobId(query.cursor);
  if (before === null) throw invalidArgument("The 'cursor' query parameter is not one this API gave (use the previous page's next_cursor).");
  return { limit, before };
}
