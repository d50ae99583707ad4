// Wire schemas of the native routes (snake_case fields; the detect response also carries the
// vendor entire-series fields under their vendor names). Fastify validates requests against the
// request schemas (../schema-validation.ts turns a failure into a coded error) and the handlers'
// types come from them; ./request.ts applies what a schema cannot state.
import { Type, type Static, type TObject } from 'typebox';
import { GRANULARITIES, IMPUTE_MODES } from '@adp/detection';
import { REGIMES } from '@adp/regimes';
import {
  MACHINE_ID_PATTERN,
  MACHINE_ID_RULE,
  MAX_BASELINE_ENERGIES,
  MAX_BASELINE_ENERGY,
  MAX_BASELINE_POINTS,
  MAX_LABEL_LENGTH,
  MIN_BASELINE_POINTS,
} from './request.js';
import { MAX_SERIES_POINTS, MIN_SERIES_POINTS } from '../vendor/request.js';
import { MAX_MULTIVARIATE_CHANNELS } from './multivariate.js';
import { CHANNEL_NAME_PATTERN, CHANNEL_NAME_RULE } from '@adp/domain';
import { MAX_VALUE_MAGNITUDE } from '../vendor/request.js';
import { TIMESTAMPS_WITH_GRANULARITY } from '../vendor/schemas.js';

export const NativeError = Type.Object(
  { error: Type.Object({ code: Type.String(), message: Type.String() }) },
  { description: 'A coded error: `error.code` is stable (InvalidMachineId, InvalidSeries, InvalidArgument, BaselineNotFound, MachineNotFound, ModelUnavailable, ...).' },
);

export const MachineId = Type.String({
  pattern: MACHINE_ID_PATTERN.source,
  description: 'Machine id: 1..128 of A-Z a-z 0-9 . _ : - starting with a letter or digit; scoped to your organization.',
});

export const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(schema: T) => Type.Union([schema, Type.Null()]);

/** A reading: JSON numbers past the limit (1e400 parses as Infinity) are refused too. */
export const Reading = Type.Number({ minimum: -MAX_VALUE_MAGNITUDE, maximum: MAX_VALUE_MAGNITUDE });

export const Point = Type.Object({
  timestamp: Type.Optional(Nullable(Type.String({ format: 'date-time', description: "Required when granularity is not 'none'." }))),
  value: { ...Reading, description: 'Finite, |value| <= 1e100.' },
});

const ChannelPoint = Type.Object(
  {
    timestamp: Type.Optional(Nullable(Type.String({ format: 'date-time', description: "Required when granularity is not 'none'." }))),
    channels: Type.Record(Type.String({ pattern: CHANNEL_NAME_PATTERN.source }), Reading, {
      minProperties: 1,
      maxProperties: MAX_MULTIVARIATE_CHANNELS,
      additionalProperties: false,
      description:
        "A multivariate point: named readings (finite, |value| <= 1e100), as telemetry's points carry them. Every point carries the first point's channels; each channel is the series `<machine_id>:<channel>`.",
    }),
  },
  { description: 'A point of a multivariate series (instead of value).' },
);

/** A point of a native series (POST /v1/detect, /v1/baseline, /v1/jobs): `value`, or named `channels`. */
export const SeriesPoint = Type.Union([Point, ChannelPoint]);

export const GranularityField = Type.Enum([...GRANULARITIES], { description: "Default 'none'." });
const Sensitivity = Type.Integer({ minimum: 0, maximum: 99 });

export const BaselineRequest = Type.Object(
  {
    machine_id: MachineId,
    series: Type.Optional(
      Nullable(
        Type.Array(SeriesPoint, {
          minItems: MIN_BASELINE_POINTS,
          maxItems: MAX_BASELINE_POINTS,
          description:
            "Healthy data of the machine to fine-tune on: points with 'value', or all with 'channels' (a multivariate machine: each channel fine-tuned as its own series).",
        }),
      ),
    ),
    energies: Type.Optional(
      Nullable(
        Type.Array(Type.Number({ minimum: 0, maximum: MAX_BASELINE_ENERGY }), {
          minItems: MIN_BASELINE_POINTS,
          maxItems: MAX_BASELINE_ENERGIES,
          description: 'Instead of series: energies already computed; statistics only, fine-tuning skipped.',
        }),
      ),
    ),
    granularity: Type.Optional(Nullable(GranularityField)),
    label: Type.Optional(Nullable(Type.String({ maxLength: MAX_LABEL_LENGTH }))),
    sensitivity: Type.Optional(Nullable({ ...Sensitivity, description: 'Default sensitivity of detections for this machine.' })),
  },
  // Exactly one of the two is a rule of the handler: its messages say which is missing or extra.
  { description: 'Exactly one of series or energies (null counts as absent).', ...TIMESTAMPS_WITH_GRANULARITY },
);

const BaselineStats = Type.Object({
  energy_mean: Type.Number(),
  energy_std: Type.Number(),
  energy_p99: Type.Number(),
  num_windows: Type.Integer({
    description:
      'Energies the statistics are over: the held-out tail of a fine-tuned series (its last 20 % of windows, never fitted on), or every given energy.',
  }),
  series_length: Type.Integer(),
});

const FineTuneStats = Type.Object({
  status: Type.Union([Type.Literal('completed'), Type.Literal('skipped')]),
  final_loss: Nullable(Type.Number()),
  epochs_run: Type.Integer(),
  epochs_max: Type.Integer(),
  early_stopped: Type.Boolean(),
  windows: Type.Integer(),
  duration_seconds: Type.Number(),
});

const ShapeSummary = Nullable(
  Type.Object(
    {
      length: Type.Integer({ minimum: 2, description: "Points in one subsequence: the healthy series' dominant cycle (16 to 400 points), else 100, at most a third of the series." }),
      reference_points: Type.Integer({ minimum: 1, description: 'Healthy points kept to compare shapes with (the last 8,640 at most).' }),
      usual_distance: Type.Number({ description: "Median distance of the healthy subsequences from their nearest other one: a shape score's 0." }),
      spread: Type.Number({ description: "Robust spread of those distances: a shape score's unit." }),
    },
    { description: 'What detection compares shapes with (shape_scores); null for a statistics-only baseline or a multivariate machine (each channel keeps its own).' },
  ),
);

const ChannelBaseline = Type.Object({
  channel: Type.String(),
  series_id: Type.String({ description: '`<machine_id>:<channel>`: where the channel\'s results and status are.' }),
  baseline_id: Type.String(),
  stats: BaselineStats,
  finetune_stats: FineTuneStats,
  shape: ShapeSummary,
});

const MachineModelSummary = Type.Object(
  {
    kind: Type.Literal('gaussian-drift'),
    channels: Type.Array(Type.String()),
    rows: Type.Integer({ minimum: 0, description: 'Healthy rows the model was fitted on.' }),
    drifting_channels: Type.Array(Type.String(), { description: 'Channels whose level wanders in the baseline: their spread grows with the points since it.' }),
    threshold: Type.Number({ description: "The machine score's threshold at the baseline's sensitivity (95 without one)." }),
  },
  { description: "A multivariate machine's joint model of its channels (docs/machine-model.md)." },
);

export const BaselineResponse = Type.Object({
  machine_id: Type.String(),
  baseline_id: Type.String({ description: '`bl_<machine_id>`' }),
  created_at: Type.String({ format: 'date-time', description: 'When the first baseline of this machine was created.' }),
  updated_at: Type.String({ format: 'date-time', description: 'When this baseline was written.' }),
  label: Nullable(Type.String()),
  granularity: Nullable(Type.String()),
  sensitivity: Nullable(Type.Integer()),
  stats: BaselineStats,
  finetune_stats: FineTuneStats,
  shape: ShapeSummary,
  status: Type.Literal('active'),
  channels: Type.Optional(
    Type.Array(ChannelBaseline, {
      description:
        "A multivariate machine's channels, each with its own baseline; absent for a single series. The machine's stats then pool the channels' held-out energies and its finetune_stats sum theirs.",
    }),
  ),
  machine_model: Type.Optional(Nullable(MachineModelSummary)),
});
export type BaselineResponse = Static<typeof BaselineResponse>;

export const BaselineQuery = Type.Object({ machine_id: MachineId });
export const MachineParams = Type.Object({ machine_id: MachineId });
export const MachinesQuery = Type.Object({
  include: Type.Optional(
    Type.Union([Type.Literal('telemetry'), Type.Literal('')], {
      description:
        "'telemetry': also list the machines without a baseline, those with stored streaming results and any other the store holds; empty = absent.",
    }),
  ),
});

const RegimeCounts = Type.Object(Object.fromEntries(REGIMES.map((regime) => [regime, Type.Integer({ minimum: 0 })])));

/** Aggregates of a machine's stored streaming results (POST /v1/telemetry or the telemetry topic, judged by the workers). */
const TelemetrySummary = Type.Union(
  [
    Type.Object(
      {
        points: Type.Integer({ minimum: 1, description: 'Stored result rows: each point once, however often it was replayed.' }),
        anomalies: Type.Integer({ minimum: 0, description: 'Of those, the points judged anomalous.' }),
        first_point_at: Type.String({ format: 'date-time', description: "Timestamp of the earliest stored point (the data's time, not arrival)." }),
        last_point_at: Type.String({ format: 'date-time', description: 'Timestamp of the latest stored point.' }),
        regime_counts: { ...RegimeCounts, description: 'The stored points per regime (UNKNOWN: judged without a baseline).' },
      },
      { description: 'Stored streaming results of this machine, summed.' },
    ),
    Type.Null(),
  ],
  {
    description:
      'Aggregates of the per-point results the workers stored for this machine (GET /v1/machines/{machine_id}/results); null when it has none or the server has no results store.',
  },
);

export const MachinesResponse = Type.Object({
  machines: Type.Array(
    Type.Object({
      machine_id: Type.String(),
      baseline_created_at: Nullable(Type.String({ format: 'date-time' })),
      num_windows: Nullable(Type.Integer()),
      label: Nullable(Type.String()),
      channels: Type.Optional(Type.Array(Type.String(), { description: "A multivariate machine's channels; absent for a single series." })),
      telemetry: TelemetrySummary,
    }),
    {
      description:
        'Ascending by machine_id: machines with a baseline, machines named in detections, and machines with stored streaming results (baseline fields null for those).',
    },
  ),
  total: Type.Integer(),
});

export const DeleteMachineResponse = Type.Object({
  machine_id: Type.String(),
  deleted: Type.Literal(true),
  baseline_deleted: Type.Boolean(),
  /** Stored streaming results of the machine or its channels were removed. */
  results_deleted: Type.Boolean(),
});


export const MachineStatusResponse = Type.Object({
  machine_id: Type.String(),
  baseline_present: Type.Boolean(),
  baseline_id: Nullable(Type.String()),
  baseline_created_at: Nullable(Type.String({ format: 'date-time' })),
  baseline_updated_at: Nullable(Type.String({ format: 'date-time' })),
  label: Nullable(Type.String()),
  model_in_use: Type.Union([Type.Literal('fine-tuned'), Type.Literal('generic'), Type.Literal('machine-model')], {
    description:
      "What a detection for this machine uses now: 'fine-tuned' with a fine-tuned baseline, 'machine-model' for a multi-channel machine whose baseline has a joint model of its channels (each channel has its own fine-tuned baseline), else 'generic'.",
  }),
  channels: Type.Optional(Type.Array(Type.String(), { description: "A multi-channel machine's channels (each the series '<machine_id>:<channel>'); absent for a single series." })),
  predictor_loaded: Type.Boolean({ description: 'Whether the fine-tuned predictor is in the in-memory cache.' }),
  first_seen_at: Type.String({
    format: 'date-time',
    description:
      'When the machine was first named (baseline or detection); for a machine known only from its stored results, the timestamp of its first stored point.',
  }),
  counters_since: Type.String({
    format: 'date-time',
    description:
      'Start of detections_since and points_since: the current baseline, else the first sighting (first_seen_at). The counters cover synchronous detections (POST /v1/detect), not telemetry.',
  }),
  detections_since: Type.Integer(),
  points_since: Type.Integer(),
  last_detection_at: Nullable(Type.String({ format: 'date-time' })),
  recent: Type.Object(
    {
      detections: Type.Integer(),
      points: Type.Integer(),
      regime_counts: RegimeCounts,
    },
    { description: 'The most recent detections (at most 20), summed.' },
  ),
  telemetry: TelemetrySummary,
});

/** The detection options of POST /v1/detect and POST /v1/jobs (null counts as absent). */
export const DetectOptionFields = {
  granularity: Type.Optional(Nullable(GranularityField)),
  customInterval: Type.Optional(Nullable(Type.Integer({ minimum: 1 }))),
  period: Type.Optional(Nullable(Type.Integer({ minimum: 0, description: 'Period in points. Absent, null or 0 = detect it.' }))),
  sensitivity: Type.Optional(Nullable({ ...Sensitivity, description: "Default 95, or the machine's baseline sensitivity." })),
  maxAnomalyRatio: Type.Optional(Nullable(Type.Number({ exclusiveMinimum: 0, exclusiveMaximum: 0.5 }))),
  imputeMode: Type.Optional(Nullable(Type.Enum([...IMPUTE_MODES], { description: "Default 'auto'." }))),
  imputeFixedValue: Type.Optional(Nullable({ ...Reading, description: "Required when imputeMode is 'fixed'." })),
};

export type DetectOptionFields = Static<TObject<typeof DetectOptionFields>>;

/** What the id patterns mean, for validation messages. */
export const ID_RULES = { [MACHINE_ID_PATTERN.source]: MACHINE_ID_RULE, [CHANNEL_NAME_PATTERN.source]: CHANNEL_NAME_RULE };

/** imputeMode 'fixed' needs its value. */
export const FIXED_VALUE_WITH_FIXED_MODE = {
  if: { required: ['imputeMode'], properties: { imputeMode: { const: 'fixed' } } },
  then: { required: ['imputeFixedValue'], properties: { imputeFixedValue: { type: 'number' } }, description: "when imputeMode is 'fixed'" },
} as const;

export const DetectRequest = Type.Object(
  {
    series: Type.Array(SeriesPoint, {
      minItems: MIN_SERIES_POINTS,
      maxItems: MAX_SERIES_POINTS,
      description: "Points with 'value', or all with 'channels' (multivariate: the answer is per channel plus the machine's regimes).",
    }),
    ...DetectOptionFields,
    machine_id: Type.Optional(Nullable(MachineId)),
    include_energy: Type.Optional(
      Nullable(Type.Boolean({ default: false, description: 'True: the answer carries energies (z_scores are the same numbers against the baseline).' })),
    ),
    include_embeddings: Type.Optional(Nullable(Type.Boolean({ default: false }))),
    include_z_scores: Type.Optional(Nullable(Type.Boolean({ default: true, description: 'False: z_scores is null (they still take part in the verdict).' }))),
    include_shape_scores: Type.Optional(
      Nullable(Type.Boolean({ default: true, description: 'False: shape_scores is null (they still take part in the verdict).' })),
    ),
  },
  { description: 'The vendor entire-detect fields plus the native ones.', allOf: [TIMESTAMPS_WITH_GRANULARITY, FIXED_VALUE_WITH_FIXED_MODE] },
);

const Numbers = Type.Array(Type.Number());
const Booleans = Type.Array(Type.Boolean());

const SeriesEpisode = Type.Object({
  start: Type.Integer({ minimum: 0, description: 'Index of its first flagged point.' }),
  end: Type.Integer({ minimum: 0, description: 'Index of its last flagged point (inclusive).' }),
  start_timestamp: Nullable(Type.String({ format: 'date-time' })),
  end_timestamp: Nullable(Type.String({ format: 'date-time' })),
  peak: Type.Integer({ minimum: 0, description: 'Index of its most severe point.' }),
  severity: Type.Number({ minimum: 0, maximum: 1, description: "The peak's severity." }),
  flagged_points: Type.Integer({ minimum: 1 }),
  direction: Type.Union([Type.Literal('positive'), Type.Literal('negative'), Type.Literal('both')], {
    description: 'Whether its flagged points were above the expected value, below it, or both.',
  }),
  closed: Type.Boolean({ description: 'False until 10 points without a flag have followed its last flag: it may still go on.' }),
});

export const DetectResponse = Type.Object({
  period: Type.Integer(),
  expectedValues: Numbers,
  upperMargins: Numbers,
  lowerMargins: Numbers,
  isAnomaly: Booleans,
  isNegativeAnomaly: Booleans,
  isPositiveAnomaly: Booleans,
  severity: Numbers,
  episodes: Type.Array(SeriesEpisode, {
    description:
      'Runs of flagged points: an episode opens at a flag and closes once 10 points without one have followed its last flag (the rule the stream workers follow for telemetry and its alerts).',
  }),
  regimes: Type.Array(Type.Enum([...REGIMES])),
  energies: Nullable(Numbers),
  z_scores: Type.Union([Numbers, Type.Null()], { description: 'Null when include_z_scores is false.' }),
  shape_scores: Nullable(
    Type.Array(Type.Number(), {
      description:
        "With a baseline that keeps a shape reference: per point, how far the shape around it is from the nearest healthy shape of the baseline, less the usual distance, in units of its spread (0 usual, 3 far). Null without one, or when include_shape_scores is false.",
    }),
  ),
  embeddings: Nullable(Type.Array(Numbers, { description: '192 numbers per point, rounded to 6 decimals.' })),
  model_version: Type.String(),
  engine: Type.Union([Type.Literal('fine-tuned'), Type.Literal('generic')], {
    description: "Which predictor produced the energies: the machine's fine-tuned one or the generic one.",
  }),
  machine_id: Nullable(Type.String()),
  baseline_id: Nullable(Type.String()),
  inference_time_ms: Type.Number({ description: "Wall time of the learned model's inference (energies and embeddings)." }),
});
export type DetectResponse = Static<typeof DetectResponse>;

const MachineEpisode = Type.Object({
  start: Type.Integer({ minimum: 0, description: 'Index of its first point.' }),
  end: Type.Integer({ minimum: 0, description: 'Index of its last point (inclusive).' }),
  start_timestamp: Nullable(Type.String({ format: 'date-time' })),
  end_timestamp: Nullable(Type.String({ format: 'date-time' })),
  peak: Type.Integer({ minimum: 0, description: 'Index of its highest score.' }),
  peak_score: Type.Number(),
  severity: Type.Number({ minimum: 0, maximum: 1, description: '1 - threshold / peak score.' }),
  channels: Type.Array(Type.Object({ channel: Type.String(), share: Type.Number({ minimum: 0, maximum: 1 }) }), {
    description: "The channels that drove it: each one's share of the episode's summed score (those of at least 0.1), largest first.",
  }),
  closed: Type.Boolean({ description: 'False until a whole smoothing window (20 points) has passed under the threshold after it: it may still go on.' }),
});

const MachineVerdictBody = Type.Object(
  {
    model: Type.Literal('gaussian-drift'),
    sensitivity: Type.Integer({ minimum: 0, maximum: 99 }),
    threshold: Type.Number({ description: 'A score above it is out of the healthy state.' }),
    score: Type.Array(Type.Number(), { description: 'Per point: the trailing mean squared distance of the channels from their joint healthy state.' }),
    is_anomaly: Type.Array(Type.Boolean(), { description: 'Per point: its score is over the threshold.' }),
    severity: Type.Array(Type.Number({ minimum: 0, maximum: 1 }), { description: 'Per point: 1 - threshold / score where out, else 0.' }),
    contributions: Type.Record(Type.String(), Type.Array(Type.Number({ minimum: 0 })), {
      description: "Per channel, per point: its part of the score (the parts add up to the score).",
    }),
    episodes: Type.Array(MachineEpisode),
  },
  { description: "The machine's verdict against the joint model of its baseline; null without one." },
);

export const MultivariateDetectResponse = Type.Object(
  {
    machine_id: Nullable(Type.String()),
    baseline_id: Nullable(Type.String({ description: "The machine's multivariate baseline; null without one." })),
    model_version: Type.String(),
    regimes: Type.Array(Type.Enum([...REGIMES]), {
      description: "Per point: the most severe of the channels' regimes (SHOCK > TRANSITION > ACTIVE > HEALTHY > UNKNOWN).",
    }),
    driver: Type.Array(Nullable(Type.String()), {
      description: 'Per point: the channel at the machine regime with the highest z-score; null where the machine is HEALTHY or UNKNOWN.',
    }),
    drivers: Type.Record(Type.String(), Type.Integer({ minimum: 0 }), { description: 'Points each channel drove (every channel listed).' }),
    channels: Type.Record(Type.String(), DetectResponse, {
      description: "Each channel's univariate answer, judged as the series `<machine_id>:<channel>` with its baseline.",
    }),
    inference_time_ms: Type.Number({ description: "The channels' inference times summed." }),
    machine: Type.Optional(Nullable(MachineVerdictBody)),
  },
  { description: 'The answer to a multivariate series (points with channels).' },
);
export type MultivariateDetectResponse = Static<typeof MultivariateDetectResponse>;
