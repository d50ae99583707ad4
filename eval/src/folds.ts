// Leave-one-category-out folds over NAB's categories (the folder of each file in nab_dev/data):
// a fold's score is the normalised NAB score over the files of every category but one, so a
// figure carried by one category shows as a wide spread beside the mean.
import type { NabProfile } from './nab-scorer.js';

/** The file's category: its folder under data/ (`realKnownCause/nyc_taxi.csv` -> `realKnownCause`). */
export function nabCategory(file: string): string {
  const slash = file.indexOf('/');
  return slash < 0 ? '' : file.slice(0, slash);
}

/** What a fold needs of one file: its name, its windows and its raw score per profile. */
export interface FoldFile {
  readonly file: string;
  readonly windows: number;
  readonly raw: Readonly<Record<string, number>>;
}

export interface Fold {
  /** The category left out. */
  readonly heldOut: string;
  readonly files: number;
  readonly windows: number;
  /** Normalised NAB score over the remaining files: null detector 0, perfect 100. */
  readonly score: number;
}

export interface FoldSummary {
  readonly profile: string;
  readonly folds: readonly Fold[];
  readonly mean: number;
  readonly min: number;
  readonly max: number;
}

/**
 * One fold per category, in name order: the files of the other categories scored together as
 * NAB scores a corpus, 100 (S - S_null) / (S_perfect - S_null) with S the sum of their raw
 * scores, S_null = -A_FN and S_perfect = A_TP per window of those files.
 */
export function leaveOneCategoryOut(files: readonly FoldFile[], profile: NabProfile): FoldSummary {
  const categories = [...new Set(files.map((f) => nabCategory(f.file)))].sort();
  if (categories.length < 2) throw new RangeError('leave-one-category-out needs at least two categories');
  const folds = categories.map((heldOut): Fold => {
    const kept = files.filter((f) => nabCategory(f.file) !== heldOut);
    const windows = kept.reduce((n, f) => n + f.windows, 0);
    const raw = kept.reduce((sum, f) => {
      const value = f.raw[profile.name];
      if (value === undefined) throw new RangeError(`${f.file}: no raw score for ${profile.name}`);
      return sum + value;
    }, 0);
    const nullRaw = -profile.fnWeight * windows;
    const perfectRaw = profile.tpWeight * windows;
    const score = windows === 0 ? 0 : (100 * (raw - nullRaw)) / (perfectRaw - nullRaw);
    return { heldOut, files: kept.length, windows, score };
  });
  const scores = folds.map((f) => f.score);
  return {
    profile: profile.name,
    folds,
    mean: scores.reduce((a, b) => a + b, 0) / scores.length,
    min: Math.min(...scores),
    max: Math.max(...scores),
  };
}

/** `mean (min–max)`, one decimal, as the table prints a row's folds. */
export function foldCell(summary: FoldSummary | undefined): string {
  if (summary === undefined) return '—';
  return `${summary.mean.toFixed(1)} (${summary.min.toFixed(1)}–${summary.max.toFixed(1)})`;
}
