// Wire schemas of the streaming routes. Bodies and queries are validated by ./request.ts (coded
// errors in a fixed order); the request schemas here document them. Result rows use the field
// names of the Avro DetectionResult (schemas/avro/result.avsc), with ISO 8601 timestamps.
import { Type, type Static } from 'typebox';
import { TELEMETRY_MACHINE_ID_PATTERN } from '@adp/domain';
import { REGIMES } from '@adp/streaming';
import { MACHINE_ID_PATTERN } from '../native/request.js';
import { PointVerdictFields } from '../point-verdict.js';
import { CHANNEL_NAME_PATTERN, MAX_CHANNELS, MAX_TAGS, RESULTS_DEFAULT_LIMIT, RESULTS_MAX_LIMIT } from './request.js';

const MachineId = Type.String({
  pattern: MACHINE_ID_PATTERN.source,
  description: 'Machine id: 1..128 of A-Z a-z 0-9 . _ : - starting with a letter or digit; scoped to your organization.',
});

const Timestamp = Type.String({ format: 'date-time', description: 'ISO 8601; strictly ascending within a call.' });

// Exactly one of value and channels: each form rules the other's field out.
const ValuePoint = Type.Object(
  {
    timestamp: Timestamp,
    value: Type.Number({ description: 'The reading of a single-channel machine: finite, |value| <= 1e100.' }),
  },
  { not: { required: ['channels'] } },
);

const ChannelsPoint = Type.Object(
  {
    timestamp: Timestamp,
    channels: Type.Record(Type.String({ pattern: CHANNEL_NAME_PATTERN.source }), Type.Number(), {
      minProperties: 1,
      maxProperties: MAX_CHANNELS,
      additionalProperties: false,
      description: `Readings of a multi-channel machine, 1 to ${MAX_CHANNELS} named channels, in a stable order.`,
    }),
  },
  { not: { required: ['value'] } },
);

/** A machine sending telemetry: no ':', which joins a machine to its channel in series ids. */
const TelemetryMachineId = Type.String({
  pattern: TELEMETRY_MACHINE_ID_PATTERN.source,
  description:
    "Machine id: 1..128 of A-Z a-z 0-9 . _ - starting with a letter or digit (no ':': a channel's series is '<machine_id>:<channel>'); scoped to your organization.",
});

export const TelemetryRequest = Type.Object(
  {
    machine_id: TelemetryMachineId,
    points: Type.Array(Type.Union([ValuePoint, ChannelsPoint]), {
      minItems: 1,
      description: 'At most TELEMETRY_MAX_POINTS (default 10,000). Each point has exactly one of value and channels.',
    }),
    tags: Type.Optional(
      Type.Record(Type.String({ minLength: 1, maxLength: 64 }), Type.String({ maxLength: 256 }), {
        description: `Up to ${MAX_TAGS} labels carried with every point (site, firmware, ...).`,
      }),
    ),
  },
  { description: 'Telemetry of one machine. The organization comes from the API key. Unknown fields are ignored.' },
);

export const TelemetryAccepted = Type.Object(
  {
    accepted: Type.Integer({ minimum: 1, description: 'Points queued for detection (all of them).' }),
    machine_id: Type.String(),
  },
  { description: 'Every point is queued; results appear under GET /v1/machines/{machine_id}/results.' },
);

export const ResultsParams = Type.Object({ machine_id: MachineId });

export const ResultsQuery = Type.Object({
  // Empty reads as absent, so the document allows it.
  from: Type.Optional(
    Type.Union([Type.String({ format: 'date-time' }), Type.Literal('')], {
      description: 'Inclusive lower bound on the timestamp; 1970 or later; empty = absent.',
    }),
  ),
  to: Type.Optional(
    Type.Union([Type.String({ format: 'date-time' }), Type.Literal('')], {
      description: 'Exclusive upper bound on the timestamp; not before from; empty = absent.',
    }),
  ),
  limit: Type.Optional(
    Type.Integer({ minimum: 1, maximum: RESULTS_MAX_LIMIT, default: RESULTS_DEFAULT_LIMIT, description: 'Rows per page.' }),
  ),
  cursor: Type.Optional(Type.String({ description: 'The `next_cursor` of the previous page, as returned.' })),
});

const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(schema: T) => Type.Union([schema, Type.Null()]);

export const ResultRowBody = Type.Object({
  timestamp: Type.String({ format: 'date-time' }),
  ...PointVerdictFields,
  energy: Nullable(Type.Number()),
  z_score: Nullable(Type.Number()),
  regime: Type.Enum([...REGIMES]),
  model_version: Type.String(),
});
export type ResultRowBody = Static<typeof ResultRowBody>;

export const ResultsResponse = Type.Object({
  machine_id: Type.String(),
  results: Type.Array(ResultRowBody, { description: 'Ascending by timestamp, each point once.' }),
  next_cursor: Nullable(Type.String({ description: 'Pass as `cursor` for the next page; null on the last page.' })),
});
export type ResultsResponse = Static<typeof ResultsResponse>;
