// What an alert looks like on the webhook wire, and which targets it goes to. The body follows the
// Standard Webhooks shape: `type`, `timestamp` and `data`.
import type { WebhookTarget } from '@adp/store';
import type { Alert } from '@adp/streaming';

export const ALERT_EVENT_TYPES = { EPISODE_OPENED: 'episode.opened', EPISODE_CLOSED: 'episode.closed', REGIME_CHANGED: 'regime.changed' } as const;
export type AlertEventType = (typeof ALERT_EVENT_TYPES)[keyof typeof ALERT_EVENT_TYPES];

const iso = (ms: number): string => new Date(ms).toISOString();

/** The JSON body of an alert's deliveries. `publicUrl`: where the dashboard is served, for the machine's link. */
export function alertPayload(alert: Alert, publicUrl: string | null): string {
  // The dashboard routes by hash: its machine page is #/machines/<id>.
  const machinePath = `/dashboard/#/machines/${encodeURIComponent(alert.machine_id)}`;
  const links = { machine: publicUrl === null ? machinePath : `${publicUrl.replace(/\/+$/, '')}${machinePath}` };
  if (alert.event === 'REGIME_CHANGED') {
    return JSON.stringify({
      type: ALERT_EVENT_TYPES[alert.event],
      timestamp: iso(alert.raised_at),
      data: {
        event_id: alert.event_id,
        machine_id: alert.machine_id,
        series_id: alert.series_id,
        channels: alert.channels,
        regime: { from: alert.previous_regime, to: alert.regime, since: iso(alert.started_at) },
        point: {
          at: iso(alert.peak_at),
          value: alert.peak_value,
          expected_value: alert.expected_value,
          lower_bound: alert.expected_value - alert.lower_margin,
          upper_bound: alert.expected_value + alert.upper_margin,
        },
        links,
      },
    });
  }
  return JSON.stringify({
    type: ALERT_EVENT_TYPES[alert.event],
    timestamp: iso(alert.raised_at),
    data: {
      event_id: alert.event_id,
      machine_id: alert.machine_id,
      series_id: alert.series_id,
      channels: alert.channels,
      episode: {
        started_at: iso(alert.started_at),
        ended_at: alert.ended_at === null ? null : iso(alert.ended_at),
        flagged_points: alert.flagged_points,
      },
      peak: {
        at: iso(alert.peak_at),
        severity: alert.peak_severity,
        value: alert.peak_value,
        expected_value: alert.expected_value,
        lower_bound: alert.expected_value - alert.lower_margin,
        upper_bound: alert.expected_value + alert.upper_margin,
      },
      regime: alert.regime,
      links,
    },
  });
}

/** Whether the target wants the alert: enabled, subscribed to its event, its machine, severe enough (episodes only). */
export function targetWants(target: WebhookTarget, alert: Alert): boolean {
  if (target.disabledAt !== null) return false;
  if (!target.events.includes(ALERT_EVENT_TYPES[alert.event])) return false;
  if (target.machineIds !== null && !target.machineIds.includes(alert.machine_id)) return false;
  return alert.event === 'REGIME_CHANGED' || alert.peak_severity >= target.minSeverity;
}
