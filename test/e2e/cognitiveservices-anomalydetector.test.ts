// @azure/cognitiveservices-anomalydetector 2.1.0, the oldest npm client: v1.0, credentials before
// the endpoint, `changePoint` with a capital P in the path, ms-rest-js RestError on any non-200.
import { AnomalyDetectorClient } from '@azure/cognitiveservices-anomalydetector';
import { CognitiveServicesCredentials } from '@azure/ms-rest-azure-js';
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
const NO_RETRIES = { noRetryPolicy: true };
const PREFIX = '/anomalydetector/v1.0/timeseries';

function detectBody(series: SeriesFixture) {
  return { series: toPoints(series), granularity: 'daily' as const };
}

function pathOf(res: { _response: { request: { url: string } } }): string {
  return new URL(res._response.request.url).pathname;
}

describe('@azure/cognitiveservices-anomalydetector 2.1.0 (v1.0, changePoint)', () => {
  let server: TestServer;
  let client: AnomalyDetectorClient;

  beforeAll(async () => {
    server = await startServer();
    client = new AnomalyDetectorClient(new CognitiveServicesCredentials(server.key), server.baseUrl, NO_RETRIES);
  });

  afterAll(async () => {
    await server?.close();
  });

  it('detects the spike over the entire series', async () => {
    const res = await client.entireDetect(detectBody(entireSeries));
    expect(pathOf(res)).toBe(`${PREFIX}/entire/detect`);
    expectEntireDetection(res, entireSeries);
  });

  it('flags a spiking last point and suggests 4 periods + 1 as the window', async () => {
    const res = await client.lastDetect(detectBody(lastSpikeSeries));
    expect(pathOf(res)).toBe(`${PREFIX}/last/detect`);
    expectLastPointSpike(res, lastSpikeSeries);
  });

  it('does not flag a last point that follows the weekly pattern', async () => {
    expectLastPointNormal(await client.lastDetect(detectBody(lastNormalSeries)), lastNormalSeries);
  });

  it('finds the changepoint at the level shift over the changePoint path', async () => {
    const res = await client.changePointDetect(detectBody(changePointSeries));
    expect(pathOf(res)).toBe(`${PREFIX}/changePoint/detect`);
    expectChangePointDetection(res, changePointSeries);
  });

  it('throws InvalidSeries for a 5-point series on every operation', async () => {
    const body = detectBody(tooShortSeries);
    const failures = [
      await rejectionOf(client.entireDetect(body)),
      await rejectionOf(client.lastDetect(body)),
      await rejectionOf(client.changePointDetect(body)),
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
    const stranger = new AnomalyDetectorClient(new CognitiveServicesCredentials(randomTestKey()), server.baseUrl, NO_RETRIES);
    const failure = await rejectionOf(stranger.entireDetect(detectBody(entireSeries)));
    expect(viewRestError(failure)).toMatchObject({ type: 'RestError', code: '401', statusCode: 401 });
  });
});
