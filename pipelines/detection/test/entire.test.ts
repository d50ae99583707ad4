import { describe, expect, it } from 'vitest';
import { detectEntireSeries, EVENT_GAP_SHARE, EXCURSION_MAX_SHARE, marginMultiplier, PHASE_MIN_CYCLES, reportEvents, ROUTINE_EVENT_COUNT, SeriesError, severityOf, type EntireResult } from '../src/index.js';
import { gridInput, indicesWhere, noiseSeries, plainInput, seededRandom, sineSeries } from './helpers.js';
import { vendorMonthlyInput } from './vendor-fixtures.js';

const DEFAULTS = { sensitivity: 95, maxAnomalyRatio: 0.25 };
/** The event rules off: every point outside the band flagged (what the band tests count). */
const EVENTS_OFF = { routineEvent: false, eventOnset: false } as const;
const BAND = { ...DEFAULTS, components: EVENTS_OFF };

function expectConsistent(result: EntireResult, values: readonly number[]): void {
  const n = values.length;
  for (const key of ['expectedValues', 'upperMargins', 'lowerMargins', 'isAnomaly', 'isPositiveAnomaly', 'isNegativeAnomaly', 'severity'] as const) {
    expect(result[key]).toHaveLength(n);
  }
  for (let i = 0; i < n; i++) {
    const deviation = values[i]! - result.expectedValues[i]!;
    // Anomaly <=> outside the band, in the direction of the deviation.
    expect(result.isAnomaly[i], `point ${i}`).toBe(Math.abs(deviation) > result.upperMargins[i]!);
    expect(result.isPositiveAnomaly[i]).toBe(result.isAnomaly[i]! && deviation > 0);
    expect(result.isNegativeAnomaly[i]).toBe(result.isAnomaly[i]! && deviation < 0);
    const severity = result.severity[i]!;
    if (result.isAnomaly[i]) {
      expect(severity).toBeGreaterThan(0);
      expect(severity).toBeLessThanOrEqual(1);
    } else {
      expect(severity).toBe(0);
    }
    expect(result.upperMargins[i]).toBeGreaterThan(0);
  }
}

describe('detectEntireSeries', () => {
  it('on the vendor v1.1 example finds period 12 and flags the spike, and only it', () => {
    const input = vendorMonthlyInput();
    const result = detectEntireSeries(input, DEFAULTS);
    expect(result.period).toBe(12);
    expect(indicesWhere(result.isAnomaly)).toEqual([25]);
    expect(result.isPositiveAnomaly[25]).toBe(true);
    // Expected values follow the yearly cycle, not the spike.
    expect(result.expectedValues[25]).toBeGreaterThan(770);
    expect(result.expectedValues[25]).toBeLessThan(830);
    expectConsistent(result, input.values);
  });

  it('finds injected spikes with their direction and nothing else on clean seasonal data, a two-point spike at its first point', () => {
    for (const seed of [1, 2, 3, 4, 5]) {
      const values = sineSeries(720, { period: 24, noise: 1, amplitude: 10, seed, trendPerPoint: 0.01 });
      values[100]! += 8;
      values[300]! -= 8;
      values[500]! += 15;
      values[501]! += 15;
      const result = detectEntireSeries(gridInput(values), DEFAULTS);
      expect(result.period, `seed ${seed}`).toBe(24);
      expect(indicesWhere(result.isAnomaly), `seed ${seed}`).toEqual([100, 300, 500]);
      expect(indicesWhere(result.isPositiveAnomaly)).toEqual([100, 500]);
      expect(indicesWhere(result.isNegativeAnomaly)).toEqual([300]);
      expectConsistent(result, values);
      // Every point outside the band, with the event rules off.
      expect(indicesWhere(detectEntireSeries(gridInput(values), BAND).isAnomaly), `seed ${seed}`).toEqual([100, 300, 500, 501]);
    }
  });

  it('does not let an anomaly pull the expected value towards itself', () => {
    const clean = sineSeries(240, { period: 24, noise: 1, seed: 8 });
    const spiked = [...clean];
    spiked[120]! += 50;
    const a = detectEntireSeries(gridInput(clean), DEFAULTS);
    const b = detectEntireSeries(gridInput(spiked), DEFAULTS);
    expect(Math.abs(b.expectedValues[120]! - a.expectedValues[120]!)).toBeLessThan(1);
    expect(b.isAnomaly[120]).toBe(true);
  });

  it('flags more (never fewer) points as sensitivity rises, with narrower margins', () => {
    const values = sineSeries(720, { period: 24, noise: 1, seed: 3 });
    for (const [i, bump] of [[50, 3], [150, 4], [250, 5], [350, 6], [450, 8], [550, 12]] as const) values[i]! += bump;
    let previousCount = -1;
    let previousMargin = Number.POSITIVE_INFINITY;
    for (const sensitivity of [0, 10, 25, 50, 75, 90, 95, 99, 100]) {
      const result = detectEntireSeries(gridInput(values), { sensitivity, maxAnomalyRatio: 0.49 });
      const count = result.isAnomaly.filter(Boolean).length;
      expect(count, `sensitivity ${sensitivity}`).toBeGreaterThanOrEqual(previousCount);
      expect(result.upperMargins[0]!).toBeLessThan(previousMargin);
      previousCount = count;
      previousMargin = result.upperMargins[0]!;
    }
    expect(previousCount).toBeGreaterThanOrEqual(6);
  });

  it('respects maxAnomalyRatio, keeping the most severe and widening the others’ margins', () => {
    const values = noiseSeries(200, 11);
    const random = seededRandom(5);
    // 30 spikes at distinct random positions, sizes 10, 11, ..., 39 (irregular, so not a cycle).
    const positions = new Set<number>();
    while (positions.size < 30) positions.add(1 + Math.floor(random() * 198));
    const spikes = [...positions];
    spikes.forEach((i, k) => (values[i]! += 10 + k));
    // The cap acts on the points outside the band, before they make events (30 spikes in 200
    // points are routine for this series: with the event rules, few are reported).
    const result = detectEntireSeries(plainInput(values), { sensitivity: 95, maxAnomalyRatio: 0.1, period: 0, components: EVENTS_OFF });
    const flagged = indicesWhere(result.isAnomaly);
    expect(flagged).toHaveLength(20);
    // The 20 largest spikes are the last 20 placed.
    expect(flagged).toEqual(spikes.slice(10).sort((a, b) => a - b));
    expectConsistent(result, values);
    // Cap of at least one even when ratio × n < 1.
    const one = detectEntireSeries(plainInput(values.slice(0, 40)), { sensitivity: 95, maxAnomalyRatio: 0.01, period: 0 });
    expect(one.isAnomaly.filter(Boolean)).toHaveLength(1);
  });

  it('gives severity in (0, 1], growing with the distance outside the band', () => {
    const values = noiseSeries(300, 5);
    values[50]! += 8;
    values[150]! += 16;
    values[250]! -= 40;
    const result = detectEntireSeries(plainInput(values), DEFAULTS);
    expect(indicesWhere(result.isAnomaly)).toEqual([50, 150, 250]);
    const [a, b, c] = [result.severity[50]!, result.severity[150]!, result.severity[250]!];
    expect(a).toBeGreaterThan(0);
    expect(b).toBeGreaterThan(a);
    expect(c).toBeGreaterThan(b);
    expect(c).toBeLessThanOrEqual(1);
    expectConsistent(result, values);
  });

  it('never flags a point equal to its expected value; a flat series keeps non-zero margins', () => {
    const flat = new Array<number>(50).fill(100);
    const result = detectEntireSeries(plainInput(flat), { sensitivity: 100, maxAnomalyRatio: 0.49 });
    expect(result.isAnomaly.some(Boolean)).toBe(false);
    expect(result.expectedValues.every((v) => v === 100)).toBe(true);
    expect(result.upperMargins[0]).toBeGreaterThan(0);
    const spiked = [...flat];
    spiked[20] = 130;
    const withSpike = detectEntireSeries(plainInput(spiked), DEFAULTS);
    expect(indicesWhere(withSpike.isAnomaly)).toEqual([20]);
    const zeros = detectEntireSeries(plainInput(new Array<number>(20).fill(0)), DEFAULTS);
    expect(zeros.isAnomaly.some(Boolean)).toBe(false);
  });

  it('raises no false alarms on trends, noise and a random walk', () => {
    for (const seed of [1, 2, 3]) {
      const trend = sineSeries(500, { period: 1e9, amplitude: 0, noise: 1, trendPerPoint: 0.3, seed });
      expect(detectEntireSeries(plainInput(trend), DEFAULTS).isAnomaly.filter(Boolean).length, `trend ${seed}`).toBe(0);
      expect(detectEntireSeries(plainInput(noiseSeries(2000, seed)), DEFAULTS).isAnomaly.filter(Boolean).length).toBeLessThanOrEqual(1);
    }
  });

  it('reports one result per input point when points are missing, modelling the filled grid', () => {
    const full = sineSeries(24 * 10, { period: 24, noise: 0.5, seed: 2 });
    const missing = new Set([30, 31, 32, 100, 101, 150]);
    const input = gridInput(full, { missing });
    const result = detectEntireSeries(input, DEFAULTS);
    expect(result.period).toBe(24);
    expect(result.expectedValues).toHaveLength(full.length - missing.size);
    expect(result.isAnomaly.some(Boolean)).toBe(false);
    expectConsistent(result, input.values);
  });

  it('uses a given period, and period 0 as non-seasonal', () => {
    const values = sineSeries(120, { period: 12, noise: 0.5, seed: 4 });
    expect(detectEntireSeries(plainInput(values), { ...DEFAULTS, period: 12 }).period).toBe(12);
    const flat = detectEntireSeries(plainInput(values), { ...DEFAULTS, period: 0 });
    expect(flat.period).toBe(0);
  });

  it('rejects series shorter than 12 points', () => {
    expect(() => detectEntireSeries(plainInput([1, 2, 3]), DEFAULTS)).toThrow(SeriesError);
  });

  // Its speed is `npm run bench`'s to measure.
  it('models 8,640 points', () => {
    const values = sineSeries(8640, { period: 288, noise: 3, seed: 3 });
    const input = gridInput(values, { granularity: 'minutely', customInterval: 5 });
    const result = detectEntireSeries(input, DEFAULTS);
    expect(result.period).toBe(288);
    expect(result.isAnomaly).toHaveLength(8640);
  });
});

describe('detectEntireSeries: the noise scale follows the residuals\' shoulders', () => {
  it('does not flag the ordinary readings of a metric quantized to a few levels, and still flags a spike', () => {
    // A CPU percentage reported in steps, in the shares of NAB's ec2_cpu_utilization_c6585a:
    // 0.066 56 %, 0.068 22 %, 0.134 16.5 %, 0.132 5.5 %; and one burst to 1.6.
    const random = seededRandom(5);
    const values = Array.from({ length: 2000 }, (): number => {
      const u = random();
      return u < 0.56 ? 0.066 : u < 0.78 ? 0.068 : u < 0.945 ? 0.134 : 0.132;
    });
    values[1500] = 1.6;
    const plain = detectEntireSeries(plainInput(values), { ...DEFAULTS, components: { ...EVENTS_OFF, shoulder: false } });
    const result = detectEntireSeries(plainInput(values), DEFAULTS);
    expectConsistent(result, values);
    // The MAD alone sees 0.066 and 0.068 only: every step up is an anomaly.
    expect(indicesWhere(plain.isAnomaly).length).toBeGreaterThan(200);
    expect(indicesWhere(result.isAnomaly)).toEqual([1500]);
  });

  it('widens the band where the noise is wide, so a cycle whose high phase is noisier raises no alarm', () => {
    // Like NAB's art_daily_small_noise: low phase 20 ± 1, high phase 80 ± 5, period 288.
    const random = seededRandom(9);
    const values = Array.from({ length: 4032 }, (_, i) => {
      const high = i % 288 >= 100 && i % 288 < 210;
      return high ? 80 + 10 * (random() - 0.5) : 20 + 2 * (random() - 0.5);
    });
    // The shoulders alone (phase scales off, as the phases' own bands would widen it too).
    const plain = detectEntireSeries(plainInput(values), { ...DEFAULTS, components: { ...EVENTS_OFF, shoulder: false, phaseScale: false } });
    const result = detectEntireSeries(plainInput(values), { ...DEFAULTS, components: { ...EVENTS_OFF, phaseScale: false } });
    expect(result.period).toBe(288);
    expect(indicesWhere(detectEntireSeries(plainInput(values), DEFAULTS).isAnomaly).length).toBeLessThanOrEqual(2);
    // The MAD alone: 160 of the high phase's ordinary readings.
    expect(indicesWhere(plain.isAnomaly).length).toBeGreaterThan(100);
    expect(indicesWhere(result.isAnomaly).length).toBeLessThanOrEqual(2);
    // The band is wider by the noise the shoulders show; a drop to 40 in the high phase is reported.
    expect(result.upperMargins[150]! / plain.upperMargins[150]!).toBeGreaterThan(1.5);
    values[2000 + 40] = 40;
    expect(indicesWhere(detectEntireSeries(plainInput(values), { ...DEFAULTS, components: { phaseScale: false } }).isAnomaly)).toContain(2040);
    expect(indicesWhere(detectEntireSeries(plainInput(values), DEFAULTS).isAnomaly)).toContain(2040);
  });

  it('leaves the band of Gaussian noise as the MAD sets it', () => {
    const values = noiseSeries(3000, 10, 2, 41);
    const plain = detectEntireSeries(plainInput(values), { ...DEFAULTS, components: { shoulder: false } });
    const result = detectEntireSeries(plainInput(values), DEFAULTS);
    expect(result.upperMargins[100]! / plain.upperMargins[100]!).toBeGreaterThanOrEqual(1);
    expect(result.upperMargins[100]! / plain.upperMargins[100]!).toBeLessThan(1.05);
  });
});

describe('detectEntireSeries: phases whose noise is wider get a wider band', () => {
  // A CPU at 30 ± 0.5 that spikes at the same minute of every 12 (phase 0) to a height between
  // 80 and 100, like NAB's cpu_utilization_asg_misconfiguration.
  function spiky(cycles: number, seed: number): number[] {
    const random = seededRandom(seed);
    return Array.from({ length: cycles * 12 }, (_, i) => (i % 12 === 0 ? 80 + 20 * random() : 30 + (random() - 0.5)));
  }

  it('keeps the ordinary spikes of the noisy phase inside its band, and still reports what is unusual there and elsewhere', () => {
    const values = spiky(100, 3);
    const plain = detectEntireSeries(plainInput(values), { ...DEFAULTS, period: 12, components: { ...EVENTS_OFF, phaseScale: false } });
    const result = detectEntireSeries(plainInput(values), { ...DEFAULTS, period: 12 });
    expectConsistent(result, values);
    // One band for the series: a share of the regular spikes lies outside it.
    expect(indicesWhere(plain.isAnomaly).length).toBeGreaterThan(10);
    expect(indicesWhere(result.isAnomaly)).toEqual([]);
    // The spike phase's band is wider; the quiet phases keep the series' band.
    expect(result.upperMargins[600]!).toBeGreaterThan(5 * result.upperMargins[606]!);
    expect(result.upperMargins[606]).toBe(plain.upperMargins[606]);
    values[606] = 60; // a spike at a quiet minute
    values[840] = 170; // a spike far above the usual ones
    expect(indicesWhere(detectEntireSeries(plainInput(values), { ...DEFAULTS, period: 12 }).isAnomaly)).toEqual([606, 840]);
  });

  it('is not widened by an anomaly that fills one cycle of its phases, and needs four cycles', () => {
    // Period 48, 10 cycles; a reading pinned at 95 for 10 points in the seventh: a tenth of the
    // pools of its phases (each pools three phases over the ten cycles).
    const random = seededRandom(12);
    const values = Array.from({ length: 480 }, (_, i) => 50 + 20 * Math.sin((2 * Math.PI * i) / 48) + (random() - 0.5));
    for (let i = 300; i < 310; i++) values[i] = 95;
    const plain = detectEntireSeries(plainInput(values), { ...BAND, period: 48, components: { ...EVENTS_OFF, phaseScale: false } });
    const result = detectEntireSeries(plainInput(values), { ...BAND, period: 48 });
    expect(indicesWhere(result.isAnomaly)).toEqual(indicesWhere(plain.isAnomaly));
    expect(indicesWhere(result.isAnomaly).filter((i) => i >= 300 && i < 310)).toHaveLength(10);
    // With the event rules: one event, reported at its first point.
    expect(indicesWhere(detectEntireSeries(plainInput(values), { ...DEFAULTS, period: 48 }).isAnomaly)).toEqual([300]);
    // Fewer than PHASE_MIN_CYCLES cycles: one band for all.
    const short = spiky(PHASE_MIN_CYCLES - 1, 4);
    const margins = detectEntireSeries(plainInput(short), { ...BAND, period: 12 }).upperMargins;
    expect(new Set(margins).size).toBe(1);
  });
});

describe('margins and severity', () => {
  it('z(s) falls strictly as sensitivity rises', () => {
    for (let s = 1; s <= 100; s++) expect(marginMultiplier(s)).toBeLessThan(marginMultiplier(s - 1));
    expect(marginMultiplier(100)).toBe(2.5);
    expect(marginMultiplier(99)).toBeCloseTo(3, 10);
  });

  it('severity = 1 − margin/|deviation| outside the band, 0 inside', () => {
    expect(severityOf(1, 2)).toBe(0);
    expect(severityOf(-4, 2)).toBe(0.5);
    expect(severityOf(20, 2)).toBeCloseTo(0.9, 12);
  });
});

describe('detectEntireSeries: transient level excursions', () => {
  const flagged = (result: EntireResult): number[] => indicesWhere(result.isAnomaly);
  const within = (indices: readonly number[], from: number, to: number): number[] => indices.filter((i) => i >= from && i < to);
  const OFF = { ...DEFAULTS, components: { excursion: false } };

  it('reports an hour at 0 and a pinned reading, which the trend alone takes for level, at their first point', () => {
    // 5,000 points of noise around 50 (sd 1); 60 points at 0 from 3,000, or at 100 from 3,000.
    for (const level of [0, 100]) {
      const values = noiseSeries(5000, 61, 50, 1).map((v, i) => (i >= 3000 && i < 3060 ? level : v));
      const result = detectEntireSeries(plainInput(values), DEFAULTS);
      expectConsistent(result, values);
      expect(within(flagged(result), 2990, 3070)).toEqual([3000]);
      // Every point of it is outside the band, with the event rules off.
      const band = detectEntireSeries(plainInput(values), BAND);
      expect(within(flagged(band), 2990, 3070)).toEqual(Array.from({ length: 60 }, (_, k) => 3000 + k));
      // Expected there: the level around the excursion, not the excursion's own.
      for (let i = 3000; i < 3060; i++) expect(Math.abs(result.expectedValues[i]! - 50)).toBeLessThan(1);
      expect(result.isNegativeAnomaly[3000]).toBe(level === 0);
      // The trend alone follows the excursion from its first point: nothing reported in it.
      expect(within(flagged(detectEntireSeries(plainInput(values), OFF)), 3000, 3060)).toEqual([]);
      // Elsewhere the same verdicts.
      const elsewhere = (r: EntireResult): number[] => flagged(r).filter((i) => i < 3000 || i >= 3060);
      expect(elsewhere(result)).toEqual(elsewhere(detectEntireSeries(plainInput(values), OFF)));
    }
    // A reading halfway between the levels at each edge (a partly covered interval) makes the
    // trend step twice at both ends: still one excursion.
    const ramped = noiseSeries(5000, 61, 50, 1).map((v, i) => (i === 2999 || i === 3060 ? 25 : i >= 3000 && i < 3060 ? 0 : v));
    expect(within(flagged(detectEntireSeries(plainInput(ramped), BAND)), 3000, 3060)).toHaveLength(60);
    // The event begins at the first edge reading, outside the band too.
    expect(within(flagged(detectEntireSeries(plainInput(ramped), DEFAULTS)), 2990, 3070)).toEqual([2999]);
  });

  it('leaves alone a lasting shift, a wandering level, a slow dip and a machine that cycles on and off', () => {
    const random = seededRandom(71);
    const noise = noiseSeries(5000, 72, 0, 1);
    let walk = 0;
    const cases: Record<string, number[]> = {
      // A lasting shift: the new level holds for 2,000 points, more than half the reference window (500).
      shift: noise.map((v, i) => v + (i >= 3000 ? 15 : 5)),
      walk: noise.map(() => (walk += random() - 0.5)),
      // Down by 20 and back over 200 points: no jump of the trend.
      dip: noise.map((v, i) => v + 50 - (i >= 3000 && i < 3200 ? 20 * Math.sin((Math.PI * (i - 3000)) / 200) : 0)),
    };
    // On for 20 to 80 points, off for 100 to 400, irregularly: no period, level changes again and again.
    let on = false;
    let left = 0;
    cases.duty = noise.map((v) => {
      if (left-- <= 0) {
        on = !on;
        left = on ? 20 + Math.floor(random() * 60) : 100 + Math.floor(random() * 300);
      }
      return v + (on ? 50 : 5);
    });
    for (const [name, values] of Object.entries(cases)) {
      expect(detectEntireSeries(plainInput(values), DEFAULTS), name).toEqual(detectEntireSeries(plainInput(values), OFF));
    }
  });

  it('reports an excursion only as the one abrupt change around it, and only while excursions are rare', () => {
    const base = noiseSeries(5000, 73, 50, 1);
    const outages = (spans: readonly (readonly [number, number])[]): number[] =>
      base.map((v, i) => (spans.some(([a, b]) => i >= a && i < b) ? 0 : v));
    // Two outages 1,000 points apart: each is the only change in its reference window (±250).
    const apart = outages([[2000, 2060], [3000, 3060]]);
    expect(within(flagged(detectEntireSeries(plainInput(apart), BAND)), 1990, 3070).length).toBe(120);
    expect(within(flagged(detectEntireSeries(plainInput(apart), DEFAULTS)), 1990, 3070)).toEqual([2000, 3000]);
    // 100 points apart: each has the other in its reference window, so neither is reported.
    const close = outages([[2000, 2060], [2160, 2220]]);
    expect(detectEntireSeries(plainInput(close), DEFAULTS)).toEqual(detectEntireSeries(plainInput(close), OFF));
    // Five outages of 60 points, 700 to 1,100 apart (irregularly: evenly spaced ones would make a
    // period), cover 6 % of the series, over EXCURSION_MAX_SHARE (5 %): none reported.
    const starts = [400, 1300, 2000, 3100, 4000];
    const many = outages(starts.map((a) => [a, a + 60] as const));
    expect(EXCURSION_MAX_SHARE).toBe(0.05);
    expect(detectEntireSeries(plainInput(many), DEFAULTS)).toEqual(detectEntireSeries(plainInput(many), OFF));
    // Four of them (4.8 %): all reported.
    const four = outages(starts.slice(0, 4).map((a) => [a, a + 60] as const));
    expect(flagged(detectEntireSeries(plainInput(four), BAND)).filter((i) => four[i] === 0).length).toBe(240);
    expect(flagged(detectEntireSeries(plainInput(four), DEFAULTS)).filter((i) => four[i] === 0)).toEqual(starts.slice(0, 4));
  });
});

describe('detectEntireSeries: events', () => {
  it('reports a run of points outside the band once, at its first point, with its worst severity', () => {
    const values = noiseSeries(2000, 81, 50, 1);
    for (let i = 1000; i < 1005; i++) values[i] = 70 + 5 * (i - 1000); // rising to 90
    const band = detectEntireSeries(plainInput(values), BAND);
    expect(indicesWhere(band.isAnomaly)).toEqual([1000, 1001, 1002, 1003, 1004]);
    const result = detectEntireSeries(plainInput(values), DEFAULTS);
    expectConsistent(result, values);
    expect(indicesWhere(result.isAnomaly)).toEqual([1000]);
    expect(result.severity[1000]).toBeCloseTo(band.severity[1004]!, 12);
    // The points after it are the same event: inside their (widened) band, not reported again.
    for (let i = 1001; i < 1005; i++) expect(result.upperMargins[i]).toBeCloseTo(1.01 * Math.abs(values[i]! - result.expectedValues[i]!), 9);
    expect(result.upperMargins[999]).toBe(band.upperMargins[999]);
  });

  it('joins flags at most EVENT_GAP_SHARE of the request apart into one event', () => {
    expect(EVENT_GAP_SHARE).toBe(0.005);
    // 4,000 points: 20 points within the band may separate two flags of one event.
    const values = noiseSeries(4000, 82, 50, 1);
    values[1000] = 80;
    values[1021] = 80; // 20 points within the band between: one event
    values[2000] = 80;
    values[2022] = 80; // 21 between: two
    expect(indicesWhere(detectEntireSeries(plainInput(values), BAND).isAnomaly)).toEqual([1000, 1021, 2000, 2022]);
    expect(indicesWhere(detectEntireSeries(plainInput(values), DEFAULTS).isAnomaly)).toEqual([1000, 2000, 2022]);
    // In a request of 400 points the same spacing makes separate events.
    const short = noiseSeries(400, 85, 50, 1);
    short[100] = 80;
    short[121] = 80;
    expect(indicesWhere(detectEntireSeries(plainInput(short), DEFAULTS).isAnomaly)).toEqual([100, 121]);
  });

  it('reports only the largest events of a series that bursts again and again, each once', () => {
    expect(ROUTINE_EVENT_COUNT).toBe(12);
    // Noise around 50 with a spike of 70 to 72 every 150 to 250 points (irregularly: no period),
    // as a CPU that bursts every few hours, and one spike to 120.
    const random = seededRandom(83);
    const values = noiseSeries(6000, 84, 50, 1);
    const bursts: number[] = [];
    for (let i = 100; i < 5900; i += 150 + Math.floor(random() * 100)) {
      values[i] = 70 + 2 * random();
      bursts.push(i);
    }
    expect(bursts.length).toBeGreaterThan(ROUTINE_EVENT_COUNT + 1);
    const band = detectEntireSeries(plainInput(values), { ...BAND, period: 0 });
    expect(indicesWhere(band.isAnomaly)).toEqual(bursts);
    // An event that ROUTINE_EVENT_COUNT others reach is routine: the largest ROUTINE_EVENT_COUNT remain.
    // Largest in margins, as the band without the event rules has them.
    const largest = (indices: readonly number[], k: number): number[] => {
      const r = detectEntireSeries(plainInput(values), { ...BAND, period: 0 });
      const excess = (i: number): number => Math.abs(values[i]! - r.expectedValues[i]!) / r.upperMargins[i]!;
      return [...indices].sort((x, y) => excess(y) - excess(x)).slice(0, k).sort((x, y) => x - y);
    };
    const result = detectEntireSeries(plainInput(values), { ...DEFAULTS, period: 0 });
    expectConsistent(result, values);
    expect(indicesWhere(result.isAnomaly)).toEqual(largest(bursts, ROUTINE_EVENT_COUNT));
    // A spike far above the bursts is reported, and the smallest of those ten is not any more.
    values[3050] = 120;
    expect(indicesWhere(detectEntireSeries(plainInput(values), { ...DEFAULTS, period: 0 }).isAnomaly)).toEqual(
      largest([...bursts, 3050], ROUTINE_EVENT_COUNT),
    );
    // The routine rule alone off: every burst reported, each once.
    const noRoutine = detectEntireSeries(plainInput(values), { ...DEFAULTS, period: 0, components: { routineEvent: false } });
    expect(indicesWhere(noRoutine.isAnomaly)).toEqual([...bursts, 3050].sort((a, b) => a - b));
  });

  it('counts the events that reach a peak, the event itself aside (reportEvents)', () => {
    // Five one-point events with peaks 2, 3, 4, 5, 6 margins (margin 1, expected 0).
    const values = [0, 2, 0, 0, 3, 0, 0, 4, 0, 0, 5, 0, 0, 6, 0];
    const judgeOf = (series: readonly number[]) => ({
      upperMargins: series.map(() => 1),
      lowerMargins: series.map(() => 1),
      isAnomaly: series.map((v) => v > 1),
      isPositiveAnomaly: series.map((v) => v > 1),
      isNegativeAnomaly: series.map(() => false),
      severity: series.map((v) => (v > 1 ? 1 - 1 / v : 0)),
    });
    const judge = () => judgeOf(values);
    const expected = values.map(() => 0);
    const flaggedWith = (routineCount: number): number[] => {
      const verdicts = judge();
      reportEvents(values, expected, verdicts, { routineCount, gapPoints: 0, report: 'onset' });
      return indicesWhere(verdicts.isAnomaly);
    };
    // Routine when at least `routineCount` other events reach its peak.
    expect(flaggedWith(1)).toEqual([13]);
    expect(flaggedWith(2)).toEqual([10, 13]);
    expect(flaggedWith(4)).toEqual([4, 7, 10, 13]);
    expect(flaggedWith(Number.POSITIVE_INFINITY)).toEqual([1, 4, 7, 10, 13]);
    // Events two points apart are one with a gap of 2: its peak is 6, reported at its first point.
    const verdicts = judge();
    reportEvents(values, expected, verdicts, { routineCount: 1, gapPoints: 2, report: 'onset' });
    expect(indicesWhere(verdicts.isAnomaly)).toEqual([1]);
    expect(verdicts.severity[1]).toBeCloseTo(1 - 1 / 6, 12);
    // With 'peak', an event still under way at the end (a flag on the last point, 14, would join
    // it) keeps its first point.
    const underWay = judge();
    reportEvents(values, expected, underWay, { routineCount: Number.POSITIVE_INFINITY, gapPoints: 2, report: 'peak' });
    expect(indicesWhere(underWay.isAnomaly)).toEqual([1]);
    expect(underWay.severity[1]).toBeCloseTo(1 - 1 / 6, 12);
    // Ended (a flag on the last point would be 4 points after it, beyond the gap): at its peak,
    // point 13, with its own margins; the onset's band is widened past its value.
    const ended = [...values, 0, 0, 0];
    const atPeak = judgeOf(ended);
    reportEvents(ended, ended.map(() => 0), atPeak, { routineCount: Number.POSITIVE_INFINITY, gapPoints: 2, report: 'peak' });
    expect(indicesWhere(atPeak.isAnomaly)).toEqual([13]);
    expect(atPeak.severity[13]).toBeCloseTo(1 - 1 / 6, 12);
    expect(atPeak.upperMargins[13]).toBe(1);
    expect(atPeak.severity[1]).toBe(0);
    expect(atPeak.upperMargins[1]).toBeCloseTo(2.02, 12);
    // One point shorter, a flag on the last point would join it: under way, at its first point.
    const shorter = ended.slice(0, -1);
    const stillUnderWay = judgeOf(shorter);
    reportEvents(shorter, shorter.map(() => 0), stillUnderWay, { routineCount: Number.POSITIVE_INFINITY, gapPoints: 2, report: 'peak' });
    expect(indicesWhere(stillUnderWay.isAnomaly)).toEqual([1]);
    // Every point of a reported event stays flagged with `every`.
    const every = judge();
    reportEvents(values, expected, every, { routineCount: Number.POSITIVE_INFINITY, gapPoints: 2, report: 'every' });
    expect(indicesWhere(every.isAnomaly)).toEqual([1, 4, 7, 10, 13]);
  });
});
