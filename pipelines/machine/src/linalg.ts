// Small dense linear algebra for a machine's channels (a few to a few dozen): a symmetric
// eigendecomposition by cyclic Jacobi rotations, exact to rounding and free of dependencies.

/** A symmetric matrix as row-major rows. */
export type Matrix = number[][];

export interface Eigen {
  /** Eigenvalues, descending. */
  readonly values: number[];
  /** Unit eigenvectors, `vectors[k]` belonging to `values[k]`. */
  readonly vectors: number[][];
}

/** Eigenvalues and eigenvectors of a symmetric matrix (its upper triangle is read). */
export function symmetricEigen(matrix: Matrix): Eigen {
  const n = matrix.length;
  const a = matrix.map((row, i) => row.map((value, j) => (j >= i ? value : (matrix[j]?.[i] ?? 0))));
  const v: number[][] = Array.from({ length: n }, (_, i) => Array.from({ length: n }, (_, j) => (i === j ? 1 : 0)));
  const at = (i: number, j: number): number => a[i]![j]!;
  for (let sweep = 0; sweep < 100; sweep++) {
    let off = 0;
    for (let i = 0; i < n; i++) for (let j = i + 1; j < n; j++) off += at(i, j) ** 2;
    if (off < 1e-30) break;
    for (let p = 0; p < n; p++) {
      for (let q = p + 1; q < n; q++) {
        const apq = at(p, q);
        if (Math.abs(apq) < 1e-300) continue;
        const theta = (at(q, q) - at(p, p)) / (2 * apq);
        const t = Math.sign(theta || 1) / (Math.abs(theta) + Math.sqrt(theta * theta + 1));
        const c = 1 / Math.sqrt(t * t + 1);
        const s = t * c;
        for (let k = 0; k < n; k++) {
          const akp = at(k, p);
          const akq = at(k, q);
          a[k]![p] = c * akp - s * akq;
          a[k]![q] = s * akp + c * akq;
        }
        for (let k = 0; k < n; k++) {
          const apk = at(p, k);
          const aqk = at(q, k);
          a[p]![k] = c * apk - s * aqk;
          a[q]![k] = s * apk + c * aqk;
        }
        for (let k = 0; k < n; k++) {
          const vkp = v[k]![p]!;
          const vkq = v[k]![q]!;
          v[k]![p] = c * vkp - s * vkq;
          v[k]![q] = s * vkp + c * vkq;
        }
      }
    }
  }
  const order = Array.from({ length: n }, (_, i) => i).sort((x, y) => at(y, y) - at(x, x));
  return {
    values: order.map((i) => at(i, i)),
    vectors: order.map((i) => v.map((row) => row[i]!)),
  };
}
