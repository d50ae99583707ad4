// Feedback on a machine's episodes, as alerting uses it. A span marked `not_anomaly` leaves a
// pattern: the value range of its flagged points and the side of the expected value they lay on.
// Later flagged points inside that range (widened by the point's own band, the engine's measure of
// how far a value may stray) on the same side are familiar: they no longer open or extend the
// machine's episodes. A value beyond the range, or on the other side, still alerts, so a real
// fault that looks different is not silenced. A span marked `anomaly` does the opposite: later
// points inside its exact range, on its side, flag even when the engine did not (not widened:
// the engine judged such points normal, so only what was marked counts). Results rows are never
// changed; only alerting listens.
import type { FeedbackPattern, MachineFeedback } from '@adp/store';
import type { JudgedPoint, PointVerdict } from './episodes.js';

/** The pattern of a span's judged points; null when the span has none. */
export function patternOf(points: readonly JudgedPoint[]): FeedbackPattern | null {
  if (points.length === 0) return null;
  const flagged = points.filter((point) => point.isAnomaly);
  const drivers = flagged.length > 0 ? flagged : points;
  let low = Infinity;
  let high = -Infinity;
  let ups = 0;
  let downs = 0;
  for (const point of drivers) {
    low = Math.min(low, point.value);
    high = Math.max(high, point.value);
    if (point.value > point.expectedValue) ups++;
    else if (point.value < point.expectedValue) downs++;
  }
  const direction = downs === 0 ? 'up' : ups === 0 ? 'down' : 'both';
  return { low, high, direction, points: drivers.length };
}

/** Whether the point lies on the pattern's side, in its range widened by `widen` times its band. */
function matches(pattern: FeedbackPattern, point: JudgedPoint, widen: number): boolean {
  const above = point.value > point.expectedValue;
  if (pattern.direction === 'up' && !above) return false;
  if (pattern.direction === 'down' && above) return false;
  const tolerance = widen * (above ? point.upperMargin : point.lowerMargin);
  return point.value >= pattern.low - tolerance && point.value <= pattern.high + tolerance;
}

/**
 * How each point counts for a machine's episodes given its feedback: the engine's flag, unless a
 * not_anomaly pattern makes it familiar (quiet) or an anomaly pattern makes it flag.
 */
export function feedbackVerdict(feedback: readonly Pick<MachineFeedback, 'label' | 'pattern'>[]): (point: JudgedPoint) => PointVerdict {
  const familiar = feedback.flatMap((f) => (f.label === 'not_anomaly' && f.pattern ? [f.pattern] : []));
  const missed = feedback.flatMap((f) => (f.label === 'anomaly' && f.pattern ? [f.pattern] : []));
  return (point) => {
    if (point.isAnomaly) return familiar.some((pattern) => matches(pattern, point, 1)) ? 'quiet' : 'flag';
    return missed.some((pattern) => matches(pattern, point, 0)) ? 'flag' : 'quiet';
  };
}
