// Wire schemas of the detection-job routes (docs/jobs.md). Fastify validates JSON bodies, queries
// and paths against them (../schema-validation.ts answers a failure with a coded error naming the
// field); a text/csv body becomes the JSON body and is checked against the same schema.
// ./request.ts applies what a schema cannot state (limits from configuration, timestamps' order).
import { Type, type Static } from 'typebox';
import { MIN_SERIES_POINTS } from '@adp/domain';
import { PointVerdictFields } from '../point-verdict.js';
import { FIXED_VALUE_WITH_FIXED_MODE, DetectOptionFields, MachineId, Nullable, SeriesPoint } from '../native/schemas.js';
import { TIMESTAMPS_WITH_GRANULARITY } from '../vendor/schemas.js';
import { JOBS_MAX_LIMIT, RESULTS_MAX_LIMIT } from './request.js';

const Series = Type.Array(SeriesPoint, {
  minItems: MIN_SERIES_POINTS,
  description:
    "Points in ascending timestamp order, 12 or more; JOBS_MAX_POINTS (1,000,000) for the job in all. Points with 'value', or all with 'channels' (a machine's channels: each judged as a series; with the machine's multivariate baseline, the readings are also judged together).",
});

export const JobRequest = Type.Object(
  {
    series: Type.Optional(Nullable(Series)),
    machine_id: Type.Optional(Nullable(MachineId)),
    series_list: Type.Optional(
      Nullable(
        Type.Array(Type.Object({ machine_id: MachineId, series: Series }), {
          minItems: 1,
          description: 'Several series, each with its machine: at most JOBS_MAX_SERIES (1,000).',
        }),
      ),
    ),
    ...DetectOptionFields,
  },
  {
    description: "One series ('series', optional 'machine_id') or several ('series_list'), with the detection options of POST /v1/detect.",
    allOf: [TIMESTAMPS_WITH_GRANULARITY, FIXED_VALUE_WITH_FIXED_MODE],
  },
);
export type JobRequest = Static<typeof JobRequest>;

// The store's JobStatus values; jobBody() assigns one to this, so the two cannot drift apart.
const Status = Type.Union(
  [Type.Literal('queued'), Type.Literal('running'), Type.Literal('done'), Type.Literal('failed'), Type.Literal('cancelled')],
  { description: 'queued, running, done, failed or cancelled.' },
);

const Failure = Type.Object({
  code: Type.String(),
  message: Type.String(),
  series_index: Type.Union([Type.Integer(), Type.Null()]),
  machine_id: Type.Union([Type.String(), Type.Null()]),
});

const JobSeriesBody = Type.Object({
  series_index: Type.Integer(),
  machine_id: Type.Union([Type.String(), Type.Null()]),
  kind: Type.Union([Type.Literal('series'), Type.Literal('channel'), Type.Literal('machine')], {
    description: "series: as sent; channel: one channel of a multichannel series, judged alone; machine: a multichannel series' readings judged together against the machine's joint model.",
  }),
  channel: Type.Union([Type.String(), Type.Null()], { description: 'The channel, for kind channel.' }),
  channels: Type.Union([Type.Array(Type.String()), Type.Null()], { description: "The joint model's channels, for kind machine." }),
  points: Type.Integer(),
  sensitivity: Type.Integer({ description: "The sensitivity it is judged with: the request's, else its machine's baseline's, else 95." }),
  done: Type.Boolean(),
  period: Type.Union([Type.Integer(), Type.Null()], { description: 'The period the engine used, once the series is judged.' }),
});

export const JobBody = Type.Object(
  {
    job_id: Type.String(),
    status: Status,
    series_count: Type.Integer(),
    series_done: Type.Integer(),
    points_total: Type.Integer(),
    points_done: Type.Integer(),
    created_at: Type.String({ format: 'date-time' }),
    started_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
    finished_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
    queued_ms: Type.Union([Type.Integer(), Type.Null()], { description: 'From acceptance to the first chunk taken by a worker.' }),
    running_ms: Type.Union([Type.Integer(), Type.Null()], { description: 'From the first chunk taken to the end (so far, while running).' }),
    failure: Type.Union([Failure, Type.Null()], { description: 'Why and where a failed job failed.' }),
    options: Type.Object({
      granularity: Type.String(),
      customInterval: Type.Integer(),
      imputeMode: Type.String(),
      imputeFixedValue: Type.Optional(Type.Number()),
      period: Type.Optional(Type.Integer()),
      sensitivity: Type.Integer(),
      maxAnomalyRatio: Type.Number(),
    }),
    series: Type.Array(JobSeriesBody),
  },
  { description: 'A detection job and its progress.' },
);
export type JobBody = Static<typeof JobBody>;

/** POST /v1/jobs with a CSV body: the fields the JSON body would carry besides the series. */
export const JobCsvQuery = Type.Object(
  { machine_id: Type.Optional(MachineId), ...DetectOptionFields },
  { description: 'With a text/csv body only: the options and machine of the series in the file (a JSON body carries them itself).' },
);

export const JobParams = Type.Object({ job_id: Type.String({ description: 'job_ and 32 hex digits.' }) });

export const JobResultsQuery = Type.Object({
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: RESULTS_MAX_LIMIT, description: 'Rows per page, default 1000.' })),
  machine_id: Type.Optional(MachineId),
  series_index: Type.Optional(Type.Integer({ minimum: 0, description: "One series of the job only (a multichannel series' machine verdict, say)." })),
  cursor: Type.Optional(Type.String({ description: "The previous page's next_cursor." })),
});

export const JobsQuery = Type.Object({
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: JOBS_MAX_LIMIT, description: 'Jobs per page, newest first; default 50.' })),
  cursor: Type.Optional(Type.String({ description: "The previous page's next_cursor." })),
});

/** Present on the rows and episodes of a multichannel series only. */
const MultichannelKind = Type.Optional(
  Type.Union([Type.Literal('channel'), Type.Literal('machine')], {
    description: "A multichannel series' channel, or its machine verdict (value: the machine's score; band 0 to the threshold).",
  }),
);

const ResultRowBody = Type.Object({
  series_index: Type.Integer(),
  machine_id: Type.Union([Type.String(), Type.Null()]),
  kind: MultichannelKind,
  channel: Type.Optional(Type.String({ description: 'For kind channel.' })),
  point_index: Type.Integer(),
  timestamp: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
  ...PointVerdictFields,
});
export type JobResultRowBody = Static<typeof ResultRowBody>;

const EpisodeBody = Type.Object({
  series_index: Type.Integer(),
  machine_id: Type.Union([Type.String(), Type.Null()]),
  kind: MultichannelKind,
  channel: Type.Optional(Type.String({ description: 'For kind channel.' })),
  first_point: Type.Integer({ description: 'Index of its first flagged point.' }),
  last_point: Type.Integer({ description: 'Index of its last flagged point (inclusive).' }),
  first_timestamp: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
  last_timestamp: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
  points: Type.Integer({ description: 'Points from first_point to last_point, flagged or not.' }),
  flagged_points: Type.Integer({ minimum: 1, description: 'Flagged points within it.' }),
  peak_severity: Type.Number(),
  direction: Type.Union([Type.Literal('positive'), Type.Literal('negative'), Type.Literal('both')]),
  closed: Type.Boolean({
    description: 'False when the series ended before 10 points without a flag followed its last flag (for kind machine: before a whole window of the model).',
  }),
  channels: Type.Optional(
    Type.Array(Type.Object({ channel: Type.String(), share: Type.Number() }), {
      description: "For kind machine: the channels that drove the episode, each one's share of its score, largest first.",
    }),
  ),
});
export type JobEpisodeBody = Static<typeof EpisodeBody>;

export const JobResultsResponse = Type.Object(
  {
    job_id: Type.String(),
    status: Status,
    results: Type.Array(ResultRowBody),
    episodes: Type.Array(EpisodeBody, {
      description:
        "The episodes that overlap this page's rows. A series' episode opens at a flag and closes once 10 points without one have followed its last flag, as in POST /v1/detect; a machine verdict's are the joint model's own.",
    }),
    next_cursor: Type.Union([Type.String(), Type.Null()]),
  },
  { description: "A page of a job's per-point results, in (series, point) order: the judged series' points so far." },
);

export const JobsResponse = Type.Object({
  jobs: Type.Array(JobBody),
  next_cursor: Type.Union([Type.String(), Type.Null()]),
});

export const JobDeleted = Type.Object({
  job_id: Type.String(),
  action: Type.Union([Type.Literal('cancelled'), Type.Literal('deleted')], {
    description: 'cancelled: the job was queued or running (its record stays, its results are gone); deleted: a finished job and its results are gone.',
  }),
});
