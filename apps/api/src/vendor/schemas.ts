// Wire schemas of the vendor routes, written from the vendor's v1.1 OpenAPI document (a superset
// of v1.0). They feed the OpenAPI output. They do not run on requests or responses: bodies are
// checked by ./request.ts in the vendor's order, and success bodies are checked and written field
// by field by ./response.ts (faster than a schema serialiser here).
import { Type, type Static } from 'typebox';
import { GRANULARITIES, IMPUTE_MODES } from '@adp/detection';
import { API_VERSIONS, MAX_SERIES_POINTS, MIN_SERIES_POINTS } from './request.js';

/** Optional fields take null as absent (the parser reads them so), and the document says so. */
const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(schema: T) => Type.Union([schema, Type.Null()]);

/**
 * With a granularity other than 'none', every point needs a timestamp: the one rule between
 * fields the parser applies that JSON Schema can state (sorting, uniqueness and the time grid are
 * the engine's, and answer 400 InvalidSeries).
 */
export const TIMESTAMPS_WITH_GRANULARITY = {
  // The granularities by name, so that an unknown one fails as itself rather than as the points.
  if: { required: ['granularity'], properties: { granularity: { enum: GRANULARITIES.filter((name) => name !== 'none') } } },
  then: {
    properties: {
      series: { items: { required: ['timestamp'], properties: { timestamp: { type: 'string' } }, description: "when granularity is not 'none'" } },
    },
  },
} as const;

export const VersionParams = Type.Object({
  version: Type.Enum([...API_VERSIONS], {
    description: 'API version path segment; all four route to the same handlers (the v1.1 contract is a superset).',
  }),
});

export const TimeSeriesPoint = Type.Object({
  timestamp: Type.Optional(
    Nullable(
      Type.String({
        format: 'date-time',
        description: "ISO 8601 timestamp; required when granularity is not 'none'.",
      }),
    ),
  ),
  value: Type.Number({ description: 'The measurement; finite, |value| <= 1e100.' }),
});

const Series = Type.Array(TimeSeriesPoint, {
  minItems: MIN_SERIES_POINTS,
  maxItems: MAX_SERIES_POINTS,
  description: 'Points sorted by timestamp, ascending, without duplicate timestamps.',
});

const Granularity = Type.Enum([...GRANULARITIES], {
  description: "Sampling granularity; default 'none' (timestamps optional, points indexed 0..n-1).",
});

const CustomInterval = Type.Integer({
  minimum: 1,
  description: 'Multiplies the granularity: minutely + 5 = 5-minute data. Default 1.',
});

const Period = Type.Integer({
  minimum: 0,
  description: 'Period in points. Absent, null or 0 = detect it.',
});

export const DetectRequest = Type.Object(
  {
    series: Series,
    granularity: Type.Optional(Nullable(Granularity)),
    customInterval: Type.Optional(Nullable(CustomInterval)),
    period: Type.Optional(Nullable(Period)),
    maxAnomalyRatio: Type.Optional(
      Nullable(Type.Number({ exclusiveMinimum: 0, exclusiveMaximum: 0.5, description: 'Largest share of points flagged. Default 0.25.' })),
    ),
    sensitivity: Type.Optional(
      Nullable(Type.Integer({ minimum: 0, maximum: 99, description: 'Higher = narrower margins = more anomalies. Default 95.' })),
    ),
    imputeMode: Type.Optional(
      Nullable(Type.Enum([...IMPUTE_MODES], { description: "How missing points are filled when granularity is not 'none'. Default 'auto'." })),
    ),
    imputeFixedValue: Type.Optional(Nullable(Type.Number({ description: "Fill value; required when imputeMode is 'fixed'." }))),
  },
  { description: 'Keys are matched case-insensitively; unknown keys are ignored.', ...TIMESTAMPS_WITH_GRANULARITY },
);

export const LastDetectRequest = Type.Object(
  {
    ...DetectRequest.properties,
    pastRange: Type.Optional(
      Nullable(Type.Object(
        { min: Type.Number(), max: Type.Number() },
        {
          description:
            'Not in the vendor API: the lowest and highest value the series took before its first point (min <= max). ' +
            'A new level is then only reported beyond this range too.',
        },
      )),
    ),
  },
  { description: 'Keys are matched case-insensitively; unknown keys are ignored.', ...TIMESTAMPS_WITH_GRANULARITY },
);

export const ChangePointDetectRequest = Type.Object(
  {
    series: Series,
    granularity: Type.Optional(Nullable(Granularity)),
    customInterval: Type.Optional(Nullable(CustomInterval)),
    period: Type.Optional(Nullable(Period)),
    stableTrendWindow: Type.Optional(
      Nullable(Type.Integer({ minimum: 3, description: 'Points each side of a change that must show a stable trend; < n/2.' })),
    ),
    threshold: Type.Optional(
      Nullable(Type.Number({ minimum: 0.01, maximum: 0.99, description: 'A point is a change point when its confidence reaches it.' })),
    ),
  },
  { description: 'Keys are matched case-insensitively; unknown keys are ignored.', ...TIMESTAMPS_WITH_GRANULARITY },
);

export const EntireDetectResponse = Type.Object(
  {
    period: Type.Integer({ description: 'Period used; 0 = no recurrent pattern.' }),
    expectedValues: Type.Array(Type.Number()),
    upperMargins: Type.Array(Type.Number()),
    lowerMargins: Type.Array(Type.Number()),
    isAnomaly: Type.Array(Type.Boolean()),
    isNegativeAnomaly: Type.Array(Type.Boolean()),
    isPositiveAnomaly: Type.Array(Type.Boolean()),
    severity: Type.Array(Type.Number({ description: '0 for normal points, (0, 1] for anomalies.' })),
  },
  { description: 'Successful operation: every array has one element per input point, in input order.' },
);
export type EntireDetectResponse = Static<typeof EntireDetectResponse>;

export const LastDetectResponse = Type.Object(
  {
    period: Type.Integer(),
    suggestedWindow: Type.Integer({ description: 'Points to send for the next last-point request.' }),
    expectedValue: Type.Number(),
    upperMargin: Type.Number(),
    lowerMargin: Type.Number(),
    isAnomaly: Type.Boolean(),
    isNegativeAnomaly: Type.Boolean(),
    isPositiveAnomaly: Type.Boolean(),
    severity: Type.Number(),
  },
  { description: 'Successful operation: the status of the last point.' },
);
export type LastDetectResponse = Static<typeof LastDetectResponse>;

export const ChangePointDetectResponse = Type.Object(
  {
    period: Type.Integer(),
    isChangePoint: Type.Array(Type.Boolean()),
    confidenceScores: Type.Array(Type.Number({ description: 'In [0, 1].' })),
  },
  { description: 'Successful operation: every array has one element per input point, in input order.' },
);
export type ChangePointDetectResponse = Static<typeof ChangePointDetectResponse>;

export const VendorErrorResponse = Type.Object(
  {
    code: Type.String({ description: "The vendor's error code (also sent as the x-ms-error-code header)." }),
    message: Type.String(),
  },
  {
    description: "Error in the vendor's shape.",
    // Read by @fastify/swagger into the response's headers.
    headers: { 'x-ms-error-code': { type: 'string', description: 'The same value as `code`.' } },
  },
);
