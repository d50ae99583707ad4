// The HTTP edge of the vendor routes: paths and versions, content types, bodies, errors raised
// before the handler, the 500 path, usage metering and the exact response keys.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { buildVendorTestApp, dailySeries, post, recordingEngine, TEST_AUTH, type DetectedCall } from './fixtures/vendor/harness.js';

const VERSIONS = ['v1.0', 'v1.1', 'v1.1-preview', 'v1.1-preview.1'] as const;
const ENTIRE = '/anomalydetector/v1.1/timeseries/entire/detect';

const ENTIRE_KEYS = ['expectedValues', 'isAnomaly', 'isNegativeAnomaly', 'isPositiveAnomaly', 'lowerMargins', 'period', 'severity', 'upperMargins'];
const LAST_KEYS = ['expectedValue', 'isAnomaly', 'isNegativeAnomaly', 'isPositiveAnomaly', 'lowerMargin', 'period', 'severity', 'suggestedWindow', 'upperMargin'];
const CHANGEPOINT_KEYS = ['confidenceScores', 'isChangePoint', 'period'];

const engine = recordingEngine();
let app: FastifyInstance;
let detected: DetectedCall[];

beforeAll(async () => {
  ({ app, detected } = await buildVendorTestApp({ engine, bodyLimitBytes: 64 * 1024 }));
});
afterAll(async () => {
  await app.close();
});
beforeEach(() => {
  engine.calls.length = 0;
  detected.length = 0;
});

const validBody = { series: dailySeries(30), granularity: 'daily' };

function expectVendorError(res: LightMyRequestResponse, status: number, code: string): { code: string; message: string } {
  expect(res.statusCode, res.body).toBe(status);
  expect(res.headers['content-type']).toMatch(/^application\/json/);
  expect(res.headers['x-ms-error-code']).toBe(code);
  const json = res.json() as { code: string; message: string };
  expect(Object.keys(json).sort()).toEqual(['code', 'message']);
  expect(json.code).toBe(code);
  expect(json.message.length).toBeGreaterThan(10);
  return json;
}

describe('paths and versions', () => {
  it.each(VERSIONS)('%s serves all three operations with the vendor response keys', async (version) => {
    for (const [operation, keys, label] of [
      ['entire', ENTIRE_KEYS, 'entire/detect'],
      ['last', LAST_KEYS, 'last/detect'],
      ['changepoint', CHANGEPOINT_KEYS, 'changepoint/detect'],
    ] as const) {
      const res = await post(app, `/anomalydetector/${version}/timeseries/${operation}/detect`, validBody);
      expect(res.statusCode, res.body).toBe(200);
      expect(res.headers['content-type']).toMatch(/^application\/json/);
      expect(Object.keys(res.json() as object).sort()).toEqual(keys);
      expect(detected.at(-1)).toEqual({ endpoint: label, points: 30, auth: TEST_AUTH });
    }
    expect(detected).toHaveLength(3);
  });

  it.each(['changePoint', 'ChangePoint', 'CHANGEPOINT'])('matches the operation segment %s case-insensitively', async (segment) => {
    const res = await post(app, `/anomalydetector/v1.0/timeseries/${segment}/detect`, validBody);
    expect(res.statusCode, res.body).toBe(200);
    expect(Object.keys(res.json() as object).sort()).toEqual(CHANGEPOINT_KEYS);
    expect(engine.calls[0]?.method).toBe('changepoint');
    expect(detected).toEqual([{ endpoint: 'changepoint/detect', points: 30, auth: TEST_AUTH }]);
  });

  it.each([
    ['Entire', ENTIRE_KEYS],
    ['LAST', LAST_KEYS],
  ])('other operations in odd casing (%s) answer the same body', async (segment, keys) => {
    const res = await post(app, `/anomalydetector/v1.1/timeseries/${segment}/detect`, validBody);
    expect(res.statusCode, res.body).toBe(200);
    expect(Object.keys(res.json() as object).sort()).toEqual(keys);
  });

  it('odd casing serialises exactly like the canonical route', async () => {
    const canonical = await post(app, '/anomalydetector/v1.1/timeseries/entire/detect', validBody);
    const odd = await post(app, '/anomalydetector/v1.1/timeseries/ENTIRE/detect', validBody);
    expect(odd.body).toBe(canonical.body);
  });

  it.each([
    ['POST', '/anomalydetector/v2.0/timeseries/entire/detect'],
    ['POST', '/anomalydetector/v1.1/timeseries/anomalies/detect'],
    ['POST', '/anomalydetector/V1.1/timeseries/entire/detect'],
    ['POST', '/anomalydetector/v1.1/timeseries/entire'],
    ['POST', '/anomalydetector/v1.1/multivariate/models'],
    ['GET', '/anomalydetector'],
    ['DELETE', '/anomalydetector/'],
  ] as const)('%s %s -> vendor-shaped 404', async (method, url) => {
    const res = await app.inject({ method, url, headers: { 'content-type': 'application/json' }, payload: method === 'GET' ? undefined : JSON.stringify(validBody) });
    const json = expectVendorError(res, 404, 'NotFound');
    expect(json.message).toContain('/timeseries/{entire|last|changepoint}/detect');
    expect(detected).toHaveLength(0);
  });

  it.each([
    ['GET', '/anomalydetector/v1.1/timeseries/entire/detect'],
    ['PUT', '/anomalydetector/v1.1/timeseries/last/detect'],
    ['DELETE', '/anomalydetector/v1.0/timeseries/changePoint/detect'],
  ] as const)('%s %s -> vendor-shaped 405 with Allow: POST', async (method, url) => {
    const res = await app.inject({ method, url, headers: { 'content-type': 'application/json' }, payload: method === 'GET' ? undefined : JSON.stringify(validBody) });
    const json = expectVendorError(res, 405, 'MethodNotAllowed');
    expect(res.headers['allow']).toBe('POST');
    expect(json.message).toBe(`${method} is not allowed on ${url}; it answers POST.`);
    expect(detected).toHaveLength(0);
  });

  it('answers an unknown version 404 before looking at the body', async () => {
    const res = await post(app, '/anomalydetector/v9/timeseries/entire/detect', 'x'.repeat(100_000), { 'content-type': 'text/plain' });
    expectVendorError(res, 404, 'NotFound');
  });
});

describe('content types and bodies', () => {
  it.each(['application/json', 'application/json; charset=utf-8', 'application/json; charset=UTF-8', 'Application/JSON'])(
    'accepts %s',
    async (contentType) => {
      const res = await post(app, ENTIRE, validBody, { 'content-type': contentType });
      expect(res.statusCode, res.body).toBe(200);
    },
  );

  it.each(['text/plain', 'application/x-www-form-urlencoded', 'application/xml', 'application/jsonx', 'multipart/form-data; boundary=x'])(
    'rejects %s with 415',
    async (contentType) => {
      const res = await post(app, ENTIRE, validBody, { 'content-type': contentType });
      const json = expectVendorError(res, 415, 'UnsupportedMediaType');
      expect(json.message).toContain("'application/json'");
    },
  );

  it('rejects a malformed content-type header with 415', async () => {
    const res = await post(app, ENTIRE, validBody, { 'content-type': '/;;' });
    expectVendorError(res, 415, 'UnsupportedMediaType');
  });

  it('rejects a body without a content type with 415', async () => {
    const res = await post(app, ENTIRE, validBody, {});
    expectVendorError(res, 415, 'UnsupportedMediaType');
  });

  it('rejects an empty request without a content type with 415', async () => {
    const res = await app.inject({ method: 'POST', url: ENTIRE });
    expectVendorError(res, 415, 'UnsupportedMediaType');
  });

  it.each(['', '   \n'])('rejects an empty JSON body %j with 400 BadArgument', async (payload) => {
    const res = await post(app, ENTIRE, payload);
    const json = expectVendorError(res, 400, 'BadArgument');
    expect(json.message).toBe('Invalid Json Format, input data is Empty.');
  });

  it.each(['{"series": [', '{series: []}', "{'series': []}", '{"series": [1,]}', 'NaN', '{"a":1}{"b":2}'])(
    'rejects malformed JSON %s with 400 InvalidJsonFormat',
    async (payload) => {
      const res = await post(app, ENTIRE, payload);
      const json = expectVendorError(res, 400, 'InvalidJsonFormat');
      expect(json.message).toMatch(/^Invalid Json Format, the request body is not valid JSON\./);
    },
  );

  it('rejects a body over bodyLimitBytes with 413', async () => {
    const big = { series: dailySeries(2000), granularity: 'daily' };
    expect(JSON.stringify(big).length).toBeGreaterThan(64 * 1024);
    const res = await post(app, ENTIRE, big);
    const json = expectVendorError(res, 413, 'PayloadTooLarge');
    expect(json.message).toBe('The request body exceeds the limit of 65536 bytes.');
  });

  it('rejects a Content-Length that does not match the body with 400', async () => {
    const payload = JSON.stringify(validBody);
    const res = await app.inject({
      method: 'POST',
      url: ENTIRE,
      headers: { 'content-type': 'application/json', 'content-length': String(payload.length + 10) },
      payload,
    });
    expectVendorError(res, 400, 'BadArgument');
  });

  it('tolerates a UTF-8 byte-order mark', async () => {
    const res = await post(app, ENTIRE, `\uFEFF${JSON.stringify(validBody)}`);
    expect(res.statusCode, res.body).toBe(200);
  });

  it('does not let "__proto__" keys change anything', async () => {
    const res = await post(app, ENTIRE, `{"__proto__": {"polluted": true}, "series": ${JSON.stringify(validBody.series)}}`);
    expect(res.statusCode).toBe(200);
    expect(({} as Record<string, unknown>)['polluted']).toBeUndefined();
  });
});

describe('unexpected failures', () => {
  it('an engine crash is a 500 in the vendor shape with a generic message, and no usage is metered', async () => {
    const crashing = await buildVendorTestApp({
      engine: {
        ...recordingEngine(),
        detectEntireSeries: () => {
          throw new TypeError('Cannot read properties of undefined (reading secret_internal_detail)');
        },
      },
    });
    try {
      const res = await post(crashing.app, ENTIRE, validBody);
      const json = expectVendorError(res, 500, 'InternalServerError');
      expect(json.message).not.toContain('secret_internal_detail');
      expect(crashing.detected).toHaveLength(0);
    } finally {
      await crashing.app.close();
    }
  });

  it('an engine result with the wrong array length is a 500, never a short array', async () => {
    const broken = recordingEngine();
    const crashing = await buildVendorTestApp({
      engine: {
        ...broken,
        detectChangePointSeries: (input, options) => {
          const result = broken.detectChangePointSeries(input, options);
          return { ...result, confidenceScores: result.confidenceScores.slice(1) };
        },
      },
    });
    try {
      const res = await post(crashing.app, '/anomalydetector/v1.1/timeseries/changepoint/detect', validBody);
      expectVendorError(res, 500, 'InternalServerError');
    } finally {
      await crashing.app.close();
    }
  });

  it('a non-finite number from the engine is a 500 JSON error, not a broken body', async () => {
    const broken = recordingEngine();
    const crashing = await buildVendorTestApp({
      engine: {
        ...broken,
        detectLastPoint: (input, options) => ({ ...broken.detectLastPoint(input, options), expectedValue: Number.NaN }),
      },
    });
    try {
      const res = await post(crashing.app, '/anomalydetector/v1.1/timeseries/last/detect', validBody);
      expectVendorError(res, 500, 'InternalServerError');
    } finally {
      await crashing.app.close();
    }
  });

  it('errors the app raises on these routes (401 from its auth hook) keep the app\'s own shape', async () => {
    const gated = await buildVendorTestApp({
      engine: recordingEngine(),
      setup: (root) => {
        root.setErrorHandler((error: Error & { statusCode?: number }, _request, reply) =>
          reply.code(error.statusCode ?? 500).send({ error: { code: String(error.statusCode ?? 500), message: error.message } }),
        );
        root.addHook('onRequest', async (request) => {
          if (request.headers['ocp-apim-subscription-key'] === undefined) {
            throw Object.assign(new Error('Access denied due to missing subscription key.'), { statusCode: 401 });
          }
        });
      },
    });
    try {
      const res = await post(gated.app, ENTIRE, validBody);
      expect(res.statusCode).toBe(401);
      expect(res.headers['x-ms-error-code']).toBeUndefined();
      expect(res.json()).toEqual({ error: { code: '401', message: 'Access denied due to missing subscription key.' } });
      const ok = await post(gated.app, ENTIRE, validBody, { 'content-type': 'application/json', 'ocp-apim-subscription-key': 'k' });
      expect(ok.statusCode, ok.body).toBe(200);
    } finally {
      await gated.app.close();
    }
  });

  it('a failing onDetected is a 500 in the vendor shape', async () => {
    const { vendorRoutes } = await import('../src/vendor/plugin.js');
    const { default: Fastify } = await import('fastify');
    const bare = Fastify({ logger: false });
    await bare.register(vendorRoutes, {
      bodyLimitBytes: 1024 * 1024,
      engine: recordingEngine(),
      onDetected: async () => {
        throw new Error('store down');
      },
    });
    try {
      const res = await post(bare, ENTIRE, validBody);
      const json = expectVendorError(res, 500, 'InternalServerError');
      expect(json.message).not.toContain('store down');
    } finally {
      await bare.close();
    }
  });
});

describe('usage metering', () => {
  it('is not called for rejected requests', async () => {
    await post(app, ENTIRE, { series: dailySeries(5) });
    await post(app, ENTIRE, 'nope');
    expect(detected).toHaveLength(0);
  });

  it('counts the points of each request', async () => {
    await post(app, ENTIRE, { series: dailySeries(12) });
    await post(app, '/anomalydetector/v1.1/timeseries/last/detect', { series: dailySeries(500) });
    expect(detected.map(({ endpoint, points }) => [endpoint, points])).toEqual([
      ['entire/detect', 12],
      ['last/detect', 500],
    ]);
  });
});
