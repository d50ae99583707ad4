// NAB scoring, implemented from ../shared/datasets/nab_dev/SCORING.md (the rules NAB's own
// scorer applies). Pure: plain rows and flags in, numbers out.
//
// The service emits anomaly flags, not scores, so the flags are the detections: NAB's corpus-wide
// threshold sweep (rule 2) degenerates to "score >= 1 where flagged" and is not run.

/** One NAB cost profile (config/profiles.json; tnWeight is unused by NAB). */
export interface NabProfile {
  readonly name: string;
  /** A_TP: reward for the earliest possible detection of a window. */
  readonly tpWeight: number;
  /** A_FN: cost of a window with no detection. */
  readonly fnWeight: number;
  /** A_FP: cost of a false positive far from any window. */
  readonly fpWeight: number;
}

/** A labelled anomaly window as inclusive row indices of its file. */
export interface NabWindow {
  readonly startRow: number;
  readonly endRow: number;
}

export interface NabFileDetections {
  readonly file: string;
  readonly rowCount: number;
  /** Sorted by startRow, non-overlapping (as combined_windows.json ships them). */
  readonly windows: readonly NabWindow[];
  /** One flag per row: true = the detector fired on that row. */
  readonly detections: readonly boolean[];
}

export interface NabFileScore {
  readonly file: string;
  /** Sum of window values and weighted false positives (rule 7, one file). */
  readonly raw: number;
  readonly windowCount: number;
  /** Windows with at least one detection after the probationary period. */
  readonly detectedWindows: number;
  readonly missedWindows: number;
  /** Detected rows outside every window, after the probationary period. */
  readonly falsePositiveRows: number;
  /** All detected rows after the probationary period. */
  readonly detectionRows: number;
  /** Detected rows inside a window, after the probationary period. */
  readonly detectionRowsInWindows: number;
  /** What the file's raw score falls short of a perfect file's (A_TP per window), by cause. */
  readonly lost: NabLosses;
}

/**
 * Where a raw score falls short of a perfect one (A_TP per window, nothing else flagged), each
 * part at least 0, adding up to S_perfect − S: `missedWindows` A_TP + A_FN per window without a
 * detection, `lateDetections` A_TP less each detected window's value (its first detection after
 * the window's left edge), `falsePositives` the weighted false positives' cost.
 */
export interface NabLosses {
  readonly missedWindows: number;
  readonly lateDetections: number;
  readonly falsePositives: number;
}

/** Losses added up (over files). */
export function addLosses(all: readonly NabLosses[]): NabLosses {
  return all.reduce<NabLosses>(
    (sum, l) => ({
      missedWindows: sum.missedWindows + l.missedWindows,
      lateDetections: sum.lateDetections + l.lateDetections,
      falsePositives: sum.falsePositives + l.falsePositives,
    }),
    { missedWindows: 0, lateDetections: 0, falsePositives: 0 },
  );
}

export interface NabCorpusScore {
  readonly profile: string;
  /** S: sum of the files' raw scores. */
  readonly raw: number;
  /** S_null = -A_FN * #windows. */
  readonly nullRaw: number;
  /** S_perfect = A_TP * #windows. */
  readonly perfectRaw: number;
  /** 100 * (S - S_null) / (S_perfect - S_null): null = 0, perfect = 100. */
  readonly score: number;
  readonly windowCount: number;
  /** The files' losses added up: S_perfect − S. */
  readonly lost: NabLosses;
  readonly files: readonly NabFileScore[];
}

/** Rule 3: the first min(floor(0.15 N), 750) rows of each file are ignored entirely. */
export function probationaryRows(rowCount: number): number {
  return Math.min(Math.floor(0.15 * rowCount), 750);
}

/** Rule 4: NAB's scaled sigmoid, 2/(1+e^(5y)) - 1, clamped to -1 beyond y = 3. */
export function scaledSigmoid(y: number): number {
  if (y > 3) return -1;
  return 2 / (1 + Math.exp(5 * y)) - 1;
}

/** sig(-1) = 0.98661...: the left-edge value that rule 5 rescales to exactly A_TP. */
const SIGMOID_AT_LEFT_EDGE = scaledSigmoid(-1);

/** Rule 5: the value of a first detection at row `row` of window [L, R]. */
export function windowDetectionValue(window: NabWindow, row: number, profile: NabProfile): number {
  const width = window.endRow - window.startRow + 1;
  const y = -(window.endRow - row + 1) / width;
  return (scaledSigmoid(y) * profile.tpWeight) / SIGMOID_AT_LEFT_EDGE;
}

/**
 * Rule 6: the weight s of a false positive at `row` (its contribution is A_FP * s, s <= 0 in
 * practice). `previous` is the most recent window that ended before the row, if any.
 */
export function falsePositiveWeight(row: number, previous: NabWindow | undefined): number {
  if (previous === undefined) return -1;
  const width = previous.endRow - previous.startRow + 1;
  // A one-row window would divide by zero; NAB's formula tends to +inf there, i.e. sig = -1.
  const y = width > 1 ? Math.abs(row - previous.endRow) / (width - 1) : Number.POSITIVE_INFINITY;
  return scaledSigmoid(y);
}

function assertWellFormed(file: NabFileDetections): void {
  if (file.detections.length !== file.rowCount) {
    throw new RangeError(
      `${file.file}: ${file.detections.length} detection flags for ${file.rowCount} rows`,
    );
  }
  let lastEnd = -1;
  for (const w of file.windows) {
    if (!(w.startRow > lastEnd && w.endRow >= w.startRow && w.endRow < file.rowCount)) {
      throw new RangeError(`${file.file}: windows must be sorted, disjoint and inside the file`);
    }
    lastEnd = w.endRow;
  }
}

/**
 * One detected row after the probationary period, as rules 5 and 6 see it: the index of the
 * window it lies in, or -1 and its false-positive weight s (rule 6; A_FP * s is its value).
 */
export interface ScoredDetection {
  readonly row: number;
  readonly window: number;
  readonly falsePositiveWeight: number;
}

/** The file's detected rows after the probationary period (rule 3), in row order, with where each lies. */
export function* scoredDetections(file: NabFileDetections): Generator<ScoredDetection> {
  assertWellFormed(file);
  const probation = probationaryRows(file.rowCount);
  const windows = file.windows;
  // Index of the next window whose right edge is not yet passed; windows[w - 1] is the most recent
  // window that ended before the current row.
  let w = 0;
  for (let row = 0; row < file.rowCount; row += 1) {
    while (w < windows.length && (windows[w] as NabWindow).endRow < row) w += 1;
    if (row < probation || file.detections[row] !== true) continue;
    const current = windows[w];
    if (current !== undefined && row >= current.startRow) yield { row, window: w, falsePositiveWeight: 0 };
    else yield { row, window: -1, falsePositiveWeight: falsePositiveWeight(row, windows[w - 1]) };
  }
}

/** Rules 3 to 7 for one file and one profile. */
export function scoreFile(file: NabFileDetections, profile: NabProfile): NabFileScore {
  const windows = file.windows;
  // Best (= first, since values fall with the row) detection value per window; undefined = missed.
  const best: (number | undefined)[] = windows.map(() => undefined);
  let fpTotal = 0;
  let falsePositiveRows = 0;
  let detectionRows = 0;
  let detectionRowsInWindows = 0;
  for (const d of scoredDetections(file)) {
    detectionRows += 1;
    if (d.window >= 0) {
      detectionRowsInWindows += 1;
      const value = windowDetectionValue(windows[d.window] as NabWindow, d.row, profile);
      const seen = best[d.window];
      if (seen === undefined || value > seen) best[d.window] = value;
    } else {
      falsePositiveRows += 1;
      fpTotal += profile.fpWeight * d.falsePositiveWeight;
    }
  }
  let windowTotal = 0;
  let detectedWindows = 0;
  let lateDetections = 0;
  for (const value of best) {
    if (value === undefined) {
      windowTotal -= profile.fnWeight;
    } else {
      windowTotal += value;
      lateDetections += profile.tpWeight - value;
      detectedWindows += 1;
    }
  }
  const missedWindows = windows.length - detectedWindows;
  return {
    file: file.file,
    raw: windowTotal + fpTotal,
    windowCount: windows.length,
    detectedWindows,
    missedWindows,
    falsePositiveRows,
    detectionRows,
    detectionRowsInWindows,
    lost: { missedWindows: missedWindows * (profile.tpWeight + profile.fnWeight), lateDetections, falsePositives: 0 - fpTotal },
  };
}

/** Rules 7 and 8: the corpus raw score and its normalisation between null and perfect. */
export function scoreCorpus(
  files: readonly NabFileDetections[],
  profile: NabProfile,
): NabCorpusScore {
  const scored = files.map((f) => scoreFile(f, profile));
  const windowCount = files.reduce((n, f) => n + f.windows.length, 0);
  const raw = scored.reduce((s, f) => s + f.raw, 0);
  const nullRaw = -profile.fnWeight * windowCount;
  const perfectRaw = profile.tpWeight * windowCount;
  const score = windowCount === 0 ? 0 : (100 * (raw - nullRaw)) / (perfectRaw - nullRaw);
  return { profile: profile.name, raw, nullRaw, perfectRaw, score, windowCount, lost: addLosses(scored.map((f) => f.lost)), files: scored };
}

/**
 * Window-level precision and recall for the sensitivity sweep (not part of NAB): a window is
 * recalled when it holds at least one detection; precision is detections inside windows over all
 * detections; both count only rows after the probationary period. Precision is null when there
 * are no detections at all.
 */
export function windowPrecisionRecall(files: readonly NabFileDetections[]): {
  precision: number | null;
  recall: number | null;
  detections: number;
  detectionsInWindows: number;
  windows: number;
  recalledWindows: number;
} {
  // The profile does not change which windows or rows are detected.
  const counting: NabProfile = { name: 'count', tpWeight: 1, fnWeight: 1, fpWeight: 1 };
  let detections = 0;
  let detectionsInWindows = 0;
  let windows = 0;
  let recalledWindows = 0;
  for (const f of files) {
    const s = scoreFile(f, counting);
    detections += s.detectionRows;
    detectionsInWindows += s.detectionRowsInWindows;
    windows += s.windowCount;
    recalledWindows += s.detectedWindows;
  }
  return {
    precision: detections === 0 ? null : detectionsInWindows / detections,
    recall: windows === 0 ? null : recalledWindows / windows,
    detections,
    detectionsInWindows,
    windows,
    recalledWindows,
  };
}
