import * as engine from '@adp/detection';
import type { ChangePointOptions, LastResult, SeriesInput } from '@adp/detection';
import { describe, expect, it } from 'vitest';
import { engineChangePointDetector, engineStreamingDetector, type EngineApi, type StreamOptions } from '../src/engine.js';
import { ENGINE_VARIANTS } from '../src/variants.js';

function notAnomalous(): LastResult {
  return {
    period: 0,
    suggestedWindow: 29,
    expectedValue: 0,
    upperMargin: 1,
    lowerMargin: 1,
    isAnomaly: false,
    isPositiveAnomaly: false,
    isNegativeAnomaly: false,
    severity: 0,
  };
}

/** An engine that records its options and names the real engine's rules. */
function recordingEngine(names: { detection?: readonly string[]; changePoint?: readonly string[] }) {
  const calls: { stream?: StreamOptions; changePoint?: ChangePointOptions } = {};
  const api: EngineApi = {
    suggestedWindow: () => 29,
    detectPeriod: () => 0,
    detectStream(input: SeriesInput, opts: StreamOptions) {
      calls.stream = opts;
      return input.values.map(() => notAnomalous());
    },
    detectChangePointSeries(input, opts) {
      calls.changePoint = opts;
      return { period: 0, isChangePoint: input.values.map(() => false), confidenceScores: input.values.map(() => 0) };
    },
    ...(names.detection === undefined ? {} : { DETECTION_RULE_NAMES: names.detection }),
    ...(names.changePoint === undefined ? {} : { CHANGEPOINT_RULE_NAMES: names.changePoint }),
  };
  return { api, calls };
}

const values = Array.from({ length: 200 }, (_, i) => i % 7);

describe('ablation variants', () => {
  it("call the engine with its own rule list less the variant's rule", () => {
    const { api, calls } = recordingEngine({ detection: engine.DETECTION_RULE_NAMES, changePoint: engine.CHANGEPOINT_RULE_NAMES });
    const noEcho = ENGINE_VARIANTS.find((v) => v.name === 'no-echo')!;
    engineStreamingDetector(api, noEcho).flags(values);
    expect(calls.stream?.rules).toEqual(engine.DETECTION_RULE_NAMES.filter((n) => n !== 'echo'));
    expect(engine.rulesInForce(calls.stream!)).toEqual(engine.rulesInForce({ components: { echo: false } }));
    const noRefine = ENGINE_VARIANTS.find((v) => v.name === 'cp-no-refine')!;
    engineChangePointDetector(api, noRefine).changePoints(values);
    expect(calls.changePoint?.rules).toEqual(engine.CHANGEPOINT_RULE_NAMES.filter((n) => n !== 'refine'));
  });

  it('leave the rules alone for a variant that removes none', () => {
    const { api, calls } = recordingEngine({ detection: engine.DETECTION_RULE_NAMES });
    engineStreamingDetector(api, ENGINE_VARIANTS.find((v) => v.name === 'default')!).flags(values);
    expect(calls.stream).not.toHaveProperty('rules');
  });

  it('name only rules the engine has, and refuse an engine without a rule list', () => {
    const known = new Set<string>([...engine.DETECTION_RULE_NAMES, ...engine.CHANGEPOINT_RULE_NAMES]);
    for (const v of ENGINE_VARIANTS) {
      for (const name of [...(v.removeRules ?? []), ...(v.removeChangePointRules ?? [])]) expect(known.has(name), `${v.name}: ${name}`).toBe(true);
    }
    const { api } = recordingEngine({});
    expect(() => engineStreamingDetector(api, ENGINE_VARIANTS.find((v) => v.name === 'no-echo')!).flags(values)).toThrow(TypeError);
    const { api: other } = recordingEngine({ detection: ['calibration'] });
    expect(() => engineStreamingDetector(other, ENGINE_VARIANTS.find((v) => v.name === 'no-echo')!).flags(values)).toThrow('no rule echo');
  });
});
