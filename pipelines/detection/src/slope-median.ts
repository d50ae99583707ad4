// The median of the pairwise slopes of a run of points that slides by one point at a time: the
// Theil–Sen slope of the incremental judge's forecast line. When the run slides, the oldest
// point's slopes leave and the newest point's enter (points − 1 each). Only the slopes near the
// median are kept in order: the ones below `low` or above `high` are merely counted, so a slide
// merges its few entering and leaving slopes into a short sorted run instead of all of them.
import { selectInPlace } from './robust.js';

/**
 * Slopes kept in order on each side of the median at a build: the sorted run starts about
 * 2 × BAND_RANKS + 1 long. A slide moves the median's rank by at most points − 1; a median
 * outside the run makes the next call rebuild. The judge rebuilds after every refit anyway (new
 * deseasonalised values), so the run only has to last a few dozen slides.
 */
const BAND_RANKS = 48;

export class SlidingSlopeMedian {
  /** Pairwise slopes of the current run: (points − 1) × points / 2, an odd count when points ≡ 2, 3 mod 4. */
  private readonly count: number;
  private readonly all: Float64Array;
  /** The slopes in [low, high], sorted: middle[0, middleCount). */
  private middle: Float64Array;
  private merged: Float64Array;
  private middleCount = 0;
  private below = 0;
  private low = 0;
  private high = 0;
  private readonly leaving: Float64Array;
  /** Bucket counts of `bucketBand`: about one slope per bucket. */
  private readonly counts: Int32Array;
  private readonly entering: Float64Array;
  /** Index one past the run the slopes belong to; -1 = none (build next). */
  private runEnd = -1;

  constructor(private readonly points: number) {
    this.count = (points * (points - 1)) / 2;
    // `all`, `leaving` and `entering` are only used within one call; the instance's own.
    this.all = new Float64Array(this.count);
    this.middle = new Float64Array(this.count);
    this.merged = new Float64Array(this.count);
    this.leaving = new Float64Array(points);
    this.counts = new Int32Array(Math.max(2, this.count));
    this.entering = new Float64Array(points + 1);
  }

  /** The values moved by `by` places in their buffer (compaction): the kept slopes still hold. */
  moved(by: number): void {
    if (this.runEnd !== -1) this.runEnd += by;
  }

  /**
   * Forgets the slopes. Call it whenever a value of the run changed or the indices moved: a
   * slide recomputes only the leaving and entering slopes and trusts the ones it kept.
   */
  invalidate(): void {
    this.runEnd = -1;
  }

  /**
   * The median of the pairwise slopes (y[j] − y[i]) / (j − i) of y[end − points, end), as the
   * middle order statistic of all of them sorted (the mean of the two middle ones for an even
   * count); after a call for end − 1, by sliding.
   */
  median(y: Float64Array, end: number): number {
    if (this.runEnd === end - 1 && end - 1 - this.points >= 0) {
      const slid = this.slide(y, end);
      if (!Number.isNaN(slid)) {
        this.runEnd = end;
        return slid;
      }
    }
    return this.build(y, end);
  }

  private build(y: Float64Array, end: number): number {
    const from = end - this.points;
    const all = this.all;
    let n = 0;
    let finite = true;
    for (let i = 0; i < this.points; i++) {
      const yi = y[from + i]!;
      for (let j = i + 1; j < this.points; j++) {
        const slope = (y[from + j]! - yi) / (j - i);
        if (Number.isNaN(slope)) finite = false;
        all[n++] = slope;
      }
    }
    this.runEnd = -1;
    if (n === 0) return 0;
    if (!finite || n % 2 === 0) {
      // NaN does not order; an even count has two middles. Sort them all, as theilSen does.
      const sorted = all.subarray(0, n).sort();
      return n % 2 === 1 ? sorted[n >> 1]! : (sorted[(n >> 1) - 1]! + sorted[n >> 1]!) / 2;
    }
    const k = n >> 1;
    const lowRank = Math.max(0, k - BAND_RANKS);
    const highRank = Math.min(n - 1, k + BAND_RANKS);
    if (!this.bucketBand(n, lowRank, highRank)) {
      this.low = selectInPlace(all, lowRank, 0, n - 1);
      this.high = selectInPlace(all, highRank, lowRank, n - 1);
      let below = 0;
      let m = 0;
      for (let r = 0; r < n; r++) {
        const x = all[r]!;
        if (x < this.low) below++;
        else if (x <= this.high) this.middle[m++] = x;
      }
      this.below = below;
      this.middleCount = m;
      this.middle.subarray(0, m).sort();
    }
    this.runEnd = end;
    return this.middle[k - this.below]!;
  }

  /**
   * The band of ranks [lowRank, highRank] of all[0, n) (NaN-free) by buckets of equal width
   * between the slopes' extremes, as `medianOf` (robust.ts) selects: every slope of a lower bucket
   * is at most every slope of a higher one, so the band's order statistics are among the slopes of
   * the buckets that hold those two ranks and the ones between. A spike's slopes stretch the
   * range, so those slopes are bucketed again between their own extremes (twice at most) until
   * few are left, and only these are sorted. Sets low, high, below, middle and middleCount as the
   * selection would; false (nothing set) when the slopes are all equal or their range overflows.
   */
  private bucketBand(n: number, lowRank: number, highRank: number): boolean {
    const counts = this.counts;
    const enough = 2 * (highRank - lowRank + 1);
    let source = this.all;
    let target = this.merged;
    let count = n;
    /** Slopes below the ones in `source`. */
    let skipped = 0;
    for (let level = 0; level < 3 && count > enough; level++) {
      let min = source[0]!;
      let max = min;
      for (let r = 1; r < count; r++) {
        const x = source[r]!;
        if (x < min) min = x;
        else if (x > max) max = x;
      }
      const scale = (counts.length - 1) / (max - min);
      if (!(max > min && scale > 0 && scale < Number.POSITIVE_INFINITY)) {
        if (level === 0) return false;
        break;
      }
      counts.fill(0);
      for (let r = 0; r < count; r++) counts[((source[r]! - min) * scale) | 0]!++;
      let first = 0;
      let belowFirst = skipped;
      while (belowFirst + counts[first]! <= lowRank) belowFirst += counts[first++]!;
      let last = first;
      let throughLast = belowFirst + counts[first]!;
      while (throughLast <= highRank) throughLast += counts[++last]!;
      let c = 0;
      for (let r = 0; r < count; r++) {
        const x = source[r]!;
        const b = ((x - min) * scale) | 0;
        if (b >= first && b <= last) target[c++] = x;
      }
      skipped = belowFirst;
      count = c;
      [source, target] = [target, source];
    }
    // `source` holds ranks skipped..skipped + count − 1, the band among them.
    const sorted = source.subarray(0, count).sort();
    const low = sorted[lowRank - skipped]!;
    const high = sorted[highRank - skipped]!;
    let from = lowRank - skipped;
    while (from > 0 && sorted[from - 1]! >= low) from--;
    let to = highRank - skipped + 1;
    while (to < count && sorted[to]! <= high) to++;
    this.middle.set(sorted.subarray(from, to));
    this.low = low;
    this.high = high;
    this.below = skipped + from;
    this.middleCount = to - from;
    return true;
  }

  /** Slides the run to end − points..end − 1; NaN when it cannot (rebuild instead). */
  private slide(y: Float64Array, end: number): number {
    const from = end - this.points;
    const old = from - 1;
    const newest = y[end - 1]!;
    const oldest = y[old]!;
    const { low, high, leaving, entering } = this;
    let below = this.below;
    let leaves = 0;
    let enters = 0;
    for (let q = 0; q < this.points - 1; q++) {
      const left = (y[from + q]! - oldest) / (from + q - old);
      const entered = (newest - y[from + q]!) / (end - 1 - (from + q));
      if (Number.isNaN(left) || Number.isNaN(entered)) return Number.NaN;
      if (left < low) below--;
      else if (left <= high) leaving[leaves++] = left;
      if (entered < low) below++;
      else if (entered <= high) entering[enters++] = entered;
    }
    insertionSort(leaving, leaves);
    insertionSort(entering, enters);
    const middle = this.middle;
    const merged = this.merged;
    let o = 0;
    let e = 0;
    let w = 0;
    for (let r = 0; r < this.middleCount; r++) {
      const x = middle[r]!;
      if (o < leaves && x === leaving[o]) {
        o++;
        continue;
      }
      while (e < enters && entering[e]! < x) merged[w++] = entering[e++]!;
      merged[w++] = x;
    }
    while (e < enters) merged[w++] = entering[e++]!;
    // Every leaving slope inside [low, high] must be one of the kept ones.
    if (o !== leaves) return Number.NaN;
    this.middle = merged;
    this.merged = middle;
    this.middleCount = w;
    this.below = below;
    const rank = (this.count >> 1) - below;
    return rank >= 0 && rank < w ? merged[rank]! : Number.NaN;
  }
}

/** Sorts a[0..n) ascending in place (n is small: the slopes that enter or leave the kept run). */
function insertionSort(a: Float64Array, n: number): void {
  for (let i = 1; i < n; i++) {
    const x = a[i]!;
    let j = i - 1;
    while (j >= 0 && a[j]! > x) {
      a[j + 1] = a[j]!;
      j--;
    }
    a[j + 1] = x;
  }
}
