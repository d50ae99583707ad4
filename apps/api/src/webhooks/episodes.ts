// A machine's episodes and their alerts: GET /v1/machines/{machine_id}/episodes. The dispatcher
// records every alert it consumes (with the ids of the deliveries it gave rise to); this route
// groups the machine's recent alerts by episode (series and start), newest first, and says for
// each alert what became of its deliveries. Regime changes are listed beside the episodes.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { Static } from 'typebox';
import type { MachineAlert, WebhookDelivery } from '@adp/store';
import { AppError, ERRORS } from '../errors.js';
import { parseMachineId } from '../native/request.js';
import type { AlertSummary, Episode, Peak, RegimeChange } from './schemas.js';
import { DEFAULT_EPISODES, EpisodesQuery, EpisodesResponse, ErrorBody, MachineParams } from './schemas.js';

const TAGS = ['webhooks'];
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
