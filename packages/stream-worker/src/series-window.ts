// A series' trailing window: what the worker keeps in memory per machine (and channel) between
// batches and checkpoints after each one, so a restarted or rebalanced worker judges the next
// point with the same context. Pure data and its binary checkpoint format.
import { WINDOW_POINTS } from '@adp/model';
import type { StreamJudgeModelState } from '@adp/detection';
import type { LevelStream } from './level-hold.js';
import type { JudgeModelState } from './new-points-judge.js';

export interface SeriesWindow {
  /** Oldest first; at most `capacity` points. */
  readonly values: number[];
  readonly timestampsMs: number[];
  /**
   * The point's energy z-score against the baseline in force when it was judged, as the regime
   * rules judged it (with spikes' echoes taken out, @adp/regimes' echo check); NaN when none.
   */
  readonly zScores: number[];
  /** Timestamp of the newest judged point; -1 before the first. Points at or before it are replays. */
  lastJudgedTsMs: number;
  /** Points this series has had since its first (not capped): where the model's warm-up ends. */
  seenPoints: number;
  /**
   * The incremental judge's state after the newest point (immutable; replaced after each
   * batch), or null: the judge starts afresh on the window at the next point.
   */
  judge: JudgeModelState | null;
  /**
   * Values older than `values`, oldest first, kept for a judge whose window grew beyond the
   * window's capacity (four periods and one point of a long period; at most the judge's
   * `historyPoints` with `values`): only the judge reads them. Empty for most series.
   */
  olderValues: number[];
  /**
   * Point count (history index) of the newest point whose learned score was beyond the band
   * (learned-verdict.ts); -1: none. A learned excursion is flagged only at its onset, also across
   * batches.
   */
  lastLearnedExcessAt: number;
  /** The level model's stream where the series' baseline has one (level-hold.ts); null: none yet. */
  level: LevelStream | null;
}

export function emptyWindow(): SeriesWindow {
  return { values: [], timestampsMs: [], zScores: [], olderValues: [], lastJudgedTsMs: -1, seenPoints: 0, judge: null, lastLearnedExcessAt: -1, level: null };
}

export function cloneWindow(window: SeriesWindow): SeriesWindow {
  return {
    values: window.values.slice(),
    timestampsMs: window.timestampsMs.slice(),
    zScores: window.zScores.slice(),
    olderValues: window.olderValues.slice(),
    lastJudgedTsMs: window.lastJudgedTsMs,
    seenPoints: window.seenPoints,
    judge: window.judge,
    lastLearnedExcessAt: window.lastLearnedExcessAt,
    level: window.level,
  };
}

/**
 * Points a window keeps: the detection window minus the point being judged, and at least the
 * learned model's own window (its energies need the 64 points before a new one).
 */
export function windowCapacity(windowPoints: number): number {
  return Math.max(windowPoints - 1, WINDOW_POINTS);
}

/** The judge's history: the older values and the window's, oldest first. */
export function judgeHistory(window: SeriesWindow): number[] {
  return window.olderValues.length === 0 ? window.values : window.olderValues.concat(window.values);
}

/**
 * Appends judged points and drops the oldest beyond `capacity`; the values dropped move to
 * `olderValues` as far as the judge keeps history (`historyPoints`, the window's values
 * included; at most `capacity` keeps none).
 */
export function appendToWindow(
  window: SeriesWindow,
  points: {
    readonly values: readonly number[];
    readonly timestampsMs: readonly number[];
    readonly zScores: readonly number[];
  },
  capacity: number,
  historyPoints = capacity,
): void {
  // A loop, not push(...spread): a large batch of one machine would overflow the argument stack.
  for (let i = 0; i < points.values.length; i++) {
    window.values.push(points.values[i]!);
    window.timestampsMs.push(points.timestampsMs[i]!);
    window.zScores.push(points.zScores[i]!);
  }
  const excess = window.values.length - capacity;
  const olderRoom = Math.max(0, historyPoints - capacity);
  if (excess > 0 && olderRoom > 0) {
    for (let i = 0; i < excess; i++) window.olderValues.push(window.values[i]!);
  }
  if (window.olderValues.length > olderRoom) window.olderValues.splice(0, window.olderValues.length - olderRoom);
  if (excess > 0) {
    window.values.splice(0, excess);
    window.timestampsMs.splice(0, excess);
    window.zScores.splice(0, excess);
  }
  const newest = points.timestampsMs[points.timestampsMs.length - 1];
  if (newest !== undefined) window.lastJudgedTsMs = Math.max(window.lastJudgedTsMs, newest);
  window.seenPoints += points.values.length;
}

// Checkpoint format, little-endian. A checkpoint lives for days (its TTL), so a worker also reads
// the layouts that earlier workers wrote, each named by its four-byte magic: a rolling upgrade then
// resumes every series with the context its checkpoint holds, and only what a layout lacks starts
// afresh.
//
// The layout written ('ADW8'):
//   magic | n: uint32 | lastJudgedTsMs: float64 | seenPoints: float64 |
//   lastLearnedExcessAt: float64 (-1 = none: where the newest point beyond the learned band was) |
//   n × timestamp float64 | n × value float64 | n × z-score float64 (NaN = none) |
//   olderCount: uint32 | olderCount × value float64 (SeriesWindow.olderValues) |
//   hasLevel: uint8, then when 1 the level model's stream (LevelStream):
//     baselineUpdatedAtMs, judged, runCap: float64 | k: uint32 | k × distance float64 |
//     k × part float64 | p: uint32 | p × (until, cap) float64 (the pending flags)
//   hasJudge: uint8, then when 1 the following judge (FollowingJudgeState):
//     historyPoints: uint32 | targetWindow: uint32 | switchedAt: float64 (NaN = none) |
//     its past range (pairs as below) | the current window's judge section (its hasJudge byte 1)
// A judge section (StreamJudgeModelState; its history is the window's values):
//   hasJudge: uint8, then when 1:
//   windowPoints: uint32 | seen: float64 | detectedAt: float64 (NaN = none) | cachedPeriod: float64 |
//   the past range, the monotonic queues over the points that left the window (pastLows, pastHighs):
//     lowsPairs: uint32 | lowsPairs × (point, value) float64 | highsPairs: uint32 | highsPairs × (point, value) float64 |
//   hasModel: uint8, then when 1:
//   refitAt, period, origin, baseScale: float64 | profileLength: uint32 (0xffffffff = no profile) |
//   profileLength × float64 |
//   hasErrors: uint8, then at, calibrated, upper, lower, largest, newest: float64 (the one-step
//   errors' summaries the judge reuses between refreshes, StreamJudgeErrors)
//
// Earlier layouts, still read:
// - 'ADW7': as 'ADW8' without the level section (a level model's stream starts afresh).
// - 'ADW6': no older values and no following judge; a judge section right after the arrays, which
//   resumes as the following judge of the window it held (history the window less one point, its
//   past range the judge's).
// - 'ADW5': as 'ADW6' without lastLearnedExcessAt (the next learned excursion counts as an onset).
// - 'ADW4': as 'ADW5' without the past range (it refills as points leave the window).
// - 'ADW3': as 'ADW4' with four error summaries (no upper and lower): checked and dropped, so the
//   judge computes fresh ones at the next point.
// - 'ADW2': as 'ADW3' without the errors section (fresh ones at the next point).
// - 'ADW1': the window alone: the judge is fitted afresh on it at the next point.
const MAGIC_V1 = Buffer.from('ADW1', 'ascii');
const MAGIC_V2 = Buffer.from('ADW2', 'ascii');
const MAGIC_V3 = Buffer.from('ADW3', 'ascii');
const MAGIC_V4 = Buffer.from('ADW4', 'ascii');
const MAGIC_V5 = Buffer.from('ADW5', 'ascii');
const MAGIC_V6 = Buffer.from('ADW6', 'ascii');
const MAGIC_V7 = Buffer.from('ADW7', 'ascii');
const MAGIC = Buffer.from('ADW8', 'ascii');
/** The header without lastLearnedExcessAt ('ADW1' to 'ADW5'). */
const HEADER_BYTES_V5 = 4 + 4 + 8 + 8;
const HEADER_BYTES = HEADER_BYTES_V5 + 8;
const NO_PROFILE = 0xffffffff;
const ERRORS_BYTES = 1 + 6 * 8;
const ERRORS_BYTES_V3 = 1 + 4 * 8;
/** Each readable magic and its layout's rank (the decoders compare ranks to know which sections are present). */
const LAYOUTS: readonly (readonly [Buffer, 1 | 2 | 3 | 4 | 5 | 6 | 7 | 8])[] = [
  [MAGIC, 8],
  [MAGIC_V7, 7],
  [MAGIC_V6, 6],
  [MAGIC_V5, 5],
  [MAGIC_V4, 4],
  [MAGIC_V3, 3],
  [MAGIC_V2, 2],
  [MAGIC_V1, 1],
];

/** Most history a following judge may claim in a checkpoint (WORKER_MEMORY_POINTS' bound). */
const MAX_HISTORY_POINTS = 1_000_000;

/** Most (point, value) pairs a past queue may hold in a checkpoint (WORKER_MEMORY_POINTS' bound). */
const MAX_PAST_PAIRS = 1_000_000;

function pastBytes(lows: readonly number[] | undefined, highs: readonly number[] | undefined): number {
  return 8 + ((lows?.length ?? 0) + (highs?.length ?? 0)) * 8;
}

/** Bytes of the current window's judge section (its hasJudge byte included). */
function innerBytes(judge: StreamJudgeModelState): number {
  const model = judge.model;
  return 1 + 4 + 24 + pastBytes(judge.pastLows, judge.pastHighs) + 1 + (model === null ? 0 : 32 + 4 + (model.profile?.length ?? 0) * 8 + ERRORS_BYTES);
}

function judgeBytes(judge: JudgeModelState | null): number {
  if (judge === null) return 1;
  return 1 + 16 + pastBytes(judge.pastLows, judge.pastHighs) + innerBytes(judge.judge);
}

/** Most distances a level stream may keep in a checkpoint (a smoothing window of WORKER_MEMORY_POINTS' bound). */
const MAX_LEVEL_DISTANCES = 1_000_000;

function levelBytes(level: LevelStream | null): number {
  return level === null ? 1 : 1 + 24 + 4 + level.distances.length * 16 + 4 + level.hold.pending.length * 16;
}

function writeLevel(out: Buffer, offset: number, level: LevelStream | null): number {
  offset = out.writeUInt8(level === null ? 0 : 1, offset);
  if (level === null) return offset;
  for (const x of [level.baselineUpdatedAtMs, level.judged, level.hold.runCap]) offset = out.writeDoubleLE(x, offset);
  offset = out.writeUInt32LE(level.distances.length, offset);
  for (const x of level.distances) offset = out.writeDoubleLE(x, offset);
  for (let i = 0; i < level.distances.length; i++) offset = out.writeDoubleLE(level.parts[i] ?? 0, offset);
  offset = out.writeUInt32LE(level.hold.pending.length, offset);
  for (const [until, cap] of level.hold.pending) {
    offset = out.writeDoubleLE(until, offset);
    offset = out.writeDoubleLE(cap, offset);
  }
  return offset;
}

/**
 * The level section at `offset` ('ADW8'): the stream (or null: none) and where the section ends,
 * or undefined when it is malformed.
 */
function readLevel(bytes: Buffer, offset: number): { level: LevelStream | null; end: number } | undefined {
  if (bytes.length < offset + 1) return undefined;
  const hasLevel = bytes.readUInt8(offset);
  if (hasLevel === 0) return { level: null, end: offset + 1 };
  if (hasLevel !== 1 || bytes.length < offset + 29) return undefined;
  const baselineUpdatedAtMs = bytes.readDoubleLE(offset + 1);
  const judged = bytes.readDoubleLE(offset + 9);
  const runCap = bytes.readDoubleLE(offset + 17);
  const k = bytes.readUInt32LE(offset + 25);
  let at = offset + 29;
  if (k > MAX_LEVEL_DISTANCES || bytes.length < at + k * 16 + 4) return undefined;
  const distances = Array.from({ length: k }, (_, i) => bytes.readDoubleLE(at + i * 8));
  const parts = Array.from({ length: k }, (_, i) => bytes.readDoubleLE(at + (k + i) * 8));
  at += k * 16;
  const p = bytes.readUInt32LE(at);
  at += 4;
  if (p > MAX_PAST_PAIRS || bytes.length < at + p * 16) return undefined;
  const pending = Array.from({ length: p }, (_, i) => [bytes.readDoubleLE(at + i * 16), bytes.readDoubleLE(at + i * 16 + 8)] as const);
  at += p * 16;
  if (!Number.isSafeInteger(baselineUpdatedAtMs) || !Number.isSafeInteger(judged) || judged < 0 || !(runCap >= 0 && runCap <= 1)) return undefined;
  if (!distances.every(Number.isFinite) || !parts.every(Number.isFinite)) return undefined;
  if (!pending.every(([until, cap]) => Number.isSafeInteger(until) && cap >= 0 && cap <= 1)) return undefined;
  return { level: { baselineUpdatedAtMs, judged, distances, parts, hold: { pending, runCap } }, end: at };
}

function writePast(out: Buffer, offset: number, lows: readonly number[], highs: readonly number[]): number {
  for (const flat of [lows, highs]) {
    offset = out.writeUInt32LE(flat.length / 2, offset);
    for (const x of flat) offset = out.writeDoubleLE(x, offset);
  }
  return offset;
}

export function encodeWindow(window: SeriesWindow): Buffer {
  const n = window.values.length;
  const older = window.olderValues.length;
  const out = Buffer.allocUnsafe(HEADER_BYTES + n * 24 + 4 + older * 8 + levelBytes(window.level) + judgeBytes(window.judge));
  MAGIC.copy(out, 0);
  out.writeUInt32LE(n, 4);
  out.writeDoubleLE(window.lastJudgedTsMs, 8);
  out.writeDoubleLE(window.seenPoints, 16);
  out.writeDoubleLE(window.lastLearnedExcessAt, 24);
  let offset = HEADER_BYTES;
  for (const array of [window.timestampsMs, window.values, window.zScores]) {
    for (let i = 0; i < n; i++) {
      out.writeDoubleLE(array[i]!, offset);
      offset += 8;
    }
  }
  offset = out.writeUInt32LE(older, offset);
  for (const x of window.olderValues) offset = out.writeDoubleLE(x, offset);
  offset = writeLevel(out, offset, window.level);
  const following = window.judge;
  offset = out.writeUInt8(following === null ? 0 : 1, offset);
  if (following === null) return out;
  offset = out.writeUInt32LE(following.historyPoints, offset);
  offset = out.writeUInt32LE(following.targetWindow, offset);
  offset = out.writeDoubleLE(following.switchedAt ?? Number.NaN, offset);
  offset = writePast(out, offset, following.pastLows, following.pastHighs);
  const judge = following.judge;
  offset = out.writeUInt8(1, offset);
  offset = out.writeUInt32LE(judge.windowPoints, offset);
  offset = out.writeDoubleLE(judge.seen, offset);
  offset = out.writeDoubleLE(judge.detectedAt ?? Number.NaN, offset);
  offset = out.writeDoubleLE(judge.cachedPeriod, offset);
  offset = writePast(out, offset, judge.pastLows ?? [], judge.pastHighs ?? []);
  const model = judge.model;
  offset = out.writeUInt8(model === null ? 0 : 1, offset);
  if (model === null) return out;
  for (const x of [model.refitAt, model.period, model.origin, model.baseScale]) offset = out.writeDoubleLE(x, offset);
  offset = out.writeUInt32LE(model.profile === null ? NO_PROFILE : model.profile.length, offset);
  for (const x of model.profile ?? []) offset = out.writeDoubleLE(x, offset);
  const errors = judge.errors ?? null;
  offset = out.writeUInt8(errors === null ? 0 : 1, offset);
  const summaries =
    errors === null ? [0, 0, 0, 0, 0, 0] : [errors.at, errors.calibrated, errors.upper, errors.lower, errors.largest, errors.newest];
  for (const x of summaries) offset = out.writeDoubleLE(x, offset);
  return out;
}

/**
 * The judge section at `offset` in the layout of rank `layout` ('ADW2' to 'ADW6', or inside
 * 'ADW7' as 'ADW6' writes it), or undefined when it is malformed. 'ADW3''s errors section is
 * checked and dropped (its summaries lack the side spreads: the judge computes fresh ones at the
 * next point), as 'ADW2' has none.
 */
function decodeJudge(bytes: Buffer, offset: number, layout: 2 | 3 | 4 | 5 | 6): StreamJudgeModelState | null | undefined {
  const errorsBytes = layout >= 4 ? ERRORS_BYTES : layout === 3 ? ERRORS_BYTES_V3 : 0;
  if (bytes.length < offset + 1) return undefined;
  const hasJudge = bytes.readUInt8(offset);
  offset += 1;
  if (hasJudge === 0) return bytes.length === offset ? null : undefined;
  if (hasJudge !== 1 || bytes.length < offset + 4 + 24 + 1) return undefined;
  const windowPoints = bytes.readUInt32LE(offset);
  const seen = bytes.readDoubleLE(offset + 4);
  const detectedAt = bytes.readDoubleLE(offset + 12);
  const cachedPeriod = bytes.readDoubleLE(offset + 20);
  offset += 28;
  let past: { pastLows: number[]; pastHighs: number[] } | null = null;
  if (layout >= 5) {
    const lows = readPast(bytes, offset);
    if (lows === undefined) return undefined;
    const highs = readPast(bytes, lows.end);
    if (highs === undefined || bytes.length < highs.end + 1) return undefined;
    // Empty queues (no memory, or nothing has left the window yet) read as no past.
    if (lows.flat.length > 0 || highs.flat.length > 0) past = { pastLows: lows.flat, pastHighs: highs.flat };
    offset = highs.end;
  }
  const hasModel = bytes.readUInt8(offset);
  offset += 1;
  if (!Number.isSafeInteger(seen) || !Number.isSafeInteger(cachedPeriod) || cachedPeriod < 0) return undefined;
  if (!Number.isNaN(detectedAt) && !Number.isSafeInteger(detectedAt)) return undefined;
  const base = {
    version: 1 as const,
    windowPoints,
    seen,
    detectedAt: Number.isNaN(detectedAt) ? null : detectedAt,
    cachedPeriod,
    ...(past ?? {}),
  };
  if (hasModel === 0) return bytes.length === offset ? { ...base, model: null, errors: null } : undefined;
  if (hasModel !== 1 || bytes.length < offset + 36) return undefined;
  const refitAt = bytes.readDoubleLE(offset);
  const period = bytes.readDoubleLE(offset + 8);
  const origin = bytes.readDoubleLE(offset + 16);
  const baseScale = bytes.readDoubleLE(offset + 24);
  const profileLength = bytes.readUInt32LE(offset + 32);
  offset += 36;
  const count = profileLength === NO_PROFILE ? 0 : profileLength;
  if (bytes.length !== offset + count * 8 + errorsBytes) return undefined;
  const profile = profileLength === NO_PROFILE ? null : Array.from({ length: count }, (_, k) => bytes.readDoubleLE(offset + k * 8));
  const numbers = [refitAt, period, origin, baseScale, ...(profile ?? [])];
  if (!numbers.every(Number.isFinite) || !Number.isSafeInteger(refitAt) || !Number.isSafeInteger(origin)) return undefined;
  if (!Number.isSafeInteger(period) || period < 0 || !(baseScale > 0)) return undefined;
  const model = { refitAt, period, profile, origin, baseScale };
  if (layout === 2) return { ...base, model, errors: null };
  offset += count * 8;
  const hasErrors = bytes.readUInt8(offset);
  const summaryCount = layout >= 4 ? 6 : 4;
  const read = Array.from({ length: summaryCount }, (_, k) => bytes.readDoubleLE(offset + 1 + k * 8));
  const at = read[0]!;
  const spreads = read.slice(1);
  if (hasErrors === 0) return { ...base, model, errors: null };
  if (hasErrors !== 1 || !Number.isSafeInteger(at) || !spreads.every((x) => Number.isFinite(x) && x >= 0)) return undefined;
  if (layout === 3) return { ...base, model, errors: null };
  const [calibrated, upper, lower, largest, newest] = spreads as [number, number, number, number, number];
  return { ...base, model, errors: { at, calibrated, upper, lower, largest, newest } };
}

/**
 * A past queue at `offset` (its pair count, then the pairs): the flattened pairs and where the
 * section ends, or undefined when it is malformed (points not increasing safe integers, values
 * not finite, or past the end of the bytes).
 */
function readPast(bytes: Buffer, offset: number): { flat: number[]; end: number } | undefined {
  if (bytes.length < offset + 4) return undefined;
  const pairs = bytes.readUInt32LE(offset);
  const end = offset + 4 + pairs * 16;
  if (pairs > MAX_PAST_PAIRS || bytes.length < end) return undefined;
  const flat = new Array<number>(2 * pairs);
  for (let k = 0; k < 2 * pairs; k++) flat[k] = bytes.readDoubleLE(offset + 4 + k * 8);
  for (let k = 0; k < pairs; k++) {
    const point = flat[2 * k]!;
    if (!Number.isSafeInteger(point) || (k > 0 && point <= flat[2 * k - 2]!) || !Number.isFinite(flat[2 * k + 1]!)) return undefined;
  }
  return { flat, end };
}

/**
 * The window in a checkpoint, or null when the bytes are not a checkpoint (start afresh). An
 * 'ADW1' checkpoint, or one whose judge section is unreadable, gives the window without a judge
 * state (fitted afresh on the window at the next point).
 */
export function decodeWindow(bytes: Buffer, capacity: number): SeriesWindow | null {
  if (bytes.length < HEADER_BYTES_V5) return null;
  const magic = bytes.subarray(0, 4);
  const layout = LAYOUTS.find(([m]) => magic.equals(m))?.[1];
  if (layout === undefined) return null;
  const headerBytes = layout >= 6 ? HEADER_BYTES : HEADER_BYTES_V5;
  if (bytes.length < headerBytes) return null;
  const n = bytes.readUInt32LE(4);
  const arraysEnd = headerBytes + n * 24;
  if (layout === 1 ? bytes.length !== arraysEnd : bytes.length <= arraysEnd) return null;
  const lastJudgedTsMs = bytes.readDoubleLE(8);
  const seenPoints = bytes.readDoubleLE(16);
  if (!Number.isSafeInteger(lastJudgedTsMs) || lastJudgedTsMs < -1) return null;
  if (!Number.isSafeInteger(seenPoints) || seenPoints < n) return null;
  const lastLearnedExcessAt = layout >= 6 ? bytes.readDoubleLE(24) : -1;
  if (!Number.isSafeInteger(lastLearnedExcessAt) || lastLearnedExcessAt < -1 || lastLearnedExcessAt >= seenPoints) return null;
  const read = (base: number, count: number): number[] => {
    const out = new Array<number>(count);
    for (let i = 0; i < count; i++) out[i] = bytes.readDoubleLE(base + i * 8);
    return out;
  };
  const timestampsMs = read(headerBytes, n);
  const values = read(headerBytes + n * 8, n);
  const zScores = read(headerBytes + 2 * n * 8, n);
  if (!values.every(Number.isFinite) || !timestampsMs.every(Number.isSafeInteger)) return null;
  let olderValues: number[] = [];
  let judge: JudgeModelState | null = null;
  let level: LevelStream | null = null;
  if (layout === 7 || layout === 8) {
    const olderCount = bytes.readUInt32LE(arraysEnd);
    const olderEnd = arraysEnd + 4 + olderCount * 8;
    if (olderCount > MAX_HISTORY_POINTS || bytes.length <= olderEnd) return null;
    olderValues = read(arraysEnd + 4, olderCount);
    if (!olderValues.every(Number.isFinite) || n + olderCount > seenPoints) return null;
    let judgeAt = olderEnd;
    if (layout === 8) {
      const section = readLevel(bytes, olderEnd);
      if (section === undefined || bytes.length <= section.end) return null;
      level = section.level;
      judgeAt = section.end;
    }
    judge = decodeFollowing(bytes, judgeAt) ?? null;
  } else if (layout !== 1) {
    const inner = decodeJudge(bytes, arraysEnd, layout) ?? null;
    judge = inner === null ? null : followingOf(inner);
  }
  // A smaller capacity than when it was written (WORKER_WINDOW_POINTS lowered): the window keeps
  // the newest, the judge's history all of them.
  const excess = Math.max(0, n - capacity);
  return {
    values: values.slice(excess),
    timestampsMs: timestampsMs.slice(excess),
    zScores: zScores.slice(excess),
    olderValues: excess > 0 ? olderValues.concat(values.slice(0, excess)) : olderValues,
    lastJudgedTsMs,
    seenPoints,
    // The judge's history is the window's newest values: valid only where the window has all of them.
    judge: judge !== null && judge.judge.seen === seenPoints ? judge : null,
    lastLearnedExcessAt,
    level,
  };
}

/** A fixed-window judge's state (the layouts before 'ADW7') as the following judge of that window. */
function followingOf(inner: StreamJudgeModelState): JudgeModelState {
  return {
    version: 1,
    historyPoints: inner.windowPoints - 1,
    targetWindow: inner.windowPoints,
    switchedAt: null,
    judge: inner,
    pastLows: inner.pastLows ?? [],
    pastHighs: inner.pastHighs ?? [],
  };
}

/** The following judge's section at `offset` ('ADW7', 'ADW8'): null (none), or undefined when it is malformed. */
function decodeFollowing(bytes: Buffer, offset: number): JudgeModelState | null | undefined {
  const hasJudge = bytes.readUInt8(offset);
  if (hasJudge === 0) return bytes.length === offset + 1 ? null : undefined;
  if (hasJudge !== 1 || bytes.length < offset + 17) return undefined;
  const historyPoints = bytes.readUInt32LE(offset + 1);
  const targetWindow = bytes.readUInt32LE(offset + 5);
  const switchedAt = bytes.readDoubleLE(offset + 9);
  if (historyPoints < 1 || historyPoints > MAX_HISTORY_POINTS || targetWindow < 2 || targetWindow > MAX_HISTORY_POINTS + 1) return undefined;
  if (!Number.isNaN(switchedAt) && !(Number.isSafeInteger(switchedAt) && switchedAt >= 0)) return undefined;
  const lows = readPast(bytes, offset + 17);
  if (lows === undefined) return undefined;
  const highs = readPast(bytes, lows.end);
  if (highs === undefined) return undefined;
  const inner = decodeJudge(bytes, highs.end, 6);
  if (inner === undefined || inner === null) return undefined;
  return {
    version: 1,
    historyPoints,
    targetWindow,
    switchedAt: Number.isNaN(switchedAt) ? null : switchedAt,
    judge: inner,
    pastLows: lows.flat,
    pastHighs: highs.flat,
  };
}
