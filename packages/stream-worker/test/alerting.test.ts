// The worker's alert records: an episode's and a regime change's, with the series' machine and channel.
import { describe, expect, it } from 'vitest';
import { NO_EPISODE } from '@adp/alerts';
import type { ResultRow } from '@adp/streaming';
import { raiseAlerts } from '../src/alerting.js';

const row = (tsMs: number, regime: ResultRow['regime'], isAnomaly = false): ResultRow => ({
  orgId: 'org_a',
  machineId: 'press-1:temp',
  tsMs,
  value: isAnomaly ? 90 : 50,
  expectedValue: 50,
  upperMargin: 2,
  lowerMargin: 2,
  isAnomaly,
  isPositiveAnomaly: isAnomaly,
  isNegativeAnomaly: false,
  severity: isAnomaly ? 0.8 : 0,
  energy: 1,
  zScore: 1,
  regime,
  modelVersion: 'engine-test',
  writtenAtMs: 0,
});

describe('raiseAlerts', () => {
  it('raises the episode opened and closed and the regime change, for the channel of its machine', () => {
    const rows = [
      ...[0, 1, 2].map((t) => row(t, 'HEALTHY')),
      row(3, 'SHOCK', true),
      ...[4, 5].map((t) => row(t, 'SHOCK')),
      ...[6, 7, 8].map((t) => row(t, 'ACTIVE')),
    ];
    const { state, alerts } = raiseAlerts('org_a', 'press-1:temp', NO_EPISODE, rows, { quietPoints: 3, verdict: null, raisedAtMs: 99 });
    expect(alerts.map((a) => [a.event, a.started_at, a.ended_at, a.previous_regime, a.regime])).toEqual([
      ['EPISODE_OPENED', 3, null, null, 'SHOCK'],
      ['EPISODE_CLOSED', 3, 3, null, 'SHOCK'],
      ['REGIME_CHANGED', 3, null, 'HEALTHY', 'SHOCK'],
      ['REGIME_CHANGED', 6, null, 'SHOCK', 'ACTIVE'],
    ]);
    expect(alerts[2]).toMatchObject({ machine_id: 'press-1', series_id: 'press-1:temp', channels: ['temp'], event_id: 'org_a/press-1:temp/3/regime', peak_at: 5 });
    expect(state).toEqual({ open: null, regime: { regime: 'ACTIVE', candidate: null, count: 0, sinceMs: 6 } });
  });
});
