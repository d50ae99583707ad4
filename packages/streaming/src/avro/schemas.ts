// The TypeScript side of the Avro schemas in schemas/avro/. Each record's Parsing Canonical Form
// (the spec's normalised schema: full names, no docs or defaults) is spelled here once `as const`,
// the TS types are derived from it by `AvroValue`, and test/schemas.test.ts checks each constant
// against the canonical form of its `.avsc` file. So the `.avsc` stays the one source: an edit
// there that is not mirrored here fails the tests, and no TS interface is written by hand.

/**
 * The `channels` field both telemetry records carry (a point's readings of a multi-channel
 * machine), spelled once: its canonical form is the same in telemetry.avsc and telemetry-batch.avsc.
 */
const CHANNELS_FIELD = {
  name: 'channels',
  type: [
    'null',
    {
      type: 'array',
      items: {
        name: 'adp.streaming.ChannelValue',
        type: 'record',
        fields: [
          { name: 'name', type: 'string' },
          { name: 'value', type: 'double' },
        ],
      },
    },
  ],
} as const;

/** Canonical form of adp.streaming.TelemetryPoint (schemas/avro/telemetry.avsc). */
export const TELEMETRY_POINT_CANONICAL = {
  name: 'adp.streaming.TelemetryPoint',
  type: 'record',
  fields: [
    { name: 'organization', type: 'string' },
    { name: 'machine_id', type: 'string' },
    { name: 'timestamp', type: 'long' },
    { name: 'value', type: ['null', 'double'] },
    CHANNELS_FIELD,
    { name: 'tags', type: { type: 'map', values: 'string' } },
  ],
} as const;

/** Canonical form of adp.streaming.TelemetryBatch (schemas/avro/telemetry-batch.avsc). */
export const TELEMETRY_BATCH_CANONICAL = {
  name: 'adp.streaming.TelemetryBatch',
  type: 'record',
  fields: [
    { name: 'organization', type: 'string' },
    { name: 'machine_id', type: 'string' },
    {
      name: 'points',
      type: {
        type: 'array',
        items: {
          name: 'adp.streaming.TelemetryReading',
          type: 'record',
          fields: [
            { name: 'timestamp', type: 'long' },
            { name: 'value', type: ['null', 'double'] },
            CHANNELS_FIELD,
          ],
        },
      },
    },
    { name: 'tags', type: { type: 'map', values: 'string' } },
  ],
} as const;

/** Canonical form of adp.streaming.DetectionResult (schemas/avro/result.avsc). */
export const DETECTION_RESULT_CANONICAL = {
  name: 'adp.streaming.DetectionResult',
  type: 'record',
  fields: [
    { name: 'organization', type: 'string' },
    { name: 'machine_id', type: 'string' },
    { name: 'timestamp', type: 'long' },
    { name: 'value', type: 'double' },
    { name: 'expected_value', type: 'double' },
    { name: 'upper_margin', type: 'double' },
    { name: 'lower_margin', type: 'double' },
    { name: 'is_anomaly', type: 'boolean' },
    { name: 'is_positive_anomaly', type: 'boolean' },
    { name: 'is_negative_anomaly', type: 'boolean' },
    { name: 'severity', type: 'double' },
    { name: 'energy', type: ['null', 'double'] },
    { name: 'z_score', type: ['null', 'double'] },
    {
      name: 'regime',
      type: {
        name: 'adp.streaming.Regime',
        type: 'enum',
        symbols: ['HEALTHY', 'ACTIVE', 'TRANSITION', 'SHOCK', 'UNKNOWN'],
      },
    },
    { name: 'model_version', type: 'string' },
  ],
} as const;

/** Canonical form of adp.streaming.DeadLetter (schemas/avro/dead-letter.avsc). */
export const DEAD_LETTER_CANONICAL = {
  name: 'adp.streaming.DeadLetter',
  type: 'record',
  fields: [
    { name: 'original_value', type: 'bytes' },
    { name: 'original_key', type: ['null', 'bytes'] },
    { name: 'reason', type: 'string' },
    { name: 'detail', type: 'string' },
    { name: 'source_topic', type: 'string' },
    { name: 'source_partition', type: 'int' },
    { name: 'source_offset', type: 'long' },
    { name: 'failed_at', type: 'long' },
  ],
} as const;

/** Canonical form of adp.streaming.JobChunk (schemas/avro/job-chunk.avsc). */
export const JOB_CHUNK_CANONICAL = {
  name: 'adp.streaming.JobChunk',
  type: 'record',
  fields: [
    { name: 'organization', type: 'string' },
    { name: 'job_id', type: 'string' },
    { name: 'series_index', type: 'int' },
    { name: 'chunk_index', type: 'int' },
    { name: 'chunk_count', type: 'int' },
    { name: 'first_point', type: 'long' },
    { name: 'timestamps', type: ['null', { type: 'array', items: 'long' }] },
    { name: 'values', type: { type: 'array', items: 'double' } },
  ],
} as const;

/** Canonical form of adp.streaming.Alert (schemas/avro/alert.avsc). */
export const ALERT_CANONICAL = {
  name: 'adp.streaming.Alert',
  type: 'record',
  fields: [
    { name: 'event_id', type: 'string' },
    { name: 'event', type: { name: 'adp.streaming.AlertEvent', type: 'enum', symbols: ['EPISODE_OPENED', 'EPISODE_CLOSED', 'REGIME_CHANGED'] } },
    { name: 'organization', type: 'string' },
    { name: 'machine_id', type: 'string' },
    { name: 'series_id', type: 'string' },
    { name: 'channels', type: { type: 'array', items: 'string' } },
    { name: 'started_at', type: 'long' },
    { name: 'ended_at', type: ['null', 'long'] },
    { name: 'flagged_points', type: 'int' },
    { name: 'peak_at', type: 'long' },
    { name: 'peak_severity', type: 'double' },
    { name: 'peak_value', type: 'double' },
    { name: 'expected_value', type: 'double' },
    { name: 'upper_margin', type: 'double' },
    { name: 'lower_margin', type: 'double' },
    {
      name: 'regime',
      type: { name: 'adp.streaming.Regime', type: 'enum', symbols: ['HEALTHY', 'ACTIVE', 'TRANSITION', 'SHOCK', 'UNKNOWN'] },
    },
    { name: 'raised_at', type: 'long' },
    { name: 'previous_regime', type: ['null', 'string'] },
  ],
} as const;

/**
 * The JS value avsc reads and writes for an Avro schema (unwrapped unions, the default): `long`
 * as a number (avsc refuses values beyond 2^53), `bytes` as a Buffer, an enum as its symbol.
 */
export type AvroValue<S> = S extends 'null'
  ? null
  : S extends 'boolean'
    ? boolean
    : S extends 'int' | 'long' | 'float' | 'double'
      ? number
      : S extends 'string'
        ? string
        : S extends 'bytes'
          ? Buffer
          : S extends readonly (infer Branch)[]
            ? AvroValue<Branch>
            : S extends { readonly type: 'array'; readonly items: infer Items }
              ? AvroValue<Items>[]
              : S extends { readonly type: 'map'; readonly values: infer Values }
                ? Record<string, AvroValue<Values>>
                : S extends { readonly type: 'enum'; readonly symbols: readonly (infer Symbol)[] }
                  ? Symbol
                  : S extends { readonly type: 'record'; readonly fields: readonly AvroField[] }
                    ? AvroRecord<S['fields']>
                    : never;

interface AvroField {
  readonly name: string;
  readonly type: unknown;
}

type AvroRecord<Fields extends readonly AvroField[]> = {
  -readonly [F in Fields[number] as F['name']]: AvroValue<F['type']>;
};

/** One point on the telemetry topic. */
export type TelemetryPoint = AvroValue<typeof TELEMETRY_POINT_CANONICAL>;
/** One named channel's reading inside a TelemetryPoint. */
export type ChannelValue = NonNullable<TelemetryPoint['channels']>[number];
/** Several points of one machine in one telemetry message. */
export type TelemetryBatch = AvroValue<typeof TELEMETRY_BATCH_CANONICAL>;
/** One point inside a TelemetryBatch. */
export type TelemetryReading = TelemetryBatch['points'][number];
/** One judged point on the results topic and in the results table. */
export type DetectionResult = AvroValue<typeof DETECTION_RESULT_CANONICAL>;
/** A machine's operating regime. */
export type Regime = DetectionResult['regime'];
/** A message parked on the dead-letter topic. */
export type DeadLetter = AvroValue<typeof DEAD_LETTER_CANONICAL>;

/** A run of consecutive points of one series of a detection job, on the jobs topic. */
export type JobChunk = AvroValue<typeof JOB_CHUNK_CANONICAL>;
/** An episode opened or closed, or a regime changed, on the alerts topic. */
export type Alert = AvroValue<typeof ALERT_CANONICAL>;
/** Which episode event an alert is. */
export type AlertEvent = Alert['event'];

/** The regimes in the schema's order, for code that iterates them (the ClickHouse Enum8 too). */
export const REGIMES = DETECTION_RESULT_CANONICAL.fields[13].type.symbols;
