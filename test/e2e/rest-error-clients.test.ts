// The three generated clients that throw a RestError on any non-200, each calling its own API
// version and path spelling:
// - @azure/ai-anomaly-detector 3.0.0-beta.5 (alias azure-ad-beta5): /anomalydetector/v1.1-preview.1/...
// - @azure/ai-anomaly-detector 3.0.0-beta.2 (alias azure-ad-beta2): /anomalydetector/v1.0/..., granularity
//   and timestamps required client-side
// - @azure/cognitiveservices-anomalydetector 2.1.0: v1.0, credentials before the endpoint,
//   `changePoint` with a capital P, ms-rest-js RestError
// Each is reduced to an adapter with the three calls; every client is held to the same cases.
import { AzureKeyCredential } from '@azure/core-auth';
import { AnomalyDetectorClient as CognitiveServicesClient } from '@azure/cognitiveservices-anomalydetector';
import { CognitiveServicesCredentials } from '@azure/ms-rest-azure-js';
import { AnomalyDetectorClient as Beta2Client, TimeGranularity } from 'azure-ad-beta2';
import { AnomalyDetectorClient as Beta5Client, KnownTimeGranularity } from 'azure-ad-beta5';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  expectChangePointDetection,
  expectEntireDetection,
  expectLastPointNormal,
  expectLastPointSpike,
  rejectionOf,
  viewRestError,
  type ChangePointDetection,
  type EntireDetection,
  type LastDetection,
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

/** What every response of these clients carries: the request it answered. */
interface Answered {
  readonly _response: { readonly request: { readonly url: string } };
}

interface ClientAdapter {
  readonly entire: (series: SeriesFixture) => Promise<Answered & EntireDetection>;
  readonly last: (series: SeriesFixture) => Promise<Answered & LastDetection>;
  readonly changePoint: (series: SeriesFixture) => Promise<Answered & ChangePointDetection>;
}

interface ClientCase {
  readonly name: string;
  /** Path prefix the client must call, and the spelling of the changepoint operation. */
  readonly prefix: string;
  readonly changePointSegment: string;
  readonly connect: (baseUrl: string, key: string) => ClientAdapter;
}

// Retries off: a correct server answers every call here first time, and a failing one should fail
// the test in milliseconds instead of after the SDK's backoff (minutes per call on a 500).
const CLIENTS: readonly ClientCase[] = [
  {
    name: '@azure/ai-anomaly-detector 3.0.0-beta.5 (v1.1-preview.1)',
    prefix: '/anomalydetector/v1.1-preview.1/timeseries',
    changePointSegment: 'changepoint',
    connect: (baseUrl, key) => {
      const client = new Beta5Client(baseUrl, new AzureKeyCredential(key), { retryOptions: { maxRetries: 0 } });
      const body = (series: SeriesFixture) => ({ series: toPoints(series), granularity: KnownTimeGranularity.daily });
      return {
        entire: (series) => client.detectEntireSeries(body(series)),
        last: (series) => client.detectLastPoint(body(series)),
        changePoint: (series) => client.detectChangePoint(body(series)),
      };
    },
  },
  {
    name: '@azure/ai-anomaly-detector 3.0.0-beta.2 (v1.0)',
    prefix: '/anomalydetector/v1.0/timeseries',
    changePointSegment: 'changepoint',
    connect: (baseUrl, key) => {
      const client = new Beta2Client(baseUrl, new AzureKeyCredential(key), { retryOptions: { maxRetries: 0 } });
      const body = (series: SeriesFixture) => ({ series: toPoints(series), granularity: TimeGranularity.daily });
      return {
        entire: (series) => client.detectEntireSeries(body(series)),
        last: (series) => client.detectLastPoint(body(series)),
        changePoint: (series) => client.detectChangePoint(body(series)),
      };
    },
  },
  {
    name: '@azure/cognitiveservices-anomalydetector 2.1.0 (v1.0, changePoint)',
    prefix: '/anomalydetector/v1.0/timeseries',
    changePointSegment: 'changePoint',
    connect: (baseUrl, key) => {
      const client = new CognitiveServicesClient(new CognitiveServicesCredentials(key), baseUrl, { noRetryPolicy: true });
      const body = (series: SeriesFixture) => ({ series: toPoints(series), granularity: 'daily' as const });
      return {
        entire: (series) => client.entireDetect(body(series)),
        last: (series) => client.lastDetect(body(series)),
        changePoint: (series) => client.changePointDetect(body(series)),
      };
    },
  },
];

function pathOf(res: Answered): string {
  return new URL(res._response.request.url).pathname;
}

describe.each(CLIENTS)('$name', ({ prefix, changePointSegment, connect }) => {
  let server: TestServer;
  let client: ClientAdapter;

  beforeAll(async () => {
    server = await startServer();
    client = connect(server.baseUrl, server.key);
  });

  afterAll(async () => {
    await server?.close();
  });

  it('detects the spike over the entire series', async () => {
    const res = await client.entire(entireSeries);
    expect(pathOf(res)).toBe(`${prefix}/entire/detect`);
    expectEntireDetection(res, entireSeries);
  });

  it('flags a spiking last point and suggests 4 periods + 1 as the window', async () => {
    const res = await client.last(lastSpikeSeries);
    expect(pathOf(res)).toBe(`${prefix}/last/detect`);
    expectLastPointSpike(res, lastSpikeSeries);
  });

  it('does not flag a last point that follows the weekly pattern', async () => {
    expectLastPointNormal(await client.last(lastNormalSeries), lastNormalSeries);
  });

  it(`finds the changepoint at the level shift over the ${changePointSegment} path`, async () => {
    const res = await client.changePoint(changePointSeries);
    expect(pathOf(res)).toBe(`${prefix}/${changePointSegment}/detect`);
    expectChangePointDetection(res, changePointSeries);
  });

  it('throws InvalidSeries for a 5-point series on every operation', async () => {
    const failures = [
      await rejectionOf(client.entire(tooShortSeries)),
      await rejectionOf(client.last(tooShortSeries)),
      await rejectionOf(client.changePoint(tooShortSeries)),
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
    const stranger = connect(server.baseUrl, randomTestKey());
    const failure = await rejectionOf(stranger.entire(entireSeries));
    expect(viewRestError(failure)).toMatchObject({ type: 'RestError', code: '401', statusCode: 401 });
  });
});
