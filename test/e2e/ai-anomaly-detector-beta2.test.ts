// @azure/ai-anomaly-detector 3.0.0-beta.2 (installed as the alias azure-ad-beta2) calls
// /anomalydetector/v1.0/..., requires granularity and timestamps, and throws a core-http RestError
// on any non-200.
import { AzureKeyCredential } from '@azure/core-auth';
import { AnomalyDetectorClient, TimeGranularity } from 'azure-ad-beta2';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  expectChangePointDetection,
  expectEntireDetection,
  expectLastPointNormal,
  expectLastPointSpike,
  rejectionOf,
  viewRestError,
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

// Retries off: a correct server answers every call here first time, and a failing one should fail
// the test in milliseconds instead of after the SDK's backoff (minutes per call on a 500).
const NO_RETRIES = { retryOptions: { maxRetries: 0 } };
const PREFIX = '/anomalydetector/v1.0/timeseries';

function detectBody(series: SeriesFixture) {
  return { series: toPoints(series), granularity: TimeGranularity.daily };
}

function pathOf(res: { _response: { request: { url: string } } }): string {
  return new URL(res._response.request.url).pathname;
}

describe('@azure/ai-anomaly-detector 3.0.0-beta.2 (v1.0)', () => {
  let server: TestServer;
  let client: AnomalyDetectorClient;

  beforeAll(async () => {
    server = await startServer();
    client = new AnomalyDetectorClient(server.baseUrl, new AzureKeyCredential(server.key), NO_RETRIES);
  });

  afterAll(async () => {
    await server?.close();
  });

  it('detects the spike over the entire series', async () => {
    const res = await client.detectEntireSeries(detectBody(entireSeries));
    expect(pathOf(res)).toBe(`${PREFIX}/entire/detect`);
    expectEntireDetection(res, entireSeries);
  });

  it('flags a spiking last point and suggests 4 periods + 1 as the window', async () => {
    const res = await client.detectLastPoint(detectBody(lastSpikeSeries));
    expect(pathOf(res)).toBe(`${PREFIX}/last/detect`);
    expectLastPointSpike(res, lastSpikeSeries);
  });

  it('does not flag a last point that follows the weekly pattern', async () => {
    expectLastPointNormal(await client.detectLastPoint(detectBody(lastNormalSeries)), lastNormalSeries);
  });

  it('finds the changepoint at the level shift', async () => {
    const res = await client.detectChangePoint(detectBody(changePointSeries));
    expect(pathOf(res)).toBe(`${PREFIX}/changepoint/detect`);
    expectChangePointDetection(res, changePointSeries);
  });

  it('throws InvalidSeries for a 5-point series on every operation', async () => {
    const body = detectBody(tooShortSeries);
    const failures = [
      await rejectionOf(client.detectEntireSeries(body)),
      await rejectionOf(client.detectLastPoint(body)),
      await rejectionOf(client.detectChangePoint(body)),
    ];
    for (const failure of failures) {
      expect(viewRestError(failure)).toMatchObject({
        type: 'RestError',
        code: 'InvalidSeries',
        statusCode: 400,
        message: expect.any(String),
        errorCodeHeader: 'InvalidSeries',
      });
    }
  });

  it('throws a 401 RestError for an unknown key', async () => {
    const stranger = new AnomalyDetectorClient(server.baseUrl, new AzureKeyCredential(randomTestKey()), NO_RETRIES);
    const failure = await rejectionOf(stranger.detectEntireSeries(detectBody(entireSeries)));
    expect(viewRestError(failure)).toMatchObject({ type: 'RestError', code: '401', statusCode: 401 });
  });
});
