// The vendor's own example requests (v1.0 and v1.1 spec folders) through our routes and the real
// engine; every response is validated against the vendor's OpenAPI definitions with ajv.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { VENDOR_ERROR_STATUS, VendorError } from '../src/vendor/errors.js';
import { buildVendorTestApp, post, type DetectedCall } from './fixtures/vendor/harness.js';
import { readVendorJson as readJson, SPEC_FILES, vendorValidators, type SpecVersion } from './fixtures/vendor/spec.js';

interface Example {
  readonly body: { readonly series: readonly unknown[] } & Record<string, unknown>;
  readonly response: Record<string, unknown>;
}

function readExample(version: SpecVersion, name: string): Example {
  const file = readJson(`${version}/examples/${name}.json`) as {
    parameters: { body?: Example['body']; options?: Example['body'] };
    responses: { 200: { body: Record<string, unknown> } };
  };
  const body = file.parameters.body ?? file.parameters.options;
  if (body === undefined) throw new Error(`example ${version}/${name} has no request body`);
  return { body, response: file.responses[200].body };
}

const definitionOf = {
  entire: 'EntireDetectResponse',
  last: 'LastDetectResponse',
  changepoint: 'ChangePointDetectResponse',
} as const;
type Operation = keyof typeof definitionOf;

const CASES: { example: [SpecVersion, string]; operation: Operation; spec: SpecVersion; versions: string[]; segment?: string }[] = [
  { example: ['v1.0', 'LastDetect'], operation: 'last', spec: 'v1.0', versions: ['v1.0'] },
  { example: ['v1.0', 'ChangePointDetect'], operation: 'changepoint', spec: 'v1.0', versions: ['v1.0'] },
  { example: ['v1.0', 'ChangePointDetect'], operation: 'changepoint', spec: 'v1.0', versions: ['v1.0'], segment: 'changePoint' },
  // The v1.0 EntireDetect example is missing upstream; its v1.1 twin uses only v1.0 fields but imputeMode.
  { example: ['v1.1', 'EntireDetect'], operation: 'entire', spec: 'v1.0', versions: ['v1.0'] },
  { example: ['v1.1', 'EntireDetect'], operation: 'entire', spec: 'v1.1', versions: ['v1.1', 'v1.1-preview', 'v1.1-preview.1'] },
  { example: ['v1.1', 'LastDetect'], operation: 'last', spec: 'v1.1', versions: ['v1.1', 'v1.1-preview', 'v1.1-preview.1'] },
  { example: ['v1.1', 'ChangePointDetect'], operation: 'changepoint', spec: 'v1.1', versions: ['v1.1', 'v1.1-preview', 'v1.1-preview.1'] },
];

const validatorFor = vendorValidators();
let app: FastifyInstance;
let detected: DetectedCall[];

beforeAll(async () => {
  ({ app, detected } = await buildVendorTestApp()); // the real engine
});
afterAll(async () => {
  await app.close();
});
beforeEach(() => {
  detected.length = 0;
});

describe('the validator itself', () => {
  it('accepts the vendor example responses and rejects a broken one', () => {
    for (const { example, operation, spec } of CASES) {
      const validate = validatorFor(spec, definitionOf[operation]);
      expect(validate(readExample(...example).response), JSON.stringify(validate.errors)).toBe(true);
    }
    const validate = validatorFor('v1.1', 'EntireDetectResponse');
    expect(validate({ period: 1.5, expectedValues: ['x'] })).toBe(false);
  });

  it('accepts the vendor example requests', () => {
    for (const { example, operation, spec } of CASES) {
      const validate = validatorFor(spec, operation === 'changepoint' ? 'ChangePointDetectRequest' : 'DetectRequest');
      expect(validate(readExample(...example).body), JSON.stringify(validate.errors)).toBe(true);
    }
  });
});

describe.each(CASES)('example $example.1 ($example.0) -> $operation on $versions', ({ example, operation, spec, versions, segment }) => {
  const { body } = readExample(...example);
  const n = body.series.length;

  it.each(versions)('%s answers a response valid against the vendor schema, one element per point', async (version) => {
    const res = await post(app, `/anomalydetector/${version}/timeseries/${segment ?? operation}/detect`, body);
    expect(res.statusCode, res.body).toBe(200);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    const json = res.json() as Record<string, unknown>;
    const validate = validatorFor(spec, definitionOf[operation]);
    expect(validate(json), JSON.stringify(validate.errors)).toBe(true);

    switch (operation) {
      case 'entire':
        for (const key of ['expectedValues', 'upperMargins', 'lowerMargins', 'isAnomaly', 'isNegativeAnomaly', 'isPositiveAnomaly', 'severity']) {
          expect(json[key], key).toHaveLength(n);
        }
        break;
      case 'last':
        expect(Number.isInteger(json['suggestedWindow'])).toBe(true);
        expect(typeof json['severity']).toBe('number');
        break;
      case 'changepoint':
        expect(json['isChangePoint']).toHaveLength(n);
        expect(json['confidenceScores']).toHaveLength(n);
        // The example sends period 0 (auto-detect); its series has no recurrent pattern.
        expect(json['period']).toBe(0);
        for (const score of json['confidenceScores'] as number[]) {
          expect(score).toBeGreaterThanOrEqual(0);
          expect(score).toBeLessThanOrEqual(1);
        }
        break;
    }
    expect(detected).toEqual([{ endpoint: `${operation}/detect`, points: n, auth: expect.anything() }]);
  });
});

describe('error bodies', () => {
  it.each(['v1.0', 'v1.1'] as const)('validate against %s AnomalyDetectorError and carry x-ms-error-code', async (spec) => {
    const { body } = readExample('v1.1', 'EntireDetect');
    const res = await post(app, `/anomalydetector/${spec}/timeseries/entire/detect`, { ...body, series: body.series.slice(0, 5) });
    expect(res.statusCode).toBe(400);
    const validate = validatorFor(spec, 'AnomalyDetectorError');
    expect(validate(res.json()), JSON.stringify(validate.errors)).toBe(true);
    expect(res.headers['x-ms-error-code']).toBe('InvalidSeries');
  });
});

describe('the error registry', () => {
  it("uses the vendor's enum for every 400 and adds only the gateway-level codes", () => {
    const spec = readJson(SPEC_FILES['v1.1']) as { definitions: { AnomalyDetectorError: { properties: { code: { enum: string[] } } } } };
    const vendorCodes = new Set(spec.definitions.AnomalyDetectorError.properties.code.enum);
    const ours = Object.entries(VENDOR_ERROR_STATUS);
    for (const [code, status] of ours) {
      expect(status >= 400 && status <= 599, code).toBe(true);
      if (status === 400) expect(vendorCodes.has(code), code).toBe(true);
      expect(new VendorError(code as keyof typeof VENDOR_ERROR_STATUS, 'm').statusCode).toBe(status);
    }
    expect(ours.filter(([code]) => !vendorCodes.has(code)).map(([code]) => code).sort()).toEqual([
      'InternalServerError',
      'MethodNotAllowed',
      'NotFound',
      'PayloadTooLarge',
      'RequestHeaderFieldsTooLarge',
      'RequestTimeout',
      'UnsupportedMediaType',
    ]);
  });
});
