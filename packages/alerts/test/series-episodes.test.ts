// A series' episodes judged at once follow the stream's rule point for point.
import { describe, expect, it } from 'vitest';
import { NO_EPISODE, followEpisodes, seriesEpisodes, type JudgedPoint } from '../src/index.js';

function verdicts(flags: readonly number[]) {
  // 0: not flagged; >0 flagged above the expected value with that severity; <0 flagged below it.
  return {
    isAnomaly: flags.map((f) => f !== 0),
    isPositiveAnomaly: flags.map((f) => f > 0),
    isNegativeAnomaly: flags.map((f) => f < 0),
    severity: flags.map((f) => Math.abs(f)),
  };
}

describe('seriesEpisodes', () => {
  it('opens at a flag, spans gaps shorter than the quiet stretch, keeps the first most severe point as its peak, and closes after it', () => {
    const flags = [0, 0.3, 0, 0, -0.7, 0.7, 0, 0, 0, 0.2, 0];
    expect(seriesEpisodes(verdicts(flags), 3)).toEqual([
      { start: 1, end: 5, peak: 4, severity: 0.7, flaggedPoints: 3, direction: 'both', closed: true },
      { start: 9, end: 9, peak: 9, severity: 0.2, flaggedPoints: 1, direction: 'positive', closed: false },
    ]);
  });

  it('leaves an episode open until a whole quiet stretch has followed it', () => {
    expect(seriesEpisodes(verdicts([-0.5, 0, 0]), 3)).toEqual([
      { start: 0, end: 0, peak: 0, severity: 0.5, flaggedPoints: 1, direction: 'negative', closed: false },
    ]);
    expect(seriesEpisodes(verdicts([-0.5, 0, 0, 0]), 3)[0]!.closed).toBe(true);
    expect(seriesEpisodes(verdicts([0, 0, 0]), 3)).toEqual([]);
  });

  it('finds the episodes the stream raises over the same points, whatever the flags', () => {
    let seed = 7;
    const random = (): number => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
    for (let trial = 0; trial < 50; trial++) {
      const quietPoints = 1 + Math.floor(random() * 6);
      const flags = Array.from({ length: 200 }, () => (random() < 0.15 ? Math.round(random() * 100) / 100 + 0.01 : 0));
      const points: JudgedPoint[] = flags.map((f, t) => ({
        tsMs: t,
        value: 1,
        expectedValue: 0,
        upperMargin: 1,
        lowerMargin: 1,
        isAnomaly: f !== 0,
        isPositiveAnomaly: f !== 0,
        isNegativeAnomaly: false,
        severity: f,
        regime: 'UNKNOWN',
      }));
      const { state, events } = followEpisodes(NO_EPISODE, points, { quietPoints });
      const streamed = events.filter((e) => e.kind === 'closed').map((e) => [e.episode.startedMs, e.kind === 'closed' ? e.endedMs : -1, e.episode.peak.tsMs, e.episode.flaggedPoints]);
      if (state.open) streamed.push([state.open.startedMs, state.open.lastFlaggedMs, state.open.peak.tsMs, state.open.flaggedPoints]);
      const batch = seriesEpisodes(verdicts(flags), quietPoints);
      expect(batch.map((e) => [e.start, e.end, e.peak, e.flaggedPoints])).toEqual(streamed);
      expect(batch.map((e) => e.closed)).toEqual(streamed.map((_, i) => i < streamed.length - (state.open ? 1 : 0)));
    }
  });
});
