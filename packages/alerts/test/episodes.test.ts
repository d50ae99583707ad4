// Episodes and feedback as alerting sees them: pure functions over judged points.
import { describe, expect, it } from 'vitest';
import { NO_EPISODE, decodeEpisodeState, encodeEpisodeState, feedbackVerdict, followEpisodes, patternOf, type JudgedPoint } from '../src/index.js';

function point(tsMs: number, value: number, flagged = false, severity = flagged ? 0.5 : 0): JudgedPoint {
  return {
    tsMs,
    value,
    expectedValue: 50,
    upperMargin: 2,
    lowerMargin: 2,
    isAnomaly: flagged,
    isPositiveAnomaly: flagged && value > 50,
    isNegativeAnomaly: flagged && value < 50,
    severity,
    regime: 'UNKNOWN',
  };
}

describe('followEpisodes', () => {
  it('opens at the first flagged point, keeps the peak, and closes after the quiet stretch with the last flagged point as its end', () => {
    const points = [point(1, 50), point(2, 70, true, 0.4), point(3, 50), point(4, 90, true, 0.9), point(5, 50), point(6, 50), point(7, 50), point(8, 50)];
    const { state, events } = followEpisodes(NO_EPISODE, points, { quietPoints: 3 });
    expect(events.map((e) => e.kind)).toEqual(['opened', 'closed']);
    const [opened, closed] = events;
    expect(opened!.episode).toMatchObject({ startedMs: 2, flaggedPoints: 1, peak: { tsMs: 2, severity: 0.4, value: 70 } });
    expect(closed).toMatchObject({ kind: 'closed', endedMs: 4, episode: { startedMs: 2, flaggedPoints: 2, peak: { tsMs: 4, severity: 0.9, value: 90, expectedValue: 50 } } });
    expect(state.open).toBeNull();
  });

  it('carries an open episode across batches and through its checkpoint, raising each event once', () => {
    const first = followEpisodes(NO_EPISODE, [point(1, 80, true), point(2, 50)], { quietPoints: 3 });
    expect(first.events.map((e) => e.kind)).toEqual(['opened']);
    const restored = decodeEpisodeState(encodeEpisodeState(first.state));
    expect(restored).toEqual(first.state);
    const second = followEpisodes(restored, [point(3, 81, true), point(4, 50), point(5, 50)], { quietPoints: 3 });
    expect(second.events).toEqual([]);
    const third = followEpisodes(second.state, [point(6, 50)], { quietPoints: 3 });
    expect(third.events).toEqual([{ kind: 'closed', endedMs: 3, episode: expect.objectContaining({ startedMs: 1, flaggedPoints: 2 }) }]);
  });

  it('reads an unknown or broken checkpoint as no episode', () => {
    expect(decodeEpisodeState(undefined)).toBe(NO_EPISODE);
    expect(decodeEpisodeState(Buffer.from('not json'))).toBe(NO_EPISODE);
    expect(decodeEpisodeState(Buffer.from('{"v":99,"open":{}}'))).toBe(NO_EPISODE);
  });
});

describe('feedback', () => {
  const span = [point(10, 50), point(11, 78, true), point(12, 82, true), point(13, 50)];

  it('takes the pattern of a span from its flagged points', () => {
    expect(patternOf(span)).toEqual({ low: 78, high: 82, direction: 'up', points: 2 });
    expect(patternOf([point(1, 40), point(2, 45)])).toEqual({ low: 40, high: 45, direction: 'down', points: 2 });
    expect(patternOf([])).toBeNull();
  });

  it('not_anomaly makes flagged points in the range (one band wider) on the same side quiet; others still flag', () => {
    const verdict = feedbackVerdict([{ label: 'not_anomaly', pattern: patternOf(span) }]);
    expect(verdict(point(20, 80, true))).toBe('quiet');
    expect(verdict(point(21, 83.5, true))).toBe('quiet'); // within one band (2) of 82
    expect(verdict(point(22, 95, true))).toBe('flag'); // beyond the range: a different fault
    expect(verdict(point(23, 20, true))).toBe('flag'); // the other side
    expect(verdict(point(24, 50))).toBe('quiet');
  });

  it('anomaly makes unflagged points inside the marked range on its side flag', () => {
    const verdict = feedbackVerdict([{ label: 'anomaly', pattern: { low: 51, high: 51.8, direction: 'up', points: 3 } }]);
    expect(verdict(point(1, 51.5))).toBe('flag');
    expect(verdict(point(2, 50.5))).toBe('quiet');
    expect(verdict(point(3, 60, true))).toBe('flag');
  });

  it('silences the recurring episode of a replay after one feedback, and still raises a different fault', () => {
    // A daily pattern the engine flags (a recurring surge to ~80), then a real fault (a drop to 10).
    const day = (d: number): JudgedPoint[] =>
      Array.from({ length: 30 }, (_, i) => {
        const ts = d * 100 + i;
        return i >= 10 && i < 13 ? point(ts, 79 + i - 10, true, 0.6) : point(ts, 50);
      });
    const replay = [...day(0), ...day(1), ...day(2), ...day(3)];
    const fault = Array.from({ length: 30 }, (_, i) => (i >= 5 && i < 9 ? point(400 + i, 10, true, 0.9) : point(400 + i, 50)));
    const count = (verdict?: (p: JudgedPoint) => 'flag' | 'quiet'): { surges: number; faults: number } => {
      const { events } = followEpisodes(NO_EPISODE, [...replay, ...fault], { quietPoints: 5, ...(verdict ? { verdict } : {}) });
      const opened = events.filter((e) => e.kind === 'opened');
      return { surges: opened.filter((e) => e.episode.startedMs < 400).length, faults: opened.filter((e) => e.episode.startedMs >= 400).length };
    };
    expect(count()).toEqual({ surges: 4, faults: 1 });
    // One piece of feedback on the first day's surge.
    const verdict = feedbackVerdict([{ label: 'not_anomaly', pattern: patternOf(day(0).slice(9, 14)) }]);
    expect(count(verdict)).toEqual({ surges: 0, faults: 1 });
  });
});
