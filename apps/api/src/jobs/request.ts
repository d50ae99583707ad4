// Validation of POST /v1/jobs and the jobs' queries. A job is refused before it is accepted for
// anything the engine would refuse: the detection options of POST /v1/detect (the vendor's rules,
// the same codes and messages), every point of every series (the message names the series and
// the point's index), and the timestamps' order, uniqueness and grid (the engine's own alignment,
// run here over each series). So a job that is accepted fails later only on a server fault.
import { alignSeries, SeriesError, type SeriesInput } from '@adp/detection';
import type { JobDetectOptions, JobResultsCursor } from '@adp/streaming';
import { AppError, ERRORS } from '../errors.js';
import { isMultichannelSeries, parseMultivariateMachineId, splitChannels } from '../native/multivariate.js';
import { parseMachineId, toNativeError } from '../native/request.js';
import { MIN_SERIES_POINTS, parseVendorRequest } from '../vendor/request.js';
import { type JsonObject, invalidArgument, invalidSeries, isJsonObject } from '../request-checks.js';

export type ParseTimestamp = (text: string) => number | null;

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

/** The detection option fields of the body (the rest are the series). */
const OPTION_FIELDS = ['granularity', 'customInterval', 'period', 'sensitivity', 'maxAnomalyRatio', 'imputeMode', 'imputeFixedValue'];

/** Minimal valid points, to check the options alone. */
const PLACEHOLDER_SERIES = Array.from({ length: MIN_SERIES_POINTS }, (_, index) => ({
  timestamp: new Date(Date.UTC(2000, 0, 1 + index)).toISOString(),
  value: 0,
}));

/** How a series is named in messages: its index and, when it has one, its machine. */
export function seriesName(index: number, machineId: string | null): string {
  return machineId === null ? `Series ${index}` : `Series ${index} (machine '${machineId}')`;
}

/**
 * `POST /v1/jobs`: one series (`series`, with an optional `machine_id`) or several
 * (`series_list`: objects of `machine_id` and `series`), and the detection options of POST /v1/detect.
 */
export function parseJobRequest(body: unknown, limits: JobLimits, parseTimestamp: ParseTimestamp): ParsedJobRequest {
  if (!isJsonObject(body)) throw invalidArgument('The request body must be a JSON object.');
  const single = body['series'];
  const list = body['series_list'];
  if (single !== undefined && single !== null && list !== undefined && list !== null) {
    throw invalidArgument("Send either 'series' (one series) or 'series_list' (several), not both.");
  }
  const options: JobDetectOptions = parseOptions(body, parseTimestamp);

  const entries: { machineId: string | null; series: unknown }[] = [];
  if (list !== undefined && list !== null) {
    if (!Array.isArray(list) || list.length === 0) {
      throw invalidSeries("The 'series_list' field must be a non-empty array of objects with 'machine_id' and 'series'.");
    }
    if (list.length > limits.maxSeries) {
      throw invalidSeries(`A job takes at most ${limits.maxSeries} series; 'series_list' has ${list.length}.`);
    }
    const seen = new Set<string>();
    list.forEach((entry: unknown, index) => {
      if (!isJsonObject(entry)) throw invalidSeries(`The 'series_list' item at index ${index} must be an object with 'machine_id' and 'series'.`);
      const where = `'machine_id' of the 'series_list' item at index ${index}`;
      const machineId = isMultichannelSeries(entry['series']) ? parseMultivariateMachineId(entry['machine_id'], where) : parseMachineId(entry['machine_id'], where);
      if (seen.has(machineId)) throw invalidArgument(`The machine '${machineId}' appears twice in 'series_list' (index ${index}).`);
      seen.add(machineId);
      entries.push({ machineId, series: entry['series'] });
    });
  } else {
    if (single === undefined || single === null) {
      throw invalidSeries(`The 'series' field (or 'series_list') is required: ${MIN_SERIES_POINTS} to ${limits.maxPoints} points.`);
    }
    const rawMachineId = body['machine_id'];
    const parseId = isMultichannelSeries(single) ? parseMultivariateMachineId : parseMachineId;
    const machineId = rawMachineId === undefined || rawMachineId === null ? null : parseId(rawMachineId, "'machine_id' field");
    entries.push({ machineId, series: single });
  }

  // The total first, from the array lengths alone: a body over the limit is refused before any point is read.
  // A multichannel series counts a point per channel reading (each channel is judged as a series).
  let points = 0;
  for (const [index, entry] of entries.entries()) {
    if (!Array.isArray(entry.series)) throw invalidSeries(`${seriesName(index, entry.machineId)}: the 'series' field must be an array of points.`);
    const first: unknown = entry.series[0];
    const channels = isMultichannelSeries(entry.series) && isJsonObject(first) && isJsonObject(first['channels']) ? Object.keys(first['channels']).length : 1;
    points += entry.series.length * Math.max(1, channels);
  }
  if (points > limits.maxPoints) {
    throw invalidSeries(`A job takes at most ${limits.maxPoints} points, all series together; this one has ${points}.`);
  }
  const series: ParsedJobSeries[] = [];
  const multichannel: ParsedMultichannel[] = [];
  entries.forEach((entry, index) => {
    if (!isMultichannelSeries(entry.series)) {
      series.push(parseSeries(entry.series, entry.machineId, seriesName(index, entry.machineId), body, options, limits, parseTimestamp));
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
      series.push({ ...parseSeries(split.perChannel.get(channel), entry.machineId, name, body, options, limits, parseTimestamp), channel });
    }
  });
  const sensitivity = body['sensitivity'];
  return { series, multichannel, options, points, sensitivityGiven: sensitivity !== undefined && sensitivity !== null };
}

function parseOptions(body: JsonObject, parseTimestamp: ParseTimestamp): JobDetectOptions {
  const optionsOnly: JsonObject = { series: PLACEHOLDER_SERIES };
  for (const field of OPTION_FIELDS) if (field in body) optionsOnly[field] = body[field];
  let parsed: ReturnType<typeof parseVendorRequest>;
  try {
    parsed = parseVendorRequest(optionsOnly, 'entire', { style: 'v1.1', parseTimestamp });
  } catch (error) {
    throw toNativeError(error, 'InvalidArgument');
  }
  if (parsed.operation === 'changepoint') throw new Error('unreachable: parsed an entire request as changepoint');
  const { input, options } = parsed;
  return {
    granularity: input.granularity,
    customInterval: input.customInterval,
    imputeMode: input.imputeMode,
    ...(input.imputeFixedValue !== undefined ? { imputeFixedValue: input.imputeFixedValue } : {}),
    ...(options.period !== undefined ? { period: options.period } : {}),
    sensitivity: options.sensitivity,
    maxAnomalyRatio: options.maxAnomalyRatio,
  };
}

function parseSeries(
  raw: unknown,
  machineId: string | null,
  name: string,
  body: JsonObject,
  options: JobDetectOptions,
  limits: JobLimits,
  parseTimestamp: ParseTimestamp,
): ParsedJobSeries {
  const optionsOnly: JsonObject = { series: raw };
  for (const field of OPTION_FIELDS) if (field in body) optionsOnly[field] = body[field];
  let input: SeriesInput;
  try {
    const parsed = parseVendorRequest(optionsOnly, 'entire', { style: 'v1.1', parseTimestamp, maxPoints: limits.maxPoints });
    input = parsed.input;
  } catch (error) {
    throw inSeries(toNativeError(error, 'InvalidSeries'), name);
  }
  // The engine's own checks of order, duplicates, grid and period, before the job is accepted.
  try {
    alignSeries(input, options.period);
  } catch (error) {
    if (error instanceof SeriesError) throw inSeries(toNativeError(error, 'InvalidSeries'), name);
    throw error;
  }
  return { machineId, timestampsMs: input.timestampsMs, values: input.values };
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

function single(query: unknown, name: string): string | undefined {
  const value = isJsonObject(query) ? query[name] : undefined;
  if (value === undefined || value === '') return undefined;
  if (typeof value !== 'string') throw invalidArgument(`The '${name}' query parameter must be given once.`);
  return value;
}

function parseLimit(query: unknown, fallback: number, max: number): number {
  const text = single(query, 'limit');
  if (text === undefined) return fallback;
  const limit = /^\d{1,6}$/.test(text) ? Number(text) : Number.NaN;
  if (!(limit >= 1 && limit <= max)) throw invalidArgument(`The 'limit' query parameter must be an integer from 1 to ${max}.`);
  return limit;
}

/** Results cursors: the last row's series and point, opaque to clients. */
export function encodeResultsCursor(cursor: JobResultsCursor): string {
  return Buffer.from(`j1.${cursor.seriesIndex}.${cursor.pointIndex}`, 'utf8').toString('base64url');
}

function decodeResultsCursor(token: string): JobResultsCursor | null {
  if (!/^[A-Za-z0-9_-]{1,64}$/.test(token)) return null;
  const match = /^j1\.(\d{1,7})\.(\d{1,9})$/.exec(Buffer.from(token, 'base64url').toString('utf8'));
  return match ? { seriesIndex: Number(match[1]), pointIndex: Number(match[2]) } : null;
}

/** `GET /v1/jobs/{id}/results?limit=&cursor=&machine_id=&series_index=`. */
export function parseJobResultsQuery(query: unknown): { limit: number; after?: JobResultsCursor; machineId?: string; seriesIndex?: number } {
  const limit = parseLimit(query, RESULTS_DEFAULT_LIMIT, RESULTS_MAX_LIMIT);
  const machineText = single(query, 'machine_id');
  const machine = machineText === undefined ? {} : { machineId: parseMachineId(machineText, "'machine_id' query parameter") };
  const indexText = single(query, 'series_index');
  if (indexText !== undefined && !/^\d{1,7}$/.test(indexText)) throw invalidArgument("The 'series_index' query parameter must be a series' index in the job (0, 1, ...).");
  const filters = { ...machine, ...(indexText === undefined ? {} : { seriesIndex: Number(indexText) }) };
  const cursorText = single(query, 'cursor');
  if (cursorText === undefined) return { limit, ...filters };
  const after = decodeResultsCursor(cursorText);
  if (after === null) throw invalidArgument("The 'cursor' query parameter is not one this API gave (use the previous page's next_cursor).");
  return { limit, after, ...filters };
}

/** `GET /v1/jobs?limit=&cursor=`: the cursor is the last listed job's id. */
export function parseJobsQuery(query: unknown): { limit: number; before?: string } {
  const limit = parseLimit(query, JOBS_DEFAULT_LIMIT, JOBS_MAX_LIMIT);
  const cursorText = single(query, 'cursor');
  if (cursorText === undefined) return { limit };
  const before = parseJobId(cursorText);
  if (before === null) throw invalidArgument("The 'cursor' query parameter is not one this API gave (use the previous page's next_cursor).");
  return { limit, before };
}
