// Regime changes as alerting reports them: a regime counts once held for holdPoints points in a row.
import { describe, expect, it } from 'vitest';
import { NO_REGIME, decodeEpisodeState, encodeEpisodeState, followRegimes, type JudgedPoint, type RegimeState } from '../src/index.js';

const point = (tsMs: number, regime: JudgedPoint['regime']): JudgedPoint => ({
  tsMs,
  value: 50,
  expectedValue: 50,
  upperMargin: 2,
  lowerMargin: 2,
  isAnomaly: false,
  isPositiveAnomaly: false,
  isNegativeAnomaly: false,
  severity: 0,
  regime,
});
const run = (from: number, regimes: readonly JudgedPoint['regime'][]): JudgedPoint[] => regimes.map((r, i) => point(from + i, r));

describe('followRegimes', () => {
  it('settles the first regime without a change, then reports a change held for holdPoints points, from its first point', () => {
    const first = followRegimes(NO_REGIME, run(0, ['UNKNOWN', 'HEALTHY', 'HEALTHY', 'HEALTHY']), { holdPoints: 3 });
    expect(first.changes).toEqual([]);
    expect(first.state.regime).toBe('HEALTHY');
    // A flicker of ACTIVE (2 points) is no change; UNKNOWN points neither confirm nor interrupt.
    const second = followRegimes(first.state, run(4, ['ACTIVE', 'ACTIVE', 'HEALTHY', 'ACTIVE', 'UNKNOWN', 'ACTIVE', 'ACTIVE']), { holdPoints: 3 });
    expect(second.changes).toEqual([{ from: 'HEALTHY', to: 'ACTIVE', sinceMs: 7, point: expect.objectContaining({ tsMs: 10 }) }]);
    expect(second.state).toEqual({ regime: 'ACTIVE', candidate: null, count: 0, sinceMs: 7 });
  });

  it('carries a candidate across batches and through the checkpoint beside the episode', () => {
    const settled: RegimeState = { regime: 'HEALTHY', candidate: null, count: 0, sinceMs: -1 };
    const partial = followRegimes(settled, run(0, ['SHOCK', 'SHOCK']), { holdPoints: 3 });
    expect(partial.changes).toEqual([]);
    const restored = decodeEpisodeState(encodeEpisodeState({ open: null, regime: partial.state }));
    expect(restored).toEqual({ open: null, regime: partial.state });
    const done = followRegimes(restored.regime!, run(2, ['SHOCK']), { holdPoints: 3 });
    expect(done.changes.map((c) => [c.from, c.to, c.sinceMs])).toEqual([['HEALTHY', 'SHOCK', 0]]);
  });

  it('keeps the same state object when nothing moved', () => {
    const settled: RegimeState = { regime: 'HEALTHY', candidate: null, count: 0, sinceMs: 3 };
    expect(followRegimes(settled, run(0, ['HEALTHY', 'UNKNOWN']), { holdPoints: 3 }).state).toBe(settled);
  });
});
