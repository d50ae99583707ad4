// UCR anomaly archive top-k accuracy (../shared/datasets/ucr_dev/README.md, "Metric"), for the
// peers' named locations. Pure: file names and locations in, hits out. Positions are 1-based, as
// the archive's file names give them.

/** What a UCR file name says: `<NNN>_UCR_Anomaly_<name>_<trainEnd>_<begin>_<end>.txt`. */
export interface UcrLabel {
  readonly file: string;
  /** Points 1..trainEnd are the anomaly-free training part. */
  readonly trainEnd: number;
  /** The one anomaly spans begin..end (inclusive). */
  readonly begin: number;
  readonly end: number;
}

const UCR_NAME = /^(\d+)_UCR_Anomaly_(.+)_(\d+)_(\d+)_(\d+)\.txt$/;

export function parseUcrFileName(file: string): UcrLabel {
  const m = UCR_NAME.exec(file);
  if (m === null) throw new SyntaxError(`not a UCR archive file name: ${JSON.stringify(file)}`);
  const [trainEnd, begin, end] = [m[3], m[4], m[5]].map(Number) as [number, number, number];
  if (!(trainEnd >= 1 && begin > trainEnd && end >= begin)) {
    throw new RangeError(`${file}: expected trainEnd < begin <= end`);
  }
  return { file, trainEnd, begin, end };
}

/** A hit: min(begin − L, begin − 100) < P < max(end + L, end + 100), L = end − begin + 1. */
export function ucrHit(label: UcrLabel, position: number): boolean {
  const length = label.end - label.begin + 1;
  return (
    Math.min(label.begin - length, label.begin - 100) < position &&
    position < Math.max(label.end + length, label.end + 100)
  );
}

export interface UcrSeriesLocations {
  readonly label: UcrLabel;
  /** The detector's locations, best first, non-overlapping by the detector's own rule. */
  readonly locations: readonly number[];
}

export interface UcrTopK {
  readonly k: number;
  readonly series: number;
  readonly hits: number;
  /** hits / series. */
  readonly accuracy: number;
}

/** top-k accuracy: a series counts when any of its first k locations hits. */
export function ucrTopK(series: readonly UcrSeriesLocations[], k: number): UcrTopK {
  const hits = series.filter((s) => s.locations.slice(0, k).some((p) => ucrHit(s.label, p))).length;
  return { k, series: series.length, hits, accuracy: series.length === 0 ? 0 : hits / series.length };
}
