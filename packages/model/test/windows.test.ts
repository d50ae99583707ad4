import { describe, expect, it } from 'vitest';
import { buildWindows, computeEnergyStats, robustNormalisation, WINDOW_POINTS } from '../src/index.js';

describe('robustNormalisation', () => {
  it('uses the median and MAD x 1.4826', () => {
    const n = robustNormalisation([1, 2, 3, 4, 100]);
    expect(n.center).toBe(3);
    expect(n.scale).toBeCloseTo(1.4826, 10);
  });

  it('falls back to the mean absolute deviation, then a floor, on flat data', () => {
    const mostlyFlat = robustNormalisation([5, 5, 5, 5, 5, 5, 9]);
    expect(mostlyFlat.center).toBe(5);
    expect(mostlyFlat.scale).toBeCloseTo((4 / 7) * 1.2533, 10);
    const flat = robustNormalisation([7, 7, 7]);
    expect(flat.scale).toBeCloseTo(7e-6, 12);
  });
});

describe('buildWindows', () => {
  it('ends each row at its point and pads the start with the first value', () => {
    const w = buildWindows([10, 12, 14], { center: 10, scale: 2 });
    expect(w.length).toBe(3 * WINDOW_POINTS);
    expect(w[WINDOW_POINTS - 1]).toBe(0);
    expect(w[2 * WINDOW_POINTS - 1]).toBe(1);
    expect(w[2 * WINDOW_POINTS - 2]).toBe(0);
    expect(w[3 * WINDOW_POINTS - 1]).toBe(2);
    expect(w[2 * WINDOW_POINTS]).toBe(0);
  });
});

describe('computeEnergyStats', () => {
  it('gives mean, population std, interpolated p99 and count', () => {
    const values = Array.from({ length: 101 }, (_, i) => i);
    const s = computeEnergyStats(values);
    expect(s.energy_mean).toBe(50);
    expect(s.energy_std).toBeCloseTo(Math.sqrt(850), 10);
    expect(s.energy_p99).toBeCloseTo(99, 10);
    expect(s.num_windows).toBe(101);
  });

  it('is all zeros for no energies', () => {
    expect(computeEnergyStats([])).toEqual({ energy_mean: 0, energy_std: 0, energy_p99: 0, num_windows: 0 });
  });
});
