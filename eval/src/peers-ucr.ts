// UCR anomaly archive top-k accuracy (../shared/datasets/ucr_dev/README.md, "Metric") for the
// peers' named locations, on the harness's own file-name parser and hit rule (ucr-data.ts,
// ucr-scorer.ts). Positions are 1-based, as the archive's file names give them.
import { parseUcrFileName as parseName, type UcrSeriesInfo } from './ucr-data.js';
import { isUcrHit } from './ucr-scorer.js';

/** What a UCR file name says: `<NNN>_UCR_Anomaly_<name>_<trainEnd>_<begin>_<end>.txt`. */
export type UcrLabel = Pick<UcrSeriesInfo, 'file' | 'trainEnd' | 'begin' | 'end'>;

/** The label of a series file; throws on a name the archive does not use or an impossible label. */
export function parseUcrFileName(file: string): UcrLabel {
  const info = parseName(file);
  if (info === null) throw new SyntaxError(`not a UCR archive file name: ${JSON.stringify(file)}`);
  const { trainEnd, begin, end } = info;
  if (!(trainEnd >= 1 && begin > trainEnd && end >= begin)) {
    throw new RangeError(`${file}: expected trainEnd < begin <= end`);
  }
  return { file, trainEnd, begin, end };
}

/** A hit: min(begin − L, begin − 100) < P < max(end + L, end + 100), L = end − begin + 1. */
export function ucrHit(label: UcrLabel, position: number): boolean {
  return isUcrHit(position, label);
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
