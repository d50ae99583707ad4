// TCPDBench's F1 and cover, implemented from ../shared/datasets/tcpd/ANCHORS.md. Pure.
// Change points are 0-based indices; each series has several annotators (some may mark nothing).

/** Matching margin of TCPDBench: a prediction within 5 indices of a true point can match it. */
export const TCPD_MARGIN = 5;

/**
 * Greedy one-to-one matching: each true point, in ascending order, takes the closest still
 * unmatched prediction within `margin` (ties to the smaller index). Returns the number matched.
 */
export function countTruePositives(
  truth: ReadonlySet<number>,
  predictions: ReadonlySet<number>,
  margin: number = TCPD_MARGIN,
): number {
  const free = new Set(predictions);
  let matched = 0;
  for (const tau of [...truth].sort((a, b) => a - b)) {
    let bestIndex: number | undefined;
    let bestDistance = Number.POSITIVE_INFINITY;
    for (const x of free) {
      const d = Math.abs(tau - x);
      if (d <= margin && (d < bestDistance || (d === bestDistance && x < (bestIndex ?? x)))) {
        bestDistance = d;
        bestIndex = x;
      }
    }
    if (bestIndex !== undefined) {
      free.delete(bestIndex);
      matched += 1;
    }
  }
  return matched;
}

export interface TcpdF1 {
  readonly f1: number;
  readonly precision: number;
  readonly recall: number;
}

/**
 * F1 as TCPDBench defines it: index 0 joins every annotator's set and the predicted set;
 * precision = matches against the union of annotators / #predictions; recall = mean over
 * annotators of matches / #that annotator's points; F1 = 2PR / (P + R).
 */
export function tcpdF1(
  annotations: readonly (readonly number[])[],
  predictions: readonly number[],
  margin: number = TCPD_MARGIN,
): TcpdF1 {
  if (annotations.length === 0) throw new RangeError('tcpdF1 needs at least one annotator');
  const predicted = new Set([0, ...predictions]);
  const perAnnotator = annotations.map((a) => new Set([0, ...a]));
  const union = new Set(perAnnotator.flatMap((s) => [...s]));
  const precision = countTruePositives(union, predicted, margin) / predicted.size;
  const recall =
    perAnnotator.reduce((sum, truth) => sum + countTruePositives(truth, predicted, margin) / truth.size, 0) /
    perAnnotator.length;
  const f1 = precision + recall === 0 ? 0 : (2 * precision * recall) / (precision + recall);
  return { f1, precision, recall };
}

/** A segment [start, end) of 0..n-1. */
interface Segment {
  readonly start: number;
  readonly end: number;
}

/**
 * The partition of 0..n-1 that a change-point set defines: each point in 1..n-1 starts a new
 * segment; 0 and points outside the series change nothing.
 */
export function partition(changePoints: readonly number[], n: number): Segment[] {
  const starts = [...new Set(changePoints)].filter((c) => c > 0 && c < n).sort((a, b) => a - b);
  const bounds = [0, ...starts, n];
  const segments: Segment[] = [];
  for (let i = 0; i + 1 < bounds.length; i += 1) {
    segments.push({ start: bounds[i] as number, end: bounds[i + 1] as number });
  }
  return segments;
}

function jaccard(a: Segment, b: Segment): number {
  const intersection = Math.max(0, Math.min(a.end, b.end) - Math.max(a.start, b.start));
  const union = a.end - a.start + (b.end - b.start) - intersection;
  return intersection / union;
}

/** Covering of partition `truth` by partition `predicted`: (1/n) sum_A |A| max_B J(A, B). */
export function coverSingle(truth: readonly Segment[], predicted: readonly Segment[], n: number): number {
  let total = 0;
  for (const a of truth) {
    let best = 0;
    for (const b of predicted) best = Math.max(best, jaccard(a, b));
    total += (a.end - a.start) * best;
  }
  return total / n;
}

/** Cover as TCPDBench defines it: the covering of each annotator's partition, averaged. */
export function tcpdCover(
  annotations: readonly (readonly number[])[],
  predictions: readonly number[],
  n: number,
): number {
  if (annotations.length === 0) throw new RangeError('tcpdCover needs at least one annotator');
  if (!(n >= 1)) throw new RangeError('tcpdCover needs n >= 1');
  const predicted = partition(predictions, n);
  return annotations.reduce((sum, a) => sum + coverSingle(partition(a, n), predicted, n), 0) / annotations.length;
}
