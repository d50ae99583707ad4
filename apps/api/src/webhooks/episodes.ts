// A machine's episodes and their alerts: GET /v1/machines/{machine_id}/episodes. The dispatcher
// records every alert it consumes (with the ids of the deliveries it gave rise to); this route
// groups the machine's recent alerts by episode (series and start), newest first, and says for
// each alert what became of its deliveries. Regime changes are listed beside the episodes.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type, type Static } from 'typebox';
import type { MachineAlert, WebhookDelivery } from '@adp/store';
import { AppError, ERRORS } from '../errors.js';
import { parseMachineId } from '../native/request.js';
import { ErrorBody } from './schemas.js';

const TAGS = ['webhooks'];
const Timestamp = Type.String({ format: 'date-time' });
export const DEFAULT_EPISODES = 50;
export const MAX_EPISODES = 500;

const DeliverySummary = Type.Object({
  delivery_id: Type.String({ description: 'Also its webhook-id header.' }),
  webhook_id: Type.String(),
  status: Type.Union([Type.Literal('pending'), Type.Literal('delivered'), Type.Literal('failed')]),
  attempts: Type.Integer(),
  last_status_code: Type.Union([Type.Integer(), Type.Null()], { description: "The last attempt's HTTP status; null: no attempt yet, or no answer." }),
  last_error: Type.Union([Type.String(), Type.Null()]),
  last_latency_ms: Type.Union([Type.Number(), Type.Null()]),
});

const AlertSummary = Type.Object({
  event_id: Type.String(),
  event: Type.String({ description: 'episode.opened, episode.closed or regime.changed.' }),
  raised_at: Timestamp,
  deliveries: Type.Array(DeliverySummary, { description: 'One per target that wanted the alert (none: no target did).' }),
});

const Peak = Type.Object({
  at: Timestamp,
  severity: Type.Number(),
  value: Type.Number(),
  expected_value: Type.Number(),
  lower_bound: Type.Number(),
  upper_bound: Type.Number(),
});

const Episode = Type.Object({
  series_id: Type.String({ description: 'The machine itself, or one of its channel series (<machine>:<channel>).' }),
  channels: Type.Array(Type.String()),
  started_at: Timestamp,
  ended_at: Type.Union([Timestamp, Type.Null()], { description: 'Its last flagged point; null while it is open.' }),
  flagged_points: Type.Integer(),
  peak: Peak,
  regime: Type.String(),
  alerts: Type.Array(AlertSummary, { description: 'Opened, then closed.' }),
});

const RegimeChange = Type.Object({
  series_id: Type.String(),
  from: Type.String(),
  to: Type.String(),
  since: Timestamp,
  alert: AlertSummary,
});

const EpisodesResponse = Type.Object({
  machine_id: Type.String(),
  episodes: Type.Array(Episode, { description: 'Latest start first.' }),
  regime_changes: Type.Array(RegimeChange, { description: 'Latest first.' }),
});

const EpisodesQuery = Type.Object(
  { limit: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_EPISODES, description: `Most episodes answered. Default ${DEFAULT_EPISODES}.` })) },
  { additionalProperties: false },
);
const MachineParams = Type.Object({
  machine_id: Type.String({ maxLength: 128, description: 'Machine id: 1..128 of A-Z a-z 0-9 . _ : - starting with a letter or digit.' }),
});

type EpisodeBody = Static<typeof Episode>;
type AlertBody = Static<typeof AlertSummary>;

/** The fields of an episode alert's payload this route reads (see @adp/alerts payload.ts). */
interface EpisodePayload {
  readonly data: {
    readonly channels: string[];
    readonly episode: { readonly started_at: string; readonly ended_at: string | null; readonly flagged_points: number };
    readonly peak: Static<typeof Peak>;
    readonly regime: string;
  };
}
interface RegimePayload {
  readonly data: { readonly regime: { readonly from: string; readonly to: string; readonly since: string } };
}

function alertBody(alert: MachineAlert, deliveries: ReadonlyMap<string, WebhookDelivery>): AlertBody {
  return {
    event_id: alert.eventId,
    event: alert.event,
    raised_at: alert.raisedAt.toISOString(),
    deliveries: alert.deliveryIds.flatMap((id) => {
      const delivery = deliveries.get(id);
      if (!delivery) return []; // not written yet (the log is written behind), or removed
      const last = delivery.attempts[delivery.attempts.length - 1];
      return [
        {
          delivery_id: delivery.deliveryId,
          webhook_id: delivery.webhookId,
          status: delivery.status,
          attempts: delivery.attempts.length,
          last_status_code: last?.statusCode ?? null,
          last_error: last?.error ?? null,
          last_latency_ms: last?.latencyMs ?? null,
        },
      ];
    }),
  };
}

export const episodeRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/v1/machines/:machine_id/episodes',
    {
      schema: {
        summary: "A machine's recent episodes (of it and its channels) with their alerts and what became of each delivery, and its regime changes",
        tags: TAGS,
        params: MachineParams,
        querystring: EpisodesQuery,
        response: { 200: EpisodesResponse, 400: ErrorBody, 503: ErrorBody },
      },
    },
    async (request) => {
      const machineId = parseMachineId(request.params.machine_id, 'machine_id path parameter');
      const alerting = request.server.store.alerting;
      if (!alerting) throw new AppError(ERRORS.ServiceUnavailable, 'Episodes need the platform store, which this server runs without.');
      const limit = request.query.limit ?? DEFAULT_EPISODES;
      // An episode has two alerts; the regime changes take the rest of what is read.
      const alerts = await alerting.listAlerts(request.auth.orgId, machineId, Math.min(10_000, limit * 4));
      const ids = [...new Set(alerts.flatMap((a) => a.deliveryIds))];
      const deliveries = new Map<string, WebhookDelivery>();
      for (let i = 0; i < ids.length; i += 1_000) {
        for (const d of await alerting.getDeliveries(request.auth.orgId, ids.slice(i, i + 1_000))) deliveries.set(d.deliveryId, d);
      }
      const episodes = new Map<string, EpisodeBody>();
      const regimeChanges: Static<typeof RegimeChange>[] = [];
      for (const alert of alerts) {
        if (alert.event === 'regime.changed') {
          const { regime } = (JSON.parse(alert.payload) as RegimePayload).data;
          regimeChanges.push({ series_id: alert.seriesId, from: regime.from, to: regime.to, since: regime.since, alert: alertBody(alert, deliveries) });
          continue;
        }
        const key = `${alert.seriesId}\n${alert.startedAt.getTime()}`;
        const { data } = JSON.parse(alert.payload) as EpisodePayload;
        const existing = episodes.get(key);
        if (!existing && episodes.size >= limit) continue;
        const body = alertBody(alert, deliveries);
        // The closing alert knows the episode whole: its end, its points and its peak.
        const whole = alert.event === 'episode.closed' || !existing;
        const episode: EpisodeBody = whole
          ? {
              series_id: alert.seriesId,
              channels: data.channels,
              started_at: data.episode.started_at,
              ended_at: data.episode.ended_at,
              flagged_points: data.episode.flagged_points,
              peak: data.peak,
              regime: data.regime,
              alerts: existing ? existing.alerts : [],
            }
          : existing;
        episode.alerts.push(body);
        episode.alerts.sort((a, b) => (a.event === b.event ? 0 : a.event === 'episode.opened' ? -1 : 1));
        episodes.set(key, episode);
      }
      return { machine_id: machineId, episodes: [...episodes.values()], regime_changes: regimeChanges };
    },
  );
};
