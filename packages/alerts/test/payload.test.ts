// The webhook body of each alert event, and which targets want an alert.
import { describe, expect, it } from 'vitest';
import type { WebhookTarget } from '@adp/store';
import type { Alert } from '@adp/streaming';
import { alertPayload, targetWants } from '../src/index.js';

const T0 = Date.UTC(2026, 0, 1);
const regimeChange: Alert = {
  event_id: 'org_a/pump-1/1/regime',
  event: 'REGIME_CHANGED',
  organization: 'org_a',
  machine_id: 'pump-1',
  series_id: 'pump-1',
  channels: [],
  started_at: T0,
  ended_at: null,
  flagged_points: 0,
  peak_at: T0 + 60_000,
  peak_severity: 0,
  peak_value: 61,
  expected_value: 60,
  upper_margin: 3,
  lower_margin: 3,
  regime: 'ACTIVE',
  raised_at: T0 + 61_000,
  previous_regime: 'HEALTHY',
};
const target: WebhookTarget = {
  webhookId: 'wh_1',
  orgId: 'org_a',
  url: 'https://hooks.example.com/',
  events: ['regime.changed'],
  machineIds: null,
  minSeverity: 0.5,
  description: '',
  secrets: [{ secret: 'whsec_x', expiresAt: null }],
  disabledAt: null,
  disabledReason: null,
  createdAt: new Date(T0),
  updatedAt: new Date(T0),
};

describe('alert payloads', () => {
  it('a regime change says from, to and since, with the point that settled it', () => {
    expect(JSON.parse(alertPayload(regimeChange, null))).toEqual({
      type: 'regime.changed',
      timestamp: new Date(T0 + 61_000).toISOString(),
      data: {
        event_id: 'org_a/pump-1/1/regime',
        machine_id: 'pump-1',
        series_id: 'pump-1',
        channels: [],
        regime: { from: 'HEALTHY', to: 'ACTIVE', since: new Date(T0).toISOString() },
        point: { at: new Date(T0 + 60_000).toISOString(), value: 61, expected_value: 60, lower_bound: 57, upper_bound: 63 },
        links: { machine: '/dashboard/#/machines/pump-1' },
      },
    });
  });

  it('min_severity filters episodes, not regime changes; events, machines and a disabled target filter both', () => {
    expect(targetWants(target, regimeChange)).toBe(true);
    const opened: Alert = { ...regimeChange, event: 'EPISODE_OPENED', peak_severity: 0.4, previous_regime: null };
    expect(targetWants({ ...target, events: ['episode.opened'] }, opened)).toBe(false);
    expect(targetWants({ ...target, events: ['episode.opened'] }, { ...opened, peak_severity: 0.5 })).toBe(true);
    expect(targetWants({ ...target, events: ['episode.opened'] }, regimeChange)).toBe(false);
    expect(targetWants({ ...target, machineIds: ['fan-2'] }, regimeChange)).toBe(false);
    expect(targetWants({ ...target, disabledAt: new Date(T0) }, regimeChange)).toBe(false);
  });
});
