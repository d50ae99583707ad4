// A series' trailing window: what the worker keeps in memory per machine (and channel) between
// batches and checkpoints after each one, so a restarted or rebalanced worker judges the next
// point with the same context. Pure data and its binary checkpoint format.
import { WINDOW_POINTS } from '@adp/model';

export interface SeriesWindow {
  /** Oldest first; at most `capacity` points. */
  readonly values: number[];
  readonly timestampsMs: number[];
  /** The point's energy z-score against the baseline in force when it was judged; NaN when none. */
  readonly zScores: number[];
  /** Timestamp of the newest judged point; -1 before the first. Points at or before it are replays. */
  lastJudgedTsMs: number;
  /** Points this series has had since its first (not capped): where the model's warm-up ends. */
  seenPoints: number;
}

export function emptyWindow(): SeriesWindow {
  return { values: [], timestampsMs: [], zScores: [], lastJudgedTsMs: -1, seenPoints: 0 };
}

export function cloneWindow(window: SeriesWindow): SeriesWindow {
  return {
    values: window.values.slice(),
    timestampsMs: window.timestampsMs.slice(),
    zScores: window.zScores.slice(),
    lastJudgedTsMs: window.lastJudgedTsMs,
    seenPoints: window.seenPoints,
  };
}

/**
 * Points a window keeps: the detection window minus the point being judged, and at least the
 * learned model's own window (its energies need the 64 points before a new one).
 */
export function windowCapacity(windowPoints: number): number {
  return Math.max(windowPoints - 1, WINDOW_POINTS);
}

/** Appends judged points and drops the oldest beyond `capacity`. */
export function appendToWindow(
  window: SeriesWindow,
  points: {
    readonly values: readonly number[];
    readonly timestampsMs: readonly number[];
    readonly zScores: readonly number[];
  },
  capacity: number,
): void {
  // A loop, not push(...spread): a large batch of one machine would overflow the argument stack.
  for (let i = 0; i < points.values.length; i++) {
    window.values.push(points.values[i]!);
    window.timestampsMs.push(points.timestampsMs[i]!);
    window.zScores.push(points.zScores[i]!);
  }
  const excess = window.values.length - capacity;
  if (excess > 0) {
    window.values.splice(0, excess);
    window.timestampsMs.splice(0, excess);
    window.zScores.splice(0, excess);
  }
  const newest = points.timestampsMs[points.timestampsMs.length - 1];
  if (newest !== undefined) window.lastJudgedTsMs = Math.max(window.lastJudgedTsMs, newest);
  window.seenPoints += points.values.length;
}

// Checkpoint format, version 1, little-endian:
//   'ADW1' | n: uint32 | lastJudgedTsMs: float64 | seenPoints: float64 |
//   n × timestamp float64 | n × value float64 | n × z-score float64 (NaN = none)
const MAGIC = Buffer.from('ADW1', 'ascii');
const HEADER_BYTES = 4 + 4 + 8 + 8;

export function encodeWindow(window: SeriesWindow): Buffer {
  const n = window.values.length;
  const out = Buffer.allocUnsafe(HEADER_BYTES + n * 24);
  MAGIC.copy(out, 0);
  out.writeUInt32LE(n, 4);
  out.writeDoubleLE(window.lastJudgedTsMs, 8);
  out.writeDoubleLE(window.seenPoints, 16);
  let offset = HEADER_BYTES;
  for (const array of [window.timestampsMs, window.values, window.zScores]) {
    for (let i = 0; i < n; i++) {
      out.writeDoubleLE(array[i]!, offset);
      offset += 8;
    }
  }
  return out;
}

/** The window in a checkpoint, or null when the bytes are not a version-1 checkpoint (start afresh). */
export function decodeWindow(bytes: Buffer, capacity: number): SeriesWindow | null {
  if (bytes.length < HEADER_BYTES || !bytes.subarray(0, 4).equals(MAGIC)) return null;
  const n = bytes.readUInt32LE(4);
  if (bytes.length !== HEADER_BYTES + n * 24) return null;
  const lastJudgedTsMs = bytes.readDoubleLE(8);
  const seenPoints = bytes.readDoubleLE(16);
  if (!Number.isSafeInteger(lastJudgedTsMs) || lastJudgedTsMs < -1) return null;
  if (!Number.isSafeInteger(seenPoints) || seenPoints < n) return null;
  const read = (index: number): number[] => {
    const out = new Array<number>(n);
    const base = HEADER_BYTES + index * n * 8;
    for (let i = 0; i < n; i++) out[i] = bytes.readDoubleLE(base + i * 8);
    return out;
  };
  const timestampsMs = read(0);
  const values = read(1);
  const zScores = read(2);
  if (!values.every(Number.isFinite) || !timestampsMs.every(Number.isSafeInteger)) return null;
  // A smaller capacity than when it was written (WORKER_WINDOW_POINTS lowered): keep the newest.
  const excess = Math.max(0, n - capacity);
  return {
    values: values.slice(excess),
    timestampsMs: timestampsMs.slice(excess),
    zScores: zScores.slice(excess),
    lastJudgedTsMs,
    seenPoints,
  };
}
