// @azure-rest/ai-anomaly-detector 1.0.0-beta.1 calls /anomalydetector/v1.1/... and never throws on
// HTTP errors: callers check isUnexpected(res) and read res.body.
import restModule, { isUnexpected, type AnomalyDetectorRestClient } from '@azure-rest/ai-anomaly-detector';
import { AzureKeyCredential } from '@azure/core-auth';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  expectChangePointDetection,
  expectEntireDetection,
  expectLastPointNormal,
  expectLastPointSpike,
} from './expectations.js';
import {
  changePointSeries,
  entireSeries,
  lastNormalSeries,
  lastSpikeSeries,
  toPoints,
  tooShortSeries,
  type SeriesFixture,
} from './series.js';
import { randomTestKey, startServer, type TestServer } from './server.js';

type CreateClient = typeof restModule.default;
// The package is CommonJS with `exports.default = createClient`. Node's ESM loader hands over the
// whole `module.exports` as the default import, vitest unwraps it one level more: accept both.
const defaultImport: unknown = restModule;
const createClient = (typeof defaultImport === 'function' ? defaultImport : restModule.default) as CreateClient;

// Retries off: a correct server answers every call here first time, and a failing one should fail
// the test in milliseconds instead of after the SDK's backoff (minutes per call on a 500).
function connect(server: TestServer, key: string): AnomalyDetectorRestClient {
  // Plain http to loopback: the REST pipeline refuses it unless told otherwise.
  return createClient(server.baseUrl, new AzureKeyCredential(key), {
    allowInsecureConnection: true,
    retryOptions: { maxRetries: 0 },
  });
}

function describeFailure(res: { status: string; body: unknown }): string {
  return `HTTP ${res.status}: ${JSON.stringify(res.body)}`;
}

function pathOf(res: { request: { url: string } }): string {
  return new URL(res.request.url).pathname;
}

function detectBody(series: SeriesFixture) {
  return { series: toPoints(series), granularity: 'daily' as const };
}

describe('@azure-rest/ai-anomaly-detector 1.0.0-beta.1 (v1.1)', () => {
  let server: TestServer;
  let client: AnomalyDetectorRestClient;

  beforeAll(async () => {
    server = await startServer();
    client = connect(server, server.key);
  });

  afterAll(async () => {
    await server?.close();
  });

  it('detects the spike over the entire series', async () => {
    const res = await client.path('/timeseries/entire/detect').post({ body: detectBody(entireSeries) });
    if (isUnexpected(res)) throw new Error(describeFailure(res));
    expect(pathOf(res)).toBe('/anomalydetector/v1.1/timeseries/entire/detect');
    expectEntireDetection(res.body, entireSeries);
  });

  it('flags a spiking last point and suggests 4 periods + 1 as the window', async () => {
    const res = await client.path('/timeseries/last/detect').post({ body: detectBody(lastSpikeSeries) });
    if (isUnexpected(res)) throw new Error(describeFailure(res));
    expect(pathOf(res)).toBe('/anomalydetector/v1.1/timeseries/last/detect');
    expectLastPointSpike(res.body, lastSpikeSeries);
  });

  it('does not flag a last point that follows the weekly pattern', async () => {
    const res = await client.path('/timeseries/last/detect').post({ body: detectBody(lastNormalSeries) });
    if (isUnexpected(res)) throw new Error(describeFailure(res));
    expectLastPointNormal(res.body, lastNormalSeries);
  });

  it('finds the changepoint at the level shift', async () => {
    const res = await client.path('/timeseries/changepoint/detect').post({ body: detectBody(changePointSeries) });
    if (isUnexpected(res)) throw new Error(describeFailure(res));
    expect(pathOf(res)).toBe('/anomalydetector/v1.1/timeseries/changepoint/detect');
    expectChangePointDetection(res.body, changePointSeries);
  });

  it('returns InvalidSeries for a 5-point series on every operation', async () => {
    const body = detectBody(tooShortSeries);
    const entire = await client.path('/timeseries/entire/detect').post({ body });
    const last = await client.path('/timeseries/last/detect').post({ body });
    const changePoint = await client.path('/timeseries/changepoint/detect').post({ body });
    for (const res of [entire, last, changePoint]) {
      expect(res.status, pathOf(res)).toBe('400');
      expect(res.body, pathOf(res)).toMatchObject({ code: 'InvalidSeries', message: expect.any(String) });
      expect(res.headers['x-ms-error-code'], pathOf(res)).toBe('InvalidSeries');
    }
    expect(isUnexpected(entire)).toBe(true);
    expect(isUnexpected(last)).toBe(true);
    expect(isUnexpected(changePoint)).toBe(true);
  });

  it('returns 401 in the gateway shape for an unknown key', async () => {
    const stranger = connect(server, randomTestKey());
    const res = await stranger.path('/timeseries/entire/detect').post({ body: detectBody(entireSeries) });
    expect(isUnexpected(res)).toBe(true);
    expect(res.status).toBe('401');
    expect(res.body).toMatchObject({ error: { code: '401', message: expect.any(String) } });
  });
});
