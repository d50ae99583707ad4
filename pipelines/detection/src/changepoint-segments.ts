// Significance-tested binary segmentation over a fixed set of candidate positions: how the
// changepoint detector chooses among the points that pass the seed's gradient rules.

/**
 * Upper tail of the standard normal, P(Z > z), for z >= 0: the complementary error function
 * by its Chebyshev-fitted exponential form (fractional error below 1.2e-7 everywhere).
 */
export function normalUpperTail(z: number): number {
  if (!(z > 0)) return 0.5;
  const x = z / Math.SQRT2;
  const t = 1 / (1 + 0.5 * x);
  const poly =
    -x * x -
    1.26551223 +
    t *
      (1.00002368 +
        t *
          (0.37409196 +
            t *
              (0.09678418 +
                t * (-0.18628806 + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277))))))));
  return 0.5 * t * Math.exp(poly);
}

/**
 * Confidence that a standardised difference z is real when it is the largest of `tests`
 * two-sided tests: the probability that none of them reaches |z| when nothing changes, taking
 * them as independent, (1 − p)^tests with p = P(|Z| > z). In [0, 1]; 1 − threshold is then
 * (at most, the tests being positively correlated) the false-alarm rate the threshold allows.
 */
export function familyConfidence(z: number, tests: number): number {
  const p = Math.min(1, 2 * normalUpperTail(Math.abs(z)));
  if (p >= 1) return 0;
  return Math.exp(Math.max(1, tests) * Math.log1p(-p));
}

export interface SplitSettings {
  /** Long-run variance of the error (the variance of its mean over w points is this / w). */
  readonly longRunVariance: number;
  /** Least distance between accepted changepoints (the seed's `period`, at least 1). */
  readonly spacing: number;
  /** Minimum confidence of an accepted split. */
  readonly threshold: number;
  /**
   * Test each step against a smooth curve (level, slope and curvature) within its segment, so
   * that a trend, straight or bending, is not taken for a change. Off: against a level only.
   */
  readonly withTrend: boolean;
}

export interface Split {
  readonly at: number;
  readonly confidence: number;
}

/**
 * Binary segmentation restricted to `candidates` (sorted positions). Within a segment [a, b) of
 * the error e, every candidate t gets the t-statistic z(t) of the coefficient of a step at t in
 * the least-squares fit of e = polynomial + step·[j >= t] over the segment (the polynomial of
 * degree 2 with `withTrend`, else a constant, which makes z the plain two-sample statistic of
 * the means before and after t), with the series' long-run variance as the noise variance.
 *
 * The candidate with the largest z is accepted when `familyConfidence(z, b − a)` (every point
 * of the segment a possible change) reaches the threshold; the two halves are then searched the
 * same way. A candidate closer than `spacing` to an accepted changepoint is never taken.
 * Returns the accepted splits by position.
 */
export function segmentSplits(errors: Float64Array, candidates: readonly number[], settings: SplitSettings): Split[] {
  const m = errors.length;
  // e centred, so that large levels lose no precision in the sums.
  let centre = 0;
  for (let j = 0; j < m; j++) centre += errors[j]!;
  centre = m > 0 ? centre / m : 0;
  const centred = new Float64Array(m);
  for (let j = 0; j < m; j++) centred[j] = errors[j]! - centre;
  const degree = settings.withTrend ? 2 : 0;
  const variance = Math.max(settings.longRunVariance, Number.MIN_VALUE);

  const accepted: Split[] = [];
  // Segment ends: a (inclusive), b (exclusive); whether a / b are changepoints (spacing applies).
  const stack: [number, number, boolean, boolean][] = [[0, m, false, false]];
  while (stack.length > 0) {
    const [a, b, aIsChange, bIsChange] = stack.pop()!;
    const lo = a + (aIsChange ? settings.spacing : 1);
    const hi = b - (bIsChange ? settings.spacing : 1);
    const inside = candidates.filter((t) => t >= lo && t <= hi);
    if (inside.length === 0) continue;
    const fit = new StepFit(centred, a, b, degree);
    let best = -1;
    let bestScore = 0;
    for (const t of inside) {
      const score = fit.score(t);
      if (score > bestScore) {
        bestScore = score;
        best = t;
      }
    }
    if (best < 0) continue;
    const z = bestScore / Math.sqrt(variance);
    const confidence = familyConfidence(z, b - a);
    if (confidence < settings.threshold) continue;
    accepted.push({ at: best, confidence });
    stack.push([a, best, aIsChange, true], [best, b, true, bIsChange]);
  }
  return accepted.sort((x, y) => x.at - y.at);
}

/**
 * Least squares of e[a:b) on an orthonormal polynomial basis plus one step. By Frisch–Waugh,
 * with s = [j >= t] and s̃, ẽ the parts of s and e orthogonal to the polynomials, the step's
 * coefficient is <s̃, ẽ>/<s̃, s̃> with variance σ²/<s̃, s̃>, so |<s̃, e>| / sqrt(<s̃, s̃>) is its
 * t-statistic times σ. Suffix sums make each t O(degree).
 */
class StepFit {
  private readonly basis: Float64Array[] = [];
  private readonly coefficients: number[] = [];
  private readonly basisSuffix: Float64Array[] = [];
  private readonly errorSuffix: Float64Array;

  constructor(
    private readonly e: Float64Array,
    private readonly a: number,
    private readonly b: number,
    degree: number,
  ) {
    const length = b - a;
    const mid = (length - 1) / 2;
    for (let d = 0; d <= degree; d++) {
      const v = new Float64Array(length);
      for (let j = 0; j < length; j++) v[j] = ((j - mid) / length) ** d;
      for (const q of this.basis) {
        let dot = 0;
        for (let j = 0; j < length; j++) dot += v[j]! * q[j]!;
        for (let j = 0; j < length; j++) v[j] = v[j]! - dot * q[j]!;
      }
      let norm = 0;
      for (let j = 0; j < length; j++) norm += v[j]! * v[j]!;
      if (!(norm > 1e-12)) continue;
      norm = Math.sqrt(norm);
      for (let j = 0; j < length; j++) v[j] = v[j]! / norm;
      let coefficient = 0;
      for (let j = 0; j < length; j++) coefficient += v[j]! * e[a + j]!;
      const suffix = new Float64Array(length + 1);
      for (let j = length - 1; j >= 0; j--) suffix[j] = suffix[j + 1]! + v[j]!;
      this.basis.push(v);
      this.coefficients.push(coefficient);
      this.basisSuffix.push(suffix);
    }
    this.errorSuffix = new Float64Array(length + 1);
    for (let j = length - 1; j >= 0; j--) this.errorSuffix[j] = this.errorSuffix[j + 1]! + e[a + j]!;
  }

  /** <s̃, s̃> and <s̃, e> for a step at t. */
  private parts(t: number): { energy: number; projection: number } {
    const i = t - this.a;
    let projection = this.errorSuffix[i]!;
    let energy = this.b - t;
    for (let q = 0; q < this.basis.length; q++) {
      const share = this.basisSuffix[q]![i]!;
      projection -= share * this.coefficients[q]!;
      energy -= share * share;
    }
    return { energy, projection };
  }

  /** |step coefficient| / its standard error, times the noise's standard deviation. */
  score(t: number): number {
    const { energy, projection } = this.parts(t);
    return energy > 1e-9 ? Math.abs(projection) / Math.sqrt(energy) : 0;
  }
}
