/**
 * mulberry32: a small, well-mixed, seedable 32-bit generator of floats in [0, 1). Used wherever a
 * run must be reproducible from a seed: synthetic test and benchmark series, and the shuffling of
 * fine-tuning batches (the same input gives the same weights).
 */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
