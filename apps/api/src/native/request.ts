// Request reading of the native routes. Fastify has validated each body against its schema
// (./schemas.ts) before these run, so they only turn it into the engine's input and apply the rules
// a schema cannot state: timestamps parsed to milliseconds (and ascending for a baseline), the
// options' defaults, one of `series` and `energies`. Failures are AppErrors with a registry code:
// InvalidSeries or InvalidArgument (400).
import { SeriesError, type DetectOptions, type Granularity, type SeriesInput } from '@adp/detection';
import type { Static } from 'typebox';
import { MACHINE_ID_PATTERN, MACHINE_ID_RULE, MAX_LABEL_LENGTH, MAX_SERIES_POINTS, MIN_BASELINE_POINTS } from '@adp/domain';
import { AppError, ERRORS } from '../errors.js';
import { invalidArgument, invalidSeries } from '../request-checks.js';
import { VendorError } from '../vendor/errors.js';
import type { BaselineRequest, DetectOptionFields, DetectRequest, Point } from './schemas.js';
import {
  DEFAULT_CUSTOM_INTERVAL,
  DEFAULT_GRANULARITY,
  DEFAULT_IMPUTE_MODE,
  DEFAULT_MAX_ANOMALY_RATIO,
  DEFAULT_SENSITIVITY,
} from '../vendor/request.js';

// Machine ids are safe in URLs, file names and log lines, and matched case-sensitively.
export { MACHINE_ID_PATTERN, MACHINE_ID_RULE, MAX_LABEL_LENGTH, MIN_BASELINE_POINTS };
export const MAX_BASELINE_POINTS = MAX_SERIES_POINTS;
export const MAX_BASELINE_ENERGIES = 100_000;
/**
 * The largest energy a baseline takes: the statistics square the energies' spread, and 100,000
 * energies of up to 1e150 keep that sum finite (a single 1e308 made the standard deviation
 * infinite). Real energies, squared errors of normalised values, are many orders below it.
 */
export const MAX_BASELINE_ENERGY = 1e150;

export type ParseTimestamp = (text: string) => number | null;

export interface NativeDetectRequest {
  readonly input: SeriesInput;
  readonly options: DetectOptions;
  /** False when the body left `sensitivity` out (the machine's baseline may then set it). */
  readonly sensitivityGiven: boolean;
  readonly machineId: string | null;
  readonly includeEnergy: boolean;
  readonly includeEmbeddings: boolean;
  /** `include_z_scores` (default true): false answers `z_scores: null`; the verdicts still use them. */
  readonly includeZScores: boolean;
  /** `include_shape_scores` (default true): false answers `shape_scores: null`; the verdicts still use them. */
  readonly includeShapeScores: boolean;
}

interface BaselineFields {
  readonly machineId: string;
  readonly label: string | null;
  readonly granularity: Granularity | null;
  readonly sensitivity: number | null;
}

export type NativeBaselineRequest =
  | (BaselineFields & { readonly kind: 'series'; readonly values: number[] })
  | (BaselineFields & { readonly kind: 'energies'; readonly energies: number[] });

/** A point as the schemas admit it: `value` a number within range; `timestamp` unread yet. */
export type SchemaPoint = Static<typeof Point>;
/** The detection options of POST /v1/detect (and of jobs), as the schema admits them; null is absent. */
export type { DetectOptionFields };
/** The fields of POST /v1/detect besides the series. */
export type DetectFlags = Omit<Static<typeof DetectRequest>, 'series'>;
/** The fields of POST /v1/baseline besides the series. */
export type BaselineBodyFields = Omit<Static<typeof BaselineRequest>, 'series'>;

/** Checks a machine id from a body, a query string or a path. */
export function parseMachineId(value: unknown, where: string): string {
  if (value === undefined || value === null || value === '') {
    throw new AppError(ERRORS.InvalidMachineId, `The ${where} is required (${MACHINE_ID_RULE}).`);
  }
  if (typeof value !== 'string' || !MACHINE_ID_PATTERN.test(value)) {
    throw new AppError(ERRORS.InvalidMachineId, `The ${where} must be ${MACHINE_ID_RULE}.`);
  }
  return value;
}

/**
 * The vendor parser's and the engine's errors in the native shape: InvalidSeries for the vendor's
 * InvalidSeries, else `otherwise`. Anything else passes through.
 */
export function toNativeError(error: unknown, otherwise: 'InvalidArgument' | 'InvalidSeries' = 'InvalidArgument'): unknown {
  if (error instanceof VendorError || error instanceof SeriesError) {
    return error.code === 'InvalidSeries' || otherwise === 'InvalidSeries'
      ? invalidSeries(error.message)
      : invalidArgument(error.message);
  }
  return error;
}

/** The engine's options from the body's fields, with their defaults. */
export function detectionOptions(fields: DetectOptionFields): { series: Omit<SeriesInput, 'timestampsMs' | 'values'>; options: DetectOptions } {
  const granularity = fields.granularity ?? DEFAULT_GRANULARITY;
  const imputeMode = fields.imputeMode ?? DEFAULT_IMPUTE_MODE;
  const imputeFixedValue = imputeMode === 'fixed' ? (fields.imputeFixedValue ?? undefined) : undefined;
  return {
    series: {
      granularity,
      customInterval: fields.customInterval ?? DEFAULT_CUSTOM_INTERVAL,
      imputeMode,
      ...(imputeFixedValue === undefined ? {} : { imputeFixedValue }),
    },
    options: {
      // Absent, null or 0: the engine detects it.
      period: fields.period || undefined,
      sensitivity: fields.sensitivity ?? DEFAULT_SENSITIVITY,
      maxAnomalyRatio: fields.maxAnomalyRatio ?? DEFAULT_MAX_ANOMALY_RATIO,
    },
  };
}

/**
 * Values and timestamps of schema-checked points. Timestamps are parsed here, once: with a
 * granularity every point's must parse (the schema made them present); with none they reach the
 * engine only when every point carries a parsable one. `where` names the series in messages.
 */
export function seriesPoints(
  points: readonly SchemaPoint[],
  granularity: Granularity,
  parseTimestamp: ParseTimestamp,
  where = 'series',
): { timestampsMs: number[] | null; values: number[] } {
  const values = new Array<number>(points.length);
  const timestampsMs = new Array<number>(points.length);
  const required = granularity !== 'none';
  let usable = true;
  for (let index = 0; index < points.length; index++) {
    const point = points[index]!;
    // The schema takes either form of point; a series is all of one (the first point's).
    if (typeof point.value !== 'number') {
      throw invalidSeries(`${where}[${index}] has 'channels' where ${where}[0] has 'value': a series' points are all values or all channels.`);
    }
    values[index] = point.value;
    if (!usable) continue;
    const ms = typeof point.timestamp === 'string' ? parseTimestamp(point.timestamp) : null;
    if (ms !== null) timestampsMs[index] = ms;
    else if (required) throw invalidSeries(`${where}[${index}].timestamp must be an ISO 8601 date-time such as 2024-01-01T00:00:00Z.`);
    else usable = false;
  }
  return { timestampsMs: usable ? timestampsMs : null, values };
}

/** `POST /v1/detect` with univariate points (the schema has checked the body). */
export function parseDetectRequest(
  body: DetectFlags,
  points: readonly SchemaPoint[],
  parseTimestamp: ParseTimestamp,
): NativeDetectRequest {
  const { series, options } = detectionOptions(body);
  return {
    input: { ...series, ...seriesPoints(points, series.granularity, parseTimestamp) },
    options,
    sensitivityGiven: body.sensitivity != null,
    machineId: body.machine_id ?? null,
    includeEnergy: body.include_energy ?? false,
    includeEmbeddings: body.include_embeddings ?? false,
    includeZScores: body.include_z_scores ?? true,
    includeShapeScores: body.include_shape_scores ?? true,
  };
}

/** `POST /v1/baseline`: healthy `series` (fine-tuning) or `energies` (statistics only). */
export function parseBaselineRequest(
  body: BaselineBodyFields,
  points: readonly SchemaPoint[] | null | undefined,
  parseTimestamp: ParseTimestamp,
): NativeBaselineRequest {
  const granularity = body.granularity ?? null;
  const fields = { machineId: body.machine_id, granularity, sensitivity: body.sensitivity ?? null, label: body.label ?? null };
  const energies = body.energies ?? null;
  if (points != null && energies !== null) {
    throw invalidArgument("Send either 'series' (healthy data to fine-tune on) or 'energies', not both.");
  }
  if (energies !== null) return { kind: 'energies', ...fields, energies: [...energies] };
  if (points == null) {
    throw invalidSeries(
      `The 'series' field is required: at least ${MIN_BASELINE_POINTS} points of healthy data (or 'energies': at least ${MIN_BASELINE_POINTS} numbers).`,
    );
  }
  const { timestampsMs, values } = seriesPoints(points, granularity ?? DEFAULT_GRANULARITY, parseTimestamp);
  if (timestampsMs) {
    for (let index = 1; index < timestampsMs.length; index++) {
      if (!(timestampsMs[index]! > timestampsMs[index - 1]!)) {
        throw invalidSeries(`The timestamps must be ascending without duplicates (index ${index}).`);
      }
    }
  }
  return { kind: 'series', ...fields, values };
}
