import { describe, expect, it } from 'vitest';
import {
  CHANGEPOINT_RULE_NAMES,
  changePointRulesInForce,
  DETECTION_RULE_NAMES,
  detectChangePointSeries,
  detectEntireSeries,
  detectStream,
  ENTIRE_SERIES_RULES,
  judgeStream,
  LAST_POINT_RULES,
  rulesInForce,
  TUNING,
  withoutRules,
  type DetectionComponents,
  type SeriesInput,
} from '../src/index.js';
import { gaussian } from './helpers.js';

const DEFAULTS = { sensitivity: 95, maxAnomalyRatio: 0.25 } as const;

function input(values: readonly number[]): SeriesInput {
  return { timestampsMs: null, values, granularity: 'none', customInterval: 1, imputeMode: 'auto' };
}

/** A cycle with noise, a spike, a drift past the older range and a stuck stretch: every rule has something to do. */
function eventful(n: number): number[] {
  const draw = gaussian(7);
  const values = Array.from({ length: n }, (_, i) => 100 + 10 * Math.sin((2 * Math.PI * i) / 24) + draw());
  values[300] = 160;
  for (let i = 500; i < 650; i++) values[i] = values[i]! + 0.3 * (i - 500);
  for (let i = 700; i < 720; i++) values[i] = 55;
  return values;
}

describe('the rule lists', () => {
  it('name every switch once, and every rule is in force by default', () => {
    const names = [...DETECTION_RULE_NAMES];
    expect(new Set(names).size).toBe(names.length);
    expect(names).toHaveLength(LAST_POINT_RULES.length + ENTIRE_SERIES_RULES.length);
    expect(Object.values(rulesInForce({})).every(Boolean)).toBe(true);
    expect(Object.keys(rulesInForce({})).sort()).toEqual([...names].sort());
    expect(Object.values(changePointRulesInForce({})).every(Boolean)).toBe(true);
  });

  it('take a rule out by the list or by its switch alike, and a rule with the one it requires', () => {
    for (const name of DETECTION_RULE_NAMES) {
      const byList = rulesInForce({ rules: withoutRules(DETECTION_RULE_NAMES, [name]) });
      const bySwitch = rulesInForce({ components: { [name]: false } as DetectionComponents });
      expect(byList, name).toEqual(bySwitch);
      expect(byList[name], name).toBe(false);
    }
    expect(rulesInForce({ rules: withoutRules(DETECTION_RULE_NAMES, ['refractory']) }).echo).toBe(false);
    expect(rulesInForce({ components: { calibration: false } }).asymmetricBand).toBe(false);
    expect(changePointRulesInForce({ rules: withoutRules(CHANGEPOINT_RULE_NAMES, ['refine']) }).splitTrend).toBe(false);
    expect(rulesInForce({ rules: [] }).stuck).toBe(false);
  });

  it('give detectStream, the incremental judge and the other detectors the same results by list as by switch', () => {
    const values = eventful(900);
    const opts = { ...DEFAULTS, windowPoints: 200 };
    for (const name of ['echo', 'newLevel', 'sustainedError', 'calibration'] as const) {
      const rules = withoutRules(DETECTION_RULE_NAMES, [name]);
      const components = { [name]: false };
      expect(detectStream(input(values), { ...opts, rules }), name).toEqual(detectStream(input(values), { ...opts, components }));
      expect(judgeStream(values, { ...opts, rules }), name).toEqual(judgeStream(values, { ...opts, components }));
    }
    expect(detectEntireSeries(input(values), { ...DEFAULTS, rules: withoutRules(DETECTION_RULE_NAMES, ['shoulder']) })).toEqual(
      detectEntireSeries(input(values), { ...DEFAULTS, components: { shoulder: false } }),
    );
    expect(detectChangePointSeries(input(values), { rules: withoutRules(CHANGEPOINT_RULE_NAMES, ['detrend']) })).toEqual(
      detectChangePointSeries(input(values), { components: { detrend: false } }),
    );
  });

  it('removing a rule changes what it decides: an event under way is reported again without `refractory`', () => {
    const values = eventful(900);
    const opts = { ...DEFAULTS, windowPoints: 200 };
    const flagged = (rules: readonly (typeof DETECTION_RULE_NAMES)[number][]) =>
      judgeStream(values, { ...opts, rules }).flatMap((r, i) => (r.isAnomaly ? [i] : []));
    const all = flagged(DETECTION_RULE_NAMES);
    const without = flagged(withoutRules(DETECTION_RULE_NAMES, ['refractory']));
    expect(without.length).toBeGreaterThan(all.length);
  });
});

describe('the tuning table', () => {
  it('holds a finite value, a note and what it was tuned on for every constant', () => {
    for (const [name, entry] of Object.entries(TUNING)) {
      expect(Number.isFinite(entry.value), name).toBe(true);
      expect(entry.does.length, name).toBeGreaterThan(10);
      expect(entry.tunedOn.length, name).toBeGreaterThan(3);
    }
  });
});
