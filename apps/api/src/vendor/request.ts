// Our own request validator for the vendor routes. It follows the vendor parser's order
// (BEHAVIOUR.md §5.2): the first failing rule answers, with the vendor's code. A JSON Schema
// validator cannot give that order or those codes, so Fastify's validation is off for these routes.
import {
  GRANULARITIES,
  IMPUTE_MODES,
  type ChangePointOptions,
  type DetectOptions,
  type Granularity,
  type ImputeMode,
  type PastRange,
  type SeriesInput,
} from '@adp/detection';
import { DEFAULT_MAX_ANOMALY_RATIO, DEFAULT_SENSITIVITY, MAX_SERIES_POINTS, MAX_VALUE_MAGNITUDE, MIN_SERIES_POINTS } from '@adp/domain';
import { VendorError } from './errors.js';
import { NotScanned, ScannedSeries } from './body-scan.js';
import { type JsonObject, isJsonObject } from '../request-checks.js';

export const API_VERSIONS = ['v1.0', 'v1.1', 'v1.1-preview', 'v1.1-preview.1'] as const;
export type ApiVersion = (typeof API_VERSIONS)[number];

export const OPERATIONS = ['entire', 'last', 'changepoint'] as const;
export type Operation = (typeof OPERATIONS)[number];

/** v1.0 messages name fields in PascalCase, as the vendor's v1 service did; v1.1 in camelCase. */
export type MessageStyle = 'v1.0' | 'v1.1';

export function messageStyleOf(version: ApiVersion): MessageStyle {
  return version === 'v1.0' ? 'v1.0' : 'v1.1';
}

export { MAX_SERIES_POINTS, MAX_VALUE_MAGNITUDE, MIN_SERIES_POINTS };

export const DEFAULT_GRANULARITY: Granularity = 'none';
export const DEFAULT_CUSTOM_INTERVAL = 1;
export { DEFAULT_MAX_ANOMALY_RATIO, DEFAULT_SENSITIVITY };
export const DEFAULT_IMPUTE_MODE: ImputeMode = 'auto';
export const MIN_STABLE_TREND_WINDOW = 3;
export const MIN_THRESHOLD = 0.01;
export const MAX_THRESHOLD = 0.99;

export interface ParseContext {
  readonly style: MessageStyle;
  readonly parseTimestamp: (text: string) => number | null;
  /** Most points a series may have. Default MAX_SERIES_POINTS (the vendor's); detection jobs take more. */
  readonly maxPoints?: number;
}

export type ParsedRequest =
  | { readonly operation: 'entire' | 'last'; readonly input: SeriesInput; readonly options: DetectOptions }
  | { readonly operation: 'changepoint'; readonly input: SeriesInput; readonly options: ChangePointOptions };

/**
 * Reads a field by its camelCase name, matching keys case-insensitively (old clients send
 * PascalCase). An exact match wins over a case-insensitive one. undefined = absent.
 */
function readField(source: JsonObject, camelName: string): unknown {
  if (Object.hasOwn(source, camelName)) return source[camelName];
  const wanted = camelName.toLowerCase();
  for (const key of Object.keys(source)) {
    if (key.toLowerCase() === wanted) return source[key];
  }
  return undefined;
}

/** Optional fields treat JSON null like absence (the spec: "if the value is null or does not present"). */
function readOptional(source: JsonObject, camelName: string): unknown {
  const value = readField(source, camelName);
  return value === null ? undefined : value;
}

function matchEnum<T extends string>(allowed: readonly T[], value: unknown): T | undefined {
  if (typeof value !== 'string') return undefined;
  const wanted = value.toLowerCase();
  return allowed.find((candidate) => candidate.toLowerCase() === wanted);
}

function isInteger(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value);
}

function isFiniteNumber(value: unknown): value is number {
  return typeof value === 'number' && Number.isFinite(value);
}

/** What a non-number looked like, for messages; user text is cut short. */
function describeJson(value: unknown): string {
  if (value === null) return 'null';
  if (typeof value === 'string') return `the string ${JSON.stringify(value.length > 32 ? `${value.slice(0, 32)}...` : value)}`;
  if (typeof value === 'boolean') return `the boolean ${String(value)}`;
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'number') return String(value);
  return 'an object';
}

/** Field names as each API version spelled them in its messages. */
function fieldSpelling(style: MessageStyle, camelName: string): string {
  return style === 'v1.1' ? camelName : `${camelName.charAt(0).toUpperCase()}${camelName.slice(1)}`;
}

/** A field name quoted the vendor's way, in the version's spelling. */
function fieldNamer(style: MessageStyle): (camelName: string) => string {
  return (camelName) => `'${fieldSpelling(style, camelName)}'`;
}

const GRANULARITY_LIST = `[${GRANULARITIES.map((g) => `'${g}'`).join(', ')}]`;
const IMPUTE_MODE_LIST = `[${IMPUTE_MODES.map((m) => `'${m}'`).join(', ')}]`;

/**
 * Validates a parsed JSON body for one operation and turns it into the engine's input.
 * Throws VendorError for the first rule that fails, in the vendor's order:
 *  1 body is an object; 2 series present; 3 granularity;
 *  4 customInterval; 5 period; 6 maxAnomalyRatio; 7 sensitivity; 8 threshold, stableTrendWindow;
 *  9 imputeMode, imputeFixedValue; 9b pastRange (last only, an extension); 10 series is an array; 11 series length;
 *  12 each point's timestamp and value; 13 value magnitude; 8b stableTrendWindow < n/2.
 * Sorting, duplicates, alignment, period length and missing ratio are the engine's (SeriesError).
 */
export function parseVendorRequest(body: unknown, operation: Operation, context: ParseContext): ParsedRequest {
  const name = fieldNamer(context.style);
  const isChangePoint = operation === 'changepoint';

  // 1. The body.
  if (body === undefined || body === null || body === '') {
    throw new VendorError('BadArgument', 'Invalid Json Format, input data is Empty.');
  }
  if (!isJsonObject(body)) {
    throw new VendorError('BadArgument', 'Invalid Json Format, the request body must be a JSON object.');
  }

  // 2. Required fields. Change-point detection takes the same optional granularity as the other
  // operations (default none), where the vendor's spec required it.
  const rawSeries = readField(body, 'series');
  if (rawSeries === undefined) {
    throw new VendorError('BadArgument', `The ${name('series')} field is required in request.`);
  }
  const rawGranularity = readOptional(body, 'granularity');

  // 3. granularity
  let granularity: Granularity = DEFAULT_GRANULARITY;
  if (rawGranularity !== undefined) {
    const matched = matchEnum(GRANULARITIES, rawGranularity);
    if (matched === undefined) {
      throw new VendorError(
        'InvalidGranularity',
        `The ${name('granularity')} field can only be one of the following: ${GRANULARITY_LIST}.`,
      );
    }
    granularity = matched;
  }

  // 4. customInterval
  let customInterval = DEFAULT_CUSTOM_INTERVAL;
  const rawCustomInterval = readOptional(body, 'customInterval');
  if (rawCustomInterval !== undefined) {
    if (!isInteger(rawCustomInterval) || rawCustomInterval <= 0) {
      throw new VendorError('InvalidCustomInterval', `The ${name('customInterval')} field must be an integer > 0.`);
    }
    customInterval = rawCustomInterval;
  }

  // 5. period (absent, null or 0 = detect it). 0 is the service's documented default, so it
  // cannot mean "not seasonal" as well; the vendor's SDKs never send 0 unless asked to.
  let period: number | undefined;
  const rawPeriod = readOptional(body, 'period');
  if (rawPeriod !== undefined) {
    if (!isInteger(rawPeriod) || rawPeriod < 0) {
      throw new VendorError('InvalidPeriod', `The ${name('period')} field must be an integer >= 0.`);
    }
    period = rawPeriod === 0 ? undefined : rawPeriod;
  }

  // 6, 7. maxAnomalyRatio and sensitivity (entire and last only).
  let maxAnomalyRatio = DEFAULT_MAX_ANOMALY_RATIO;
  let sensitivity = DEFAULT_SENSITIVITY;
  if (!isChangePoint) {
    const rawRatio = readOptional(body, 'maxAnomalyRatio');
    if (rawRatio !== undefined) {
      if (!isFiniteNumber(rawRatio) || rawRatio <= 0 || rawRatio >= 0.5) {
        throw new VendorError(
          'InvalidModelArgument',
          `The ${name('maxAnomalyRatio')} field must be less than 50% of the series points (0 < ${fieldSpelling(context.style, 'maxAnomalyRatio')} < 0.5).`,
        );
      }
      maxAnomalyRatio = rawRatio;
    }
    const rawSensitivity = readOptional(body, 'sensitivity');
    if (rawSensitivity !== undefined) {
      if (!isInteger(rawSensitivity) || rawSensitivity < 0 || rawSensitivity > 99) {
        throw new VendorError('InvalidModelArgument', `The ${name('sensitivity')} field must be an integer between 0 and 99.`);
      }
      sensitivity = rawSensitivity;
    }
  }

  // 8. threshold and stableTrendWindow (changepoint only). The "< n/2" half of the window rule
  // waits until the series length is known to be valid (8b below), so a short series is
  // reported as a short series.
  let threshold: number | undefined;
  let stableTrendWindow: number | undefined;
  const stableTrendWindowMessage = `The ${name('stableTrendWindow')} field must be an integer >= 3 and < half of series' length.`;
  if (isChangePoint) {
    const rawThreshold = readOptional(body, 'threshold');
    if (rawThreshold !== undefined) {
      if (!isFiniteNumber(rawThreshold) || rawThreshold < MIN_THRESHOLD || rawThreshold > MAX_THRESHOLD) {
        throw new VendorError('InvalidModelArgument', `The ${name('threshold')} field must be a float between 0.01 and 0.99.`);
      }
      threshold = rawThreshold;
    }
    const rawWindow = readOptional(body, 'stableTrendWindow');
    if (rawWindow !== undefined) {
      if (!isInteger(rawWindow) || rawWindow < MIN_STABLE_TREND_WINDOW) {
        throw new VendorError('InvalidModelArgument', stableTrendWindowMessage);
      }
      stableTrendWindow = rawWindow;
    }
  }

  // 9. imputeMode and imputeFixedValue (entire and last; the change-point request has neither).
  let imputeMode: ImputeMode = DEFAULT_IMPUTE_MODE;
  let imputeFixedValue: number | undefined;
  if (!isChangePoint) {
    const rawImputeMode = readOptional(body, 'imputeMode');
    if (rawImputeMode !== undefined) {
      const matched = matchEnum(IMPUTE_MODES, rawImputeMode);
      if (matched === undefined) {
        throw new VendorError(
          'InvalidImputeMode',
          `The ${name('imputeMode')} field is required and should be one of the following: ${IMPUTE_MODE_LIST}.`,
        );
      }
      imputeMode = matched;
    }
    if (imputeMode === 'fixed') {
      const rawFixed = readOptional(body, 'imputeFixedValue');
      if (!isFiniteNumber(rawFixed) || Math.abs(rawFixed) > MAX_VALUE_MAGNITUDE) {
        throw new VendorError(
          'InvalidImputeFixedValue',
          `The ${name('imputeFixedValue')} field must be a number (|value| <= 1e100) when ${name('imputeMode')} is 'fixed'.`,
        );
      }
      imputeFixedValue = rawFixed;
    }
  }

  // 9b. pastRange (last only; our extension, not the vendor's): the lowest and highest value the
  // series took before its first point, for the new-level alarm.
  let pastRange: PastRange | undefined;
  if (operation === 'last') {
    const rawPast = readOptional(body, 'pastRange');
    if (rawPast !== undefined) {
      const fields = isJsonObject(rawPast) ? rawPast : {};
      const min = readField(fields, 'min');
      const max = readField(fields, 'max');
      if (
        !isFiniteNumber(min) ||
        !isFiniteNumber(max) ||
        Math.abs(min) > MAX_VALUE_MAGNITUDE ||
        Math.abs(max) > MAX_VALUE_MAGNITUDE ||
        min > max
      ) {
        throw new VendorError(
          'InvalidModelArgument',
          `The ${name('pastRange')} field must be an object with numbers ${name('min')} <= ${name('max')} (|value| <= 1e100).`,
        );
      }
      pastRange = { min, max };
    }
  }

  // 10. series shape (a series the body scanner read was an array)
  if (rawSeries === null) {
    throw new VendorError('BadArgument', `The ${name('series')} field cannot be empty.`);
  }
  if (!Array.isArray(rawSeries) && !(rawSeries instanceof ScannedSeries)) {
    throw new VendorError('BadArgument', `The ${name('series')} field must be array/list type.`);
  }

  // 11. series length (exact messages are part of the issue's contract)
  const pointCount = rawSeries.length;
  if (pointCount < MIN_SERIES_POINTS) {
    throw new VendorError('InvalidSeries', 'Series must contain at least 12 points');
  }
  if (pointCount > (context.maxPoints ?? MAX_SERIES_POINTS)) {
    throw new VendorError('InvalidSeries', 'Series exceeds maximum length');
  }

  // 12, 13. points: every point's shape first (in order), then magnitudes.
  const { timestampsMs, values } =
    rawSeries instanceof ScannedSeries ? scannedPoints(rawSeries, granularity) : readPoints(rawSeries, granularity, context, name);

  // 8b. stableTrendWindow against the (now valid) series length.
  if (stableTrendWindow !== undefined && stableTrendWindow * 2 >= pointCount) {
    throw new VendorError('InvalidModelArgument', stableTrendWindowMessage);
  }

  if (isChangePoint) {
    return {
      operation,
      input: { timestampsMs, values, granularity, customInterval, imputeMode: DEFAULT_IMPUTE_MODE },
      options: { period, stableTrendWindow, threshold },
    };
  }
  const input: SeriesInput =
    imputeFixedValue === undefined
      ? { timestampsMs, values, granularity, customInterval, imputeMode }
      : { timestampsMs, values, granularity, customInterval, imputeMode, imputeFixedValue };
  return { operation, input, options: { period, sensitivity, maxAnomalyRatio, ...(pastRange === undefined ? {} : { pastRange }) } };
}

/**
 * Rules 12 and 13 over a series the body scanner read: it took only points with a numeric value
 * within the magnitude and a timestamp that is a string or null, so the one rule left is a
 * granularity's need for a timestamp on every point. Where that fails, the message names the point
 * and what it held, which the scanner did not keep: the ordinary road answers.
 */
function scannedPoints(series: ScannedSeries, granularity: Granularity): { timestampsMs: number[] | null; values: number[] } {
  const complete = series.firstUnusableTimestamp < 0;
  if (granularity !== 'none' && !complete) throw new NotScanned();
  return { timestampsMs: complete ? series.timestampsMs : null, values: series.values };
}

function readPoints(
  series: readonly unknown[],
  granularity: Granularity,
  context: ParseContext,
  name: (camelName: string) => string,
): { timestampsMs: number[] | null; values: number[] } {
  const pointCount = series.length;
  const values = new Array<number>(pointCount);
  const timestampsRequired = granularity !== 'none';
  // With granularity none the timestamps are optional; they reach the engine (which then checks
  // order and duplicates) only when every point carries a parsable one.
  const timestampsMs = new Array<number>(pointCount);
  let timestampsUsable = true;
  let tooLargeAt = -1;

  for (let index = 0; index < pointCount; index++) {
    const point = series[index];
    if (!isJsonObject(point)) {
      throw new VendorError(
        'BadArgument',
        `The ${name('series')} item at index ${index} must be an object with a ${name('value')} field, got ${describeJson(point)}.`,
      );
    }

    const rawTimestamp = readOptional(point, 'timestamp');
    if (timestampsRequired) {
      if (rawTimestamp === undefined) {
        throw new VendorError(
          'BadArgument',
          `The ${name('timestamp')} at index ${index} is required when ${name('granularity')} is not 'none'.`,
        );
      }
      const ms = typeof rawTimestamp === 'string' ? context.parseTimestamp(rawTimestamp) : null;
      if (ms === null) {
        throw new VendorError(
          'BadArgument',
          `The ${name('timestamp')} at index ${index} must be an ISO 8601 date-time string, got ${describeJson(rawTimestamp)}.`,
        );
      }
      timestampsMs[index] = ms;
    } else if (timestampsUsable) {
      const ms = typeof rawTimestamp === 'string' ? context.parseTimestamp(rawTimestamp) : null;
      if (ms === null) timestampsUsable = false;
      else timestampsMs[index] = ms;
    }

    const rawValue = readField(point, 'value');
    if (rawValue === undefined) {
      throw new VendorError('BadArgument', `The ${name('value')} at index ${index} is required.`);
    }
    if (typeof rawValue !== 'number') {
      throw new VendorError('BadArgument', `The ${name('value')} at index ${index} must be a number, got ${describeJson(rawValue)}.`);
    }
    // JSON.parse turns overflowing literals such as 1e400 into Infinity: too large as well.
    if (tooLargeAt < 0 && !(Math.abs(rawValue) <= MAX_VALUE_MAGNITUDE)) tooLargeAt = index;
    values[index] = rawValue;
  }

  if (tooLargeAt >= 0) {
    throw new VendorError(
      'InvalidSeries',
      `The magnitude of the ${name('value')} at index ${tooLargeAt} is too large (|value| must be <= 1e100).`,
    );
  }
  return { timestampsMs: timestampsUsable ? timestampsMs : null, values };
}
