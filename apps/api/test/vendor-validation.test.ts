// The vendor routes' own validator, rule by rule in the vendor's order (BEHAVIOUR.md §5.2), through
// `inject` with a recording engine so the tests also see what reaches the engine.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { SeriesError } from '@adp/detection';
import { buildVendorTestApp, dailySeries, post, recordingEngine, type EngineCall } from './fixtures/vendor/harness.js';

const ENTIRE = '/anomalydetector/v1.1/timeseries/entire/detect';
const LAST = '/anomalydetector/v1.1/timeseries/last/detect';
const CHANGEPOINT = '/anomalydetector/v1.1/timeseries/changepoint/detect';
const ENTIRE_V10 = '/anomalydetector/v1.0/timeseries/entire/detect';

const engine = recordingEngine();
let app: FastifyInstance;

beforeAll(async () => {
  ({ app } = await buildVendorTestApp({ engine }));
});
afterAll(async () => {
  await app.close();
});
beforeEach(() => {
  engine.calls.length = 0;
});

function body(overrides: Record<string, unknown> = {}, points = 24): Record<string, unknown> {
  return { series: dailySeries(points), granularity: 'daily', ...overrides };
}

async function expectError(path: string, payload: unknown, code: string, message: string | RegExp): Promise<void> {
  const res = await post(app, path, payload);
  expect(res.statusCode).toBe(400);
  expect(res.headers['content-type']).toMatch(/^application\/json/);
  expect(res.headers['x-ms-error-code']).toBe(code);
  const json = res.json() as { code: string; message: string };
  expect(Object.keys(json).sort()).toEqual(['code', 'message']);
  expect(json.code).toBe(code);
  if (typeof message === 'string') expect(json.message).toBe(message);
  else expect(json.message).toMatch(message);
  expect(engine.calls).toHaveLength(0);
}

async function expectAccepted(path: string, payload: unknown): Promise<EngineCall> {
  const res = await post(app, path, payload);
  expect(res.statusCode, res.body).toBe(200);
  expect(engine.calls).toHaveLength(1);
  return engine.calls[0]!;
}

describe('rule 1: the body is a JSON object', () => {
  it.each([
    ['null', 'Invalid Json Format, input data is Empty.'],
    ['[]', 'Invalid Json Format, the request body must be a JSON object.'],
    ['"series"', 'Invalid Json Format, the request body must be a JSON object.'],
    ['42', 'Invalid Json Format, the request body must be a JSON object.'],
  ])('body %s -> BadArgument', async (raw, message) => {
    await expectError(ENTIRE, raw, 'BadArgument', message);
  });
});

describe('rule 2: required fields', () => {
  it('series missing -> BadArgument', async () => {
    await expectError(ENTIRE, { granularity: 'daily' }, 'BadArgument', "The 'series' field is required in request.");
  });

  it('entire, last and changepoint default granularity to none', async () => {
    for (const path of [ENTIRE, LAST, CHANGEPOINT]) {
      engine.calls.length = 0;
      const call = await expectAccepted(path, { series: dailySeries(24).map(({ value }) => ({ value })) });
      expect(call.input.granularity).toBe('none');
      expect(call.input.timestampsMs).toBeNull();
    }
    engine.calls.length = 0;
    const withNull = await expectAccepted(CHANGEPOINT, { series: dailySeries(24).map(({ value }) => ({ value })), granularity: null });
    expect(withNull.input.granularity).toBe('none');
  });
});

describe('rule 3: granularity', () => {
  it.each([['fortnightly'], [5], [true], ['']])('granularity %j -> InvalidGranularity', async (granularity) => {
    await expectError(
      ENTIRE,
      body({ granularity }),
      'InvalidGranularity',
      "The 'granularity' field can only be one of the following: ['yearly', 'monthly', 'weekly', 'daily', 'hourly', 'minutely', 'secondly', 'microsecond', 'none'].",
    );
  });

  it('matches values case-insensitively', async () => {
    const call = await expectAccepted(ENTIRE, body({ granularity: 'Daily' }));
    expect(call.input.granularity).toBe('daily');
  });
});

describe('rule 4: customInterval', () => {
  it.each([[0], [-1], [1.5], ['5'], [true]])('customInterval %j -> InvalidCustomInterval', async (customInterval) => {
    await expectError(ENTIRE, body({ customInterval }), 'InvalidCustomInterval', "The 'customInterval' field must be an integer > 0.");
  });
});

describe('rule 5: period', () => {
  it.each([[-1], [2.5], ['12'], [false]])('period %j -> InvalidPeriod', async (period) => {
    await expectError(ENTIRE, body({ period }), 'InvalidPeriod', "The 'period' field must be an integer >= 0.");
  });

  it('null, absent or 0 period means auto-detect, on every operation', async () => {
    for (const path of [ENTIRE, LAST, CHANGEPOINT]) {
      for (const extra of [{ period: null }, {}, { period: 0 }]) {
        engine.calls.length = 0;
        expect((await expectAccepted(path, body(extra))).options.period).toBeUndefined();
      }
    }
    engine.calls.length = 0;
    expect((await expectAccepted(ENTIRE, body({ period: 7 }))).options.period).toBe(7);
  });
});

describe('rule 6: maxAnomalyRatio', () => {
  it.each([[0], [0.5], [-0.1], [0.75], ['0.2']])('maxAnomalyRatio %j -> InvalidModelArgument', async (maxAnomalyRatio) => {
    await expectError(
      ENTIRE,
      body({ maxAnomalyRatio }),
      'InvalidModelArgument',
      "The 'maxAnomalyRatio' field must be less than 50% of the series points (0 < maxAnomalyRatio < 0.5).",
    );
  });

  it('accepts values just inside the bounds', async () => {
    expect((await expectAccepted(LAST, body({ maxAnomalyRatio: 0.49 }))).options).toMatchObject({ maxAnomalyRatio: 0.49 });
  });
});

describe('rule 7: sensitivity', () => {
  it.each([[-1], [100], [50.5], ['95'], [null as unknown as number]])('sensitivity %j', async (sensitivity) => {
    if (sensitivity === null) {
      // null is "not given": the default applies.
      expect((await expectAccepted(ENTIRE, body({ sensitivity }))).options).toMatchObject({ sensitivity: 95 });
      return;
    }
    await expectError(
      ENTIRE,
      body({ sensitivity }),
      'InvalidModelArgument',
      "The 'sensitivity' field must be an integer between 0 and 99.",
    );
  });

  it('accepts 0 and 99', async () => {
    expect((await expectAccepted(ENTIRE, body({ sensitivity: 0 }))).options).toMatchObject({ sensitivity: 0 });
    engine.calls.length = 0;
    expect((await expectAccepted(ENTIRE, body({ sensitivity: 99 }))).options).toMatchObject({ sensitivity: 99 });
  });
});

describe('rule 8: change-point threshold and stableTrendWindow', () => {
  it.each([[0], [1], [0.005], [0.995], ['0.5']])('threshold %j -> InvalidModelArgument', async (threshold) => {
    await expectError(
      CHANGEPOINT,
      body({ threshold }),
      'InvalidModelArgument',
      "The 'threshold' field must be a float between 0.01 and 0.99.",
    );
  });

  it.each([[2], [3.5], ['10'], [12], [50]])('stableTrendWindow %j with 24 points -> InvalidModelArgument', async (stableTrendWindow) => {
    await expectError(
      CHANGEPOINT,
      body({ stableTrendWindow }),
      'InvalidModelArgument',
      "The 'stableTrendWindow' field must be an integer >= 3 and < half of series' length.",
    );
  });

  it('passes valid values to the engine', async () => {
    const call = await expectAccepted(CHANGEPOINT, body({ stableTrendWindow: 11, threshold: 0.01, period: 7 }));
    expect(call.method).toBe('changepoint');
    expect(call.options).toEqual({ period: 7, stableTrendWindow: 11, threshold: 0.01 });
  });

  it('leaves both to the engine when absent', async () => {
    const call = await expectAccepted(CHANGEPOINT, body());
    expect(call.options).toEqual({ period: undefined, stableTrendWindow: undefined, threshold: undefined });
  });

  it('ignores the detect-only fields on changepoint', async () => {
    const call = await expectAccepted(CHANGEPOINT, body({ sensitivity: 500, maxAnomalyRatio: 3, imputeMode: 'bogus' }));
    expect(call.input.imputeMode).toBe('auto');
  });
});

describe('rule 9: imputeMode and imputeFixedValue', () => {
  it('unknown imputeMode -> InvalidImputeMode', async () => {
    await expectError(
      ENTIRE,
      body({ imputeMode: 'mean' }),
      'InvalidImputeMode',
      "The 'imputeMode' field is required and should be one of the following: ['auto', 'previous', 'linear', 'fixed', 'zero', 'notFill'].",
    );
  });

  it.each([[undefined], ['800'], [null], [1e101]])('fixed with imputeFixedValue %j -> InvalidImputeFixedValue', async (imputeFixedValue) => {
    await expectError(
      LAST,
      body({ imputeMode: 'fixed', imputeFixedValue }),
      'InvalidImputeFixedValue',
      "The 'imputeFixedValue' field must be a number (|value| <= 1e100) when 'imputeMode' is 'fixed'.",
    );
  });

  it('passes the mode (matched case-insensitively) and the fixed value to the engine', async () => {
    const fixed = await expectAccepted(LAST, body({ imputeMode: 'fixed', imputeFixedValue: 800 }));
    expect(fixed.input).toMatchObject({ imputeMode: 'fixed', imputeFixedValue: 800 });
    engine.calls.length = 0;
    const notFill = await expectAccepted(ENTIRE, body({ imputeMode: 'notfill', imputeFixedValue: 3 }));
    expect(notFill.input.imputeMode).toBe('notFill');
    expect(notFill.input.imputeFixedValue).toBeUndefined();
  });
});

describe('rule 9b: pastRange (last only, not in the vendor API)', () => {
  const message = "The 'pastRange' field must be an object with numbers 'min' <= 'max' (|value| <= 1e100).";
  it.each([[5], ['10..20'], [[1, 2]], [{ min: 1 }], [{ max: 1 }], [{ min: '1', max: 2 }], [{ min: 3, max: 2 }], [{ min: -1e101, max: 0 }], [{ min: 0, max: 1e101 }]])(
    'pastRange %j -> InvalidModelArgument',
    async (pastRange) => {
      await expectError(LAST, body({ pastRange }), 'InvalidModelArgument', message);
    },
  );

  it("spells the names the v1.0 way there, and comes after imputeMode, before the series' checks", async () => {
    await expectError(
      '/anomalydetector/v1.0/timeseries/last/detect',
      body({ pastRange: { min: 2, max: 1 } }),
      'InvalidModelArgument',
      "The 'PastRange' field must be an object with numbers 'Min' <= 'Max' (|value| <= 1e100).",
    );
    await expectError(LAST, body({ pastRange: 7, imputeMode: 'mean' }), 'InvalidImputeMode', /imputeMode/);
    await expectError(LAST, { series: [], pastRange: 7 }, 'InvalidModelArgument', message);
  });

  it('passes the range to the engine (keys matched case-insensitively; null = absent), and only for last', async () => {
    const given = await expectAccepted(LAST, body({ PastRange: { MIN: -3.5, max: 120 } }));
    expect(given.options).toEqual({ period: undefined, sensitivity: 95, maxAnomalyRatio: 0.25, pastRange: { min: -3.5, max: 120 } });
    engine.calls.length = 0;
    const equal = await expectAccepted(LAST, body({ pastRange: { min: 7, max: 7 } }));
    expect(equal.options).toHaveProperty('pastRange', { min: 7, max: 7 });
    engine.calls.length = 0;
    const absent = await expectAccepted(LAST, body({ pastRange: null }));
    expect(absent.options).not.toHaveProperty('pastRange');
    engine.calls.length = 0;
    const entire = await expectAccepted(ENTIRE, body({ pastRange: 7 }));
    expect(entire.options).not.toHaveProperty('pastRange');
  });
});

describe('rule 10: series shape', () => {
  it('series null -> BadArgument', async () => {
    await expectError(ENTIRE, { series: null }, 'BadArgument', "The 'series' field cannot be empty.");
  });

  it.each([[{}], ['points'], [12]])('series %j -> BadArgument', async (series) => {
    await expectError(ENTIRE, { series }, 'BadArgument', "The 'series' field must be array/list type.");
  });
});

describe('rule 11: series length', () => {
  it('11 points -> InvalidSeries', async () => {
    await expectError(ENTIRE, body({}, 11), 'InvalidSeries', 'Series must contain at least 12 points');
    await expectError(LAST, { series: [] }, 'InvalidSeries', 'Series must contain at least 12 points');
  });

  it('8641 points -> InvalidSeries', async () => {
    await expectError(ENTIRE, body({}, 8641), 'InvalidSeries', 'Series exceeds maximum length');
  });

  it('accepts 12 and 8640 points', async () => {
    expect((await expectAccepted(ENTIRE, body({}, 12))).input.values).toHaveLength(12);
    engine.calls.length = 0;
    expect((await expectAccepted(ENTIRE, body({}, 8640))).input.values).toHaveLength(8640);
  });
});

describe('rule 12: each point', () => {
  it('a point that is not an object -> BadArgument naming the index', async () => {
    const series: unknown[] = dailySeries(24);
    series[4] = 17;
    await expectError(ENTIRE, { series }, 'BadArgument', "The 'series' item at index 4 must be an object with a 'value' field, got 17.");
  });

  it('missing timestamp with a granularity -> BadArgument', async () => {
    const series: Record<string, unknown>[] = dailySeries(24);
    delete series[3]!['timestamp'];
    await expectError(ENTIRE, body({ series }), 'BadArgument', "The 'timestamp' at index 3 is required when 'granularity' is not 'none'.");
  });

  it.each([['yesterday', 'the string "yesterday"'], [1704067200000, '1704067200000'], ['2024-13-01T00:00:00Z', 'the string "2024-13-01T00:00:00Z"']])(
    'unparsable timestamp %j -> BadArgument',
    async (timestamp, shown) => {
      const series: Record<string, unknown>[] = dailySeries(24);
      series[2]!['timestamp'] = timestamp;
      await expectError(
        ENTIRE,
        body({ series }),
        'BadArgument',
        `The 'timestamp' at index 2 must be an ISO 8601 date-time string, got ${shown}.`,
      );
    },
  );

  it('missing value -> BadArgument', async () => {
    const series: Record<string, unknown>[] = dailySeries(24);
    delete series[7]!['value'];
    await expectError(ENTIRE, body({ series }), 'BadArgument', "The 'value' at index 7 is required.");
  });

  it.each([
    ['NaN', 'the string "NaN"'],
    ['Infinity', 'the string "Infinity"'],
    ['abc', 'the string "abc"'],
    ['12.5', 'the string "12.5"'],
    [null, 'null'],
    [true, 'the boolean true'],
    [[1], 'an array'],
    [{ v: 1 }, 'an object'],
  ])('value %j -> BadArgument naming the index', async (value, shown) => {
    const series: Record<string, unknown>[] = dailySeries(24);
    series[5]!['value'] = value;
    await expectError(ENTIRE, body({ series }), 'BadArgument', `The 'value' at index 5 must be a number, got ${shown}.`);
  });
});

describe('rule 13: value magnitude', () => {
  it('|value| > 1e100 -> InvalidSeries', async () => {
    const series = dailySeries(24);
    series[6]!.value = -1e101;
    await expectError(
      ENTIRE,
      body({ series }),
      'InvalidSeries',
      "The magnitude of the 'value' at index 6 is too large (|value| must be <= 1e100).",
    );
  });

  it('a literal that overflows to Infinity in JSON.parse -> InvalidSeries', async () => {
    const raw = JSON.stringify(body()).replace(/"value":[0-9.]+/, '"value":1e400');
    await expectError(ENTIRE, raw, 'InvalidSeries', "The magnitude of the 'value' at index 0 is too large (|value| must be <= 1e100).");
  });

  it('accepts exactly 1e100', async () => {
    const series = dailySeries(24);
    series[6]!.value = 1e100;
    expect((await expectAccepted(ENTIRE, body({ series }))).input.values[6]).toBe(1e100);
  });
});

describe('the engine\'s SeriesError', () => {
  it('becomes a 400 with its code and message', async () => {
    const { app: failing } = await buildVendorTestApp({
      engine: {
        ...recordingEngine(),
        detectEntireSeries: () => {
          throw new SeriesError('InvalidSeries', 'Series timestamps must be sorted');
        },
        detectLastPoint: () => {
          throw new SeriesError('InvalidModelArgument', "The 'series' field must have more than 2 periods points");
        },
      },
    });
    try {
      const entire = await post(failing, ENTIRE, body());
      expect(entire.statusCode).toBe(400);
      expect(entire.headers['x-ms-error-code']).toBe('InvalidSeries');
      expect(entire.json()).toEqual({ code: 'InvalidSeries', message: 'Series timestamps must be sorted' });
      const last = await post(failing, LAST, body());
      expect(last.statusCode).toBe(400);
      expect(last.json()).toEqual({ code: 'InvalidModelArgument', message: "The 'series' field must have more than 2 periods points" });
    } finally {
      await failing.close();
    }
  });
});

describe('first failure wins', () => {
  it('series missing beats a bad granularity', async () => {
    await expectError(ENTIRE, { granularity: 'fortnightly' }, 'BadArgument', "The 'series' field is required in request.");
  });

  it('granularity beats customInterval, period and a short series', async () => {
    await expectError(ENTIRE, body({ granularity: 'x', customInterval: 0, period: -1 }, 3), 'InvalidGranularity', /granularity/);
  });

  it('customInterval beats period', async () => {
    await expectError(ENTIRE, body({ customInterval: 0, period: -1 }), 'InvalidCustomInterval', /customInterval/);
  });

  it('period beats maxAnomalyRatio and sensitivity', async () => {
    await expectError(ENTIRE, body({ period: -1, maxAnomalyRatio: 2, sensitivity: 200 }), 'InvalidPeriod', /period/);
  });

  it('maxAnomalyRatio beats sensitivity', async () => {
    await expectError(ENTIRE, body({ maxAnomalyRatio: 2, sensitivity: 200 }), 'InvalidModelArgument', /maxAnomalyRatio/);
  });

  it('sensitivity beats imputeMode', async () => {
    await expectError(ENTIRE, body({ sensitivity: 200, imputeMode: 'mean' }), 'InvalidModelArgument', /sensitivity/);
  });

  it('threshold beats stableTrendWindow', async () => {
    await expectError(CHANGEPOINT, body({ threshold: 2, stableTrendWindow: 1 }), 'InvalidModelArgument', /threshold/);
  });

  it('imputeMode beats a series that is not an array', async () => {
    await expectError(ENTIRE, { series: 'x', imputeMode: 'mean' }, 'InvalidImputeMode', /imputeMode/);
  });

  it('a short series beats bad points', async () => {
    await expectError(ENTIRE, { series: [{ value: 'abc' }] }, 'InvalidSeries', 'Series must contain at least 12 points');
  });

  it('a short series beats a stableTrendWindow that only fails against the length', async () => {
    await expectError(CHANGEPOINT, body({ stableTrendWindow: 3 }, 5), 'InvalidSeries', 'Series must contain at least 12 points');
  });

  it('points are checked in order: the earlier bad point wins', async () => {
    const series: Record<string, unknown>[] = dailySeries(24);
    delete series[9]!['timestamp'];
    series[4]!['value'] = 'abc';
    await expectError(ENTIRE, body({ series }), 'BadArgument', /'value' at index 4/);
  });

  it('a malformed point anywhere beats a too-large value earlier', async () => {
    const series: Record<string, unknown>[] = dailySeries(24);
    series[2]!['value'] = 1e200;
    series[20]!['value'] = 'abc';
    await expectError(ENTIRE, body({ series }), 'BadArgument', /'value' at index 20/);
  });
});

describe('what reaches the engine', () => {
  it('applies the defaults', async () => {
    const call = await expectAccepted(ENTIRE, { series: dailySeries(24) });
    expect(call.method).toBe('entire');
    expect(call.input).toMatchObject({ granularity: 'none', customInterval: 1, imputeMode: 'auto' });
    expect(call.input.imputeFixedValue).toBeUndefined();
    expect(call.options).toEqual({ period: undefined, sensitivity: 95, maxAnomalyRatio: 0.25 });
  });

  it('honours every detect field', async () => {
    const series = dailySeries(24, Date.UTC(2024, 0, 1)).map((point, i) => ({
      ...point,
      timestamp: new Date(Date.UTC(2024, 0, 1) + i * 2 * 3_600_000).toISOString(),
    }));
    const call = await expectAccepted(LAST, {
      series,
      granularity: 'hourly',
      customInterval: 2,
      period: 12,
      maxAnomalyRatio: 0.1,
      sensitivity: 80,
      imputeMode: 'linear',
    });
    expect(call.method).toBe('last');
    expect(call.input).toMatchObject({ granularity: 'hourly', customInterval: 2, imputeMode: 'linear' });
    expect(call.input.timestampsMs).toEqual(series.map((p) => Date.parse(p.timestamp)));
    expect(call.input.values).toEqual(series.map((p) => p.value));
    expect(call.options).toEqual({ period: 12, sensitivity: 80, maxAnomalyRatio: 0.1 });
  });

  it('granularity none: timestamps reach the engine only when every point has a parsable one', async () => {
    const all = await expectAccepted(ENTIRE, { series: dailySeries(24) });
    expect(all.input.timestampsMs).toHaveLength(24);
    engine.calls.length = 0;
    const series: Record<string, unknown>[] = dailySeries(24);
    series[10]!['timestamp'] = 'not a date';
    const some = await expectAccepted(ENTIRE, { series });
    expect(some.input.timestampsMs).toBeNull();
  });

  it('reads keys case-insensitively (PascalCase, as the v1 service did)', async () => {
    const series = dailySeries(24);
    const call = await expectAccepted(ENTIRE_V10, {
      Series: series.map((p) => ({ Timestamp: p.timestamp, Value: p.value })),
      Granularity: 'daily',
      CustomInterval: 1,
      Period: 7,
      MaxAnomalyRatio: 0.2,
      Sensitivity: 90,
      IMPUTEMODE: 'previous',
    });
    expect(call.input).toMatchObject({ granularity: 'daily', customInterval: 1, imputeMode: 'previous' });
    expect(call.input.values).toEqual(series.map((p) => p.value));
    expect(call.input.timestampsMs).toEqual(series.map((p) => Date.parse(p.timestamp)));
    expect(call.options).toEqual({ period: 7, sensitivity: 90, maxAnomalyRatio: 0.2 });
  });

  it('prefers the exact camelCase key when both spellings are sent', async () => {
    const call = await expectAccepted(ENTIRE, body({ period: 7, Period: 3 }));
    expect(call.options.period).toBe(7);
  });

  it('ignores unknown fields', async () => {
    const call = await expectAccepted(ENTIRE, body({ needDetectorId: true, detector: { name: 'x' }, marginScale: 3 }));
    expect(call.input.values).toHaveLength(24);
  });
});

describe('message casing by version', () => {
  it('v1.0 names fields in PascalCase', async () => {
    await expectError(ENTIRE_V10, body({ period: -1 }), 'InvalidPeriod', "The 'Period' field must be an integer >= 0.");
    const series: Record<string, unknown>[] = dailySeries(24);
    series[3]!['value'] = 'abc';
    await expectError(ENTIRE_V10, body({ series }), 'BadArgument', "The 'Value' at index 3 must be a number, got the string \"abc\".");
    await expectError(
      ENTIRE_V10,
      body({ maxAnomalyRatio: 1 }),
      'InvalidModelArgument',
      "The 'MaxAnomalyRatio' field must be less than 50% of the series points (0 < MaxAnomalyRatio < 0.5).",
    );
  });

  it.each(['v1.1', 'v1.1-preview', 'v1.1-preview.1'])('%s names fields in camelCase', async (version) => {
    await expectError(
      `/anomalydetector/${version}/timeseries/entire/detect`,
      body({ period: -1 }),
      'InvalidPeriod',
      "The 'period' field must be an integer >= 0.",
    );
  });
});
