// Request validation of the native routes. The series and the detection options follow the
// vendor routes' rules (./../vendor/request.ts does the work); the native fields are checked here.
// Every failure is an AppError with a registry code: InvalidMachineId, InvalidSeries or
// InvalidArgument (400).
import { GRANULARITIES, SeriesError, type DetectOptions, type Granularity, type SeriesInput } from '@adp/detection';
import { MACHINE_ID_PATTERN, MACHINE_ID_RULE, MAX_LABEL_LENGTH, MAX_SERIES_POINTS, MIN_BASELINE_POINTS } from '@adp/domain';
import { AppError, ERRORS } from '../errors.js';
import { VendorError } from '../vendor/errors.js';
import { MIN_SERIES_POINTS, parseVendorRequest } from '../vendor/request.js';
import { type JsonObject, invalidArgument, invalidSeries, isJsonObject } from '../request-checks.js';

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

function requireObject(body: unknown): JsonObject {
  if (!isJsonObject(body)) throw invalidArgument('The request body must be a JSON object.');
  return body;
}

/** Absent and null are the same for optional fields. */
function optional(body: JsonObject, name: string): unknown {
  const value = body[name];
  return value === null ? undefined : value;
}

/** `GET /v1/machines?include=telemetry`: whether machines without a baseline are listed too. */
export function parseMachinesInclude(query: unknown): boolean {
  const value = typeof query === 'object' && query !== null ? (query as Record<string, unknown>)['include'] : undefined;
  if (value === undefined || value === '') return false;
  if (value === 'telemetry') return true;
  throw invalidArgument("The 'include' query parameter takes one value: 'telemetry' (also list machines without a baseline).");
}

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

function parseBoolean(body: JsonObject, name: string, fallback: boolean): boolean {
  const value = optional(body, name);
  if (value === undefined) return fallback;
  if (typeof value !== 'boolean') throw invalidArgument(`The '${name}' field must be true or false.`);
  return value;
}

function parseGranularity(body: JsonObject): Granularity | null {
  const value = optional(body, 'granularity');
  if (value === undefined) return null;
  const wanted = typeof value === 'string' ? value.toLowerCase() : undefined;
  const matched = GRANULARITIES.find((candidate) => candidate === wanted);
  if (matched === undefined) {
    throw invalidArgument(`The 'granularity' field must be one of ${GRANULARITIES.join(', ')}.`);
  }
  return matched;
}

function parseSensitivity(body: JsonObject): number | null {
  const value = optional(body, 'sensitivity');
  if (value === undefined) return null;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0 || value > 99) {
    throw invalidArgument("The 'sensitivity' field must be an integer from 0 to 99.");
  }
  return value;
}

function parseLabel(body: JsonObject): string | null {
  const value = optional(body, 'label');
  if (value === undefined) return null;
  if (typeof value !== 'string' || value.length > MAX_LABEL_LENGTH) {
    throw invalidArgument(`The 'label' field must be a string of at most ${MAX_LABEL_LENGTH} characters.`);
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

/** Minimal valid points (timestamps included) for checking the options alone. */
const PLACEHOLDER_SERIES = Array.from({ length: MIN_SERIES_POINTS }, (_, index) => ({
  timestamp: new Date(Date.UTC(2000, 0, 1 + index)).toISOString(),
  value: 0,
}));

/** `POST /v1/detect`. */
export function parseDetectRequest(body: unknown, parseTimestamp: ParseTimestamp): NativeDetectRequest {
  const object = requireObject(body);
  const rawMachineId = optional(object, 'machine_id');
  const machineId = rawMachineId === undefined ? null : parseMachineId(rawMachineId, "'machine_id' field");
  const includeEnergy = parseBoolean(object, 'include_energy', false);
  const includeEmbeddings = parseBoolean(object, 'include_embeddings', false);
  const includeZScores = parseBoolean(object, 'include_z_scores', true);
  const includeShapeScores = parseBoolean(object, 'include_shape_scores', true);
  const series = object['series'];
  if (series === undefined || series === null) {
    throw invalidSeries(`The 'series' field is required: ${MIN_SERIES_POINTS} to ${MAX_SERIES_POINTS} points.`);
  }
  // The options first, against a placeholder series, so that every failure of the real parse
  // below is the series' own (InvalidSeries) whatever code the vendor rules give it.
  try {
    parseVendorRequest({ ...object, series: PLACEHOLDER_SERIES }, 'entire', { style: 'v1.1', parseTimestamp });
  } catch (error) {
    throw toNativeError(error, 'InvalidArgument');
  }
  let parsed: ReturnType<typeof parseVendorRequest>;
  try {
    parsed = parseVendorRequest(object, 'entire', { style: 'v1.1', parseTimestamp });
  } catch (error) {
    throw toNativeError(error, 'InvalidSeries');
  }
  if (parsed.operation === 'changepoint') throw new Error('unreachable: parsed an entire request as changepoint');
  return {
    input: parsed.input,
    options: parsed.options,
    sensitivityGiven: optional(object, 'sensitivity') !== undefined,
    machineId,
    includeEnergy,
    includeEmbeddings,
    includeZScores,
    includeShapeScores,
  };
}

/** `POST /v1/baseline`: healthy `series` (fine-tuning) or `energies` (statistics only). */
export function parseBaselineRequest(body: unknown, parseTimestamp: ParseTimestamp): NativeBaselineRequest {
  const object = requireObject(body);
  const machineId = parseMachineId(optional(object, 'machine_id'), "'machine_id' field");
  const granularity = parseGranularity(object);
  const sensitivity = parseSensitivity(object);
  const label = parseLabel(object);
  const fields = { machineId, granularity, sensitivity, label };

  const series = optional(object, 'series');
  const energies = optional(object, 'energies');
  if (series !== undefined && energies !== undefined) {
    throw invalidArgument("Send either 'series' (healthy data to fine-tune on) or 'energies', not both.");
  }
  if (energies !== undefined) return { kind: 'energies', ...fields, energies: parseEnergies(energies) };
  if (series === undefined) {
    throw invalidSeries(
      `The 'series' field is required: at least ${MIN_BASELINE_POINTS} points of healthy data (or 'energies': at least ${MIN_BASELINE_POINTS} numbers).`,
    );
  }
  if (!Array.isArray(series)) throw invalidSeries("The 'series' field must be an array of points.");
  if (series.length < MIN_BASELINE_POINTS) {
    throw invalidSeries(
      `A baseline needs at least ${MIN_BASELINE_POINTS} points of healthy data; the series has ${series.length}.`,
    );
  }
  if (series.length > MAX_BASELINE_POINTS) {
    throw invalidSeries(`A baseline takes at most ${MAX_BASELINE_POINTS} points; the series has ${series.length}.`);
  }
  // Points follow the vendor rules (timestamps required unless granularity is none).
  const { input } = parseSeriesPoints(object, granularity, parseTimestamp);
  const timestamps = input.timestampsMs;
  if (timestamps) {
    for (let index = 1; index < timestamps.length; index++) {
      if (!((timestamps[index] ?? 0) > (timestamps[index - 1] ?? 0))) {
        throw invalidSeries(`The timestamps must be ascending without duplicates (index ${index}).`);
      }
    }
  }
  return { kind: 'series', ...fields, values: [...input.values] };
}

function parseSeriesPoints(
  object: JsonObject,
  granularity: Granularity | null,
  parseTimestamp: ParseTimestamp,
): { input: SeriesInput } {
  try {
    const parsed = parseVendorRequest(
      { series: object['series'], granularity: granularity ?? undefined },
      'entire',
      { style: 'v1.1', parseTimestamp },
    );
    return { input: parsed.input };
  } catch (error) {
    // granularity was checked above, so whatever fails here is the series.
    throw toNativeError(error, 'InvalidSeries');
  }
}

function parseEnergies(value: unknown): number[] {
  if (!Array.isArray(value)) throw invalidSeries("The 'energies' field must be an array of numbers.");
  if (value.length < MIN_BASELINE_POINTS) {
    throw invalidSeries(`A baseline needs at least ${MIN_BASELINE_POINTS} energies; got ${value.length}.`);
  }
  if (value.length > MAX_BASELINE_ENERGIES) {
    throw invalidSeries(`A baseline takes at most ${MAX_BASELINE_ENERGIES} energies; got ${value.length}.`);
  }
  const energies = new Array<number>(value.length);
  for (let index = 0; index < value.length; index++) {
    const energy: unknown = value[index];
    if (typeof energy !== 'number' || !(energy >= 0 && energy <= MAX_BASELINE_ENERGY)) {
      throw invalidSeries(`The energy at index ${index} must be a number from 0 to ${MAX_BASELINE_ENERGY}.`);
    }
    energies[index] = energy;
  }
  return energies;
}
