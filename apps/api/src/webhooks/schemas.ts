// Wire schemas of /v1/webhooks. Events and URLs are strings here and checked by the routes, so a
// bad one gets its own code (UnknownWebhookEvent, WebhookUrlInvalid, ...) rather than BadRequest.
import { Type } from 'typebox';
import { MACHINE_ID_MAX_LENGTH } from '@adp/domain';

export const ErrorBody = Type.Object(
  { error: Type.Object({ code: Type.String(), message: Type.String() }) },
  { description: 'A coded error: `error.code` is stable.' },
);

const Timestamp = Type.String({ format: 'date-time' });
const NullableTimestamp = Type.Union([Timestamp, Type.Null()]);
export const MAX_URL_LENGTH = 2048;
export const MAX_DESCRIPTION_LENGTH = 200;
export const MAX_MACHINE_IDS = 1000;
/** Longest grace period of a secret rotation: 30 days. */
export const MAX_GRACE_SECONDS = 30 * 24 * 3600;
/** Grace period of a rotation that does not say: one day. */
export const DEFAULT_GRACE_SECONDS = 24 * 3600;

const Url = Type.String({ maxLength: MAX_URL_LENGTH, description: 'Where deliveries are POSTed: an absolute http or https URL.' });
const Events = Type.Array(Type.String({ maxLength: 64 }), {
  maxItems: 16,
  description: 'Any of episode.opened, episode.closed, regime.changed (at least one).',
});
const MachineIds = Type.Array(Type.String({ maxLength: MACHINE_ID_MAX_LENGTH }), { maxItems: MAX_MACHINE_IDS, description: 'Only these machines; absent or null: all.' });
const MinSeverity = Type.Number({ minimum: 0, maximum: 1, description: 'Only alerts whose peak severity is at least this. Default 0.' });
const Description = Type.String({ maxLength: MAX_DESCRIPTION_LENGTH, description: 'A label. Default empty.' });

export const CreateWebhookBody = Type.Object(
  {
    url: Url,
    events: Events,
    machine_ids: Type.Optional(Type.Union([Type.Null(), MachineIds])),
    min_severity: Type.Optional(MinSeverity),
    description: Type.Optional(Description),
  },
  { additionalProperties: false },
);

export const UpdateWebhookBody = Type.Object(
  {
    url: Type.Optional(Url),
    events: Type.Optional(Events),
    machine_ids: Type.Optional(Type.Union([Type.Null(), MachineIds])),
    min_severity: Type.Optional(MinSeverity),
    description: Type.Optional(Description),
    enabled: Type.Optional(Type.Boolean({ description: 'true re-enables a disabled target (clearing its reason); false disables it.' })),
  },
  { additionalProperties: false },
);

export const RotateSecretBody = Type.Object(
  {
    grace_seconds: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: MAX_GRACE_SECONDS,
        description: `How long the old secret keeps signing too, in seconds. Default ${DEFAULT_GRACE_SECONDS}; 0 stops it at once.`,
      }),
    ),
  },
  { additionalProperties: false },
);

export const WebhookIdParams = Type.Object({ webhook_id: Type.String({ maxLength: 128 }) });
export const DeliveryParams = Type.Object({ webhook_id: Type.String({ maxLength: 128 }), delivery_id: Type.String({ maxLength: 128 }) });
export const DeliveriesQuery = Type.Object(
  { limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000, description: 'Most deliveries listed, newest first. Default 100.' })) },
  { additionalProperties: false },
);

export const WebhookView = Type.Object({
  webhook_id: Type.String(),
  url: Type.String(),
  events: Type.Array(Type.String()),
  machine_ids: Type.Union([Type.Array(Type.String()), Type.Null()]),
  min_severity: Type.Number(),
  description: Type.String(),
  enabled: Type.Boolean(),
  disabled_at: NullableTimestamp,
  disabled_reason: Type.Union([Type.String(), Type.Null()], { description: 'Why deliveries stopped (the failing delivery and its last error).' }),
  previous_secret_expires_at: Type.Union([Timestamp, Type.Null()], { description: 'While a rotated-out secret still signs: when it stops.' }),
  created_at: Timestamp,
  updated_at: Timestamp,
});

export const CreatedWebhook = Type.Object(
  { ...WebhookView.properties, secret: Type.String({ description: 'The signing secret (whsec_...): shown this once, never again.' }) },
  { description: 'A new target. Store `secret` now: it cannot be shown again.' },
);

export const RotatedSecret = Type.Object({
  webhook_id: Type.String(),
  secret: Type.String({ description: 'The new signing secret: shown this once.' }),
  previous_secret_expires_at: Type.Union([Timestamp, Type.Null()]),
});

export const WebhookList = Type.Object({ webhooks: Type.Array(WebhookView) });

export const DeliveryView = Type.Object({
  delivery_id: Type.String({ description: 'Also the webhook-id header: the same on every attempt.' }),
  webhook_id: Type.String(),
  event_id: Type.String(),
  event: Type.String(),
  status: Type.Union([Type.Literal('pending'), Type.Literal('delivered'), Type.Literal('failed')]),
  attempts: Type.Array(
    Type.Object({
      at: Timestamp,
      status_code: Type.Union([Type.Integer(), Type.Null()], { description: "The receiver's HTTP status; null without an answer." }),
      latency_ms: Type.Number(),
      error: Type.Union([Type.String(), Type.Null()]),
    }),
  ),
  payload: Type.Unknown({ description: 'The body delivered (JSON).' }),
  created_at: Timestamp,
  updated_at: Timestamp,
});

export const DeliveryList = Type.Object({ deliveries: Type.Array(DeliveryView) });

// A machine's episodes and their alerts: GET /v1/machines/{machine_id}/episodes (episodes.ts).
export const DEFAULT_EPISODES = 50;
export const MAX_EPISODES = 500;

export const DeliverySummary = Type.Object({
  delivery_id: Type.String({ description: 'Also its webhook-id header.' }),
  webhook_id: Type.String(),
  status: Type.Union([Type.Literal('pending'), Type.Literal('delivered'), Type.Literal('failed')]),
  attempts: Type.Integer(),
  last_status_code: Type.Union([Type.Integer(), Type.Null()], { description: "The last attempt's HTTP status; null: no attempt yet, or no answer." }),
  last_error: Type.Union([Type.String(), Type.Null()]),
  last_latency_ms: Type.Union([Type.Number(), Type.Null()]),
});

export const AlertSummary = Type.Object({
  event_id: Type.String(),
  event: Type.String({ description: 'episode.opened, episode.closed or regime.changed.' }),
  raised_at: Timestamp,
  deliveries: Type.Array(DeliverySummary, { description: 'One per target that wanted the alert (none: no target did).' }),
});

export const Peak = Type.Object({
  at: Timestamp,
  severity: Type.Number(),
  value: Type.Number(),
  expected_value: Type.Number(),
  lower_bound: Type.Number(),
  upper_bound: Type.Number(),
});

export const Episode = Type.Object({
  series_id: Type.String({ description: 'The machine itself, or one of its channel series (<machine>:<channel>).' }),
  channels: Type.Array(Type.String()),
  started_at: Timestamp,
  ended_at: Type.Union([Timestamp, Type.Null()], { description: 'Its last flagged point; null while it is open.' }),
  flagged_points: Type.Integer(),
  peak: Peak,
  regime: Type.String(),
  alerts: Type.Array(AlertSummary, { description: 'Opened, then closed.' }),
});

export const RegimeChange = Type.Object({
  series_id: Type.String(),
  from: Type.String(),
  to: Type.String(),
  since: Timestamp,
  alert: AlertSummary,
});

export const EpisodesResponse = Type.Object({
  machine_id: Type.String(),
  episodes: Type.Array(Episode, { description: 'Latest start first.' }),
  regime_changes: Type.Array(RegimeChange, { description: 'Latest first.' }),
});

export const EpisodesQuery = Type.Object(
  { limit: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_EPISODES, description: `Most episodes answered. Default ${DEFAULT_EPISODES}.` })) },
  { additionalProperties: false },
);
export const MachineParams = Type.Object({
  machine_id: Type.String({ maxLength: MACHINE_ID_MAX_LENGTH, description: 'Machine id: 1..128 of A-Z a-z 0-9 . _ : - starting with a letter or digit.' }),
});

