import { describe, expect, it } from 'vitest';
import { seededRandom } from '../src/random.js';
import { SlidingSlopeMedian } from '../src/slope-median.js';

/** The median of all pairwise slopes of y[end − points, end), sorted outright. */
function bruteMedian(y: Float64Array, end: number, points: number): number {
  const slopes: number[] = [];
  for (let i = end - points; i < end; i++) for (let j = i + 1; j < end; j++) slopes.push((y[j]! - y[i]!) / (j - i));
  const sorted = Float64Array.from(slopes).sort();
  const n = sorted.length;
  return n % 2 === 1 ? sorted[n >> 1]! : (sorted[(n >> 1) - 1]! + sorted[n >> 1]!) / 2;
}

describe('SlidingSlopeMedian', () => {
  it('gives the exact median of the pairwise slopes at every slide, on every kind of run', () => {
    const random = seededRandom(20261123);
    const makers: Array<(i: number) => number> = [
      () => random() * 10, // noise: the median wanders inside the kept run
      (i) => 0.05 * i + random(), // a trend
      (i) => (i % 97 === 50 ? 400 : random()), // spikes: every slope of a spike leaves the run
      (i) => (i < 300 ? random() : 30 + 3 * random()), // a level shift
      (i) => Math.floor(i / 40) % 3, // steps: most slopes tie at 0
      () => Math.round(random() * 3), // counts: heavy ties
      (i) => 5 * Math.sin(i / 9), // smooth: the median slope swings with the phase
    ];
    for (const [t, make] of makers.entries()) {
      for (const points of [31, 30, 7, 4]) {
        const y = Float64Array.from({ length: 700 }, (_, i) => make(i));
        const slopes = new SlidingSlopeMedian(points);
        for (let end = points; end <= y.length; end++) {
          // Now and then the values change under it, as after a refit: forget and rebuild.
          if (end % 53 === 0) {
            for (let i = end - points; i < end; i++) y[i] = y[i]! + 0.5 * (i % 5);
            slopes.invalidate();
          }
          expect(slopes.median(y, end), `maker ${t}, ${points} points, end ${end}`).toBe(bruteMedian(y, end, points));
        }
      }
    }
  });

  it('falls back to sorting when a slope is NaN, as theilSen orders them', () => {
    const y = Float64Array.from({ length: 80 }, (_, i) => i * 0.5 + (i % 3));
    y[40] = Number.NaN;
    const slopes = new SlidingSlopeMedian(31);
    for (let end = 31; end <= y.length; end++) {
      expect(slopes.median(y, end), `end ${end}`).toBe(bruteMedian(y, end, 31));
    }
  });

});
