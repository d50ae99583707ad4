// The vendor's Python SDK, azure-ai-anomalydetector 3.0.0b6 (v1.1), run in a child process against
// the server: python/vendor_client.py makes every call and prints one JSON report, asserted here
// with the same expectations as the npm clients. The SDK lives in .venv (infra/python-client.sh).
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  expectChangePointDetection,
  expectEntireDetection,
  expectLastPointNormal,
  expectLastPointSpike,
  type ChangePointDetection,
  type EntireDetection,
  type LastDetection,
} from './expectations.js';
import {
  changePointSeries,
  entireSeries,
  lastNormalSeries,
  lastSpikeSeries,
  tooShortSeries,
  type SeriesFixture,
} from './series.js';
import { randomTestKey, startServer, type TestServer } from './server.js';

const PYTHON = fileURLToPath(new URL('../../.venv/bin/python', import.meta.url));
const SCRIPT = fileURLToPath(new URL('./python/vendor_client.py', import.meta.url));
const SDK_VERSION = '3.0.0b6';
const PREFIX = '/anomalydetector/v1.1/timeseries';
const SCRIPT_TIMEOUT_MS = 90_000;

const pythonMissing = !existsSync(PYTHON);
const inCi = process.env['CI'] === 'true';
const MISSING_MESSAGE = `${PYTHON} not found: run "bash infra/python-client.sh" to install azure-ai-anomalydetector==${SDK_VERSION}`;
if (pythonMissing && !inCi) console.warn(`Skipping the Python SDK e2e tests: ${MISSING_MESSAGE}`);

interface Failure {
  readonly exception: string | null;
  readonly message: string;
  readonly statusCode?: number;
  readonly code?: string | null;
  readonly modelCode?: string | null;
  readonly errorCodeHeader?: string | null;
}

/** What a call that should succeed came back with: the SDK's result, or how it failed. */
type Outcome<T> = (T & { readonly path: string }) | { readonly failed: Failure };

interface Report {
  readonly sdkVersion: string;
  readonly entire: Outcome<EntireDetection>;
  readonly lastSpike: Outcome<LastDetection>;
  readonly lastNormal: Outcome<LastDetection>;
  readonly changePoint: Outcome<ChangePointDetection>;
  readonly invalidSeries: { readonly entire: Failure; readonly last: Failure; readonly changePoint: Failure };
  readonly wrongKey: Failure;
}

function succeeded<T>(outcome: Outcome<T>): T & { readonly path: string } {
  if ('failed' in outcome) throw new Error(`the SDK call failed: ${JSON.stringify(outcome.failed)}`);
  return outcome;
}

function wirePoints(series: SeriesFixture): { timestamp: string; value: number }[] {
  return series.values.map((value, i) => ({ timestamp: series.timestamps[i]?.toISOString() ?? '', value }));
}

function runScript(input: unknown): Promise<Report> {
  return new Promise((resolve, reject) => {
    const child = spawn(PYTHON, [SCRIPT], { stdio: ['pipe', 'pipe', 'pipe'], timeout: SCRIPT_TIMEOUT_MS });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    child.on('error', reject);
    child.on('close', (code, signal) => {
      if (code !== 0) {
        reject(new Error(`${SCRIPT} exited with ${code ?? signal}:\n${stderr}${stdout}`));
        return;
      }
      try {
        resolve(JSON.parse(stdout) as Report);
      } catch (error) {
        reject(new Error(`${SCRIPT} printed no JSON report (${String(error)}):\n${stdout}\n${stderr}`));
      }
    });
    child.stdin.end(JSON.stringify(input));
  });
}

describe.skipIf(pythonMissing && !inCi)(`azure-ai-anomalydetector ${SDK_VERSION} (Python, v1.1)`, () => {
  let server: TestServer | undefined;
  let report: Report;

  beforeAll(async () => {
    if (pythonMissing) throw new Error(MISSING_MESSAGE);
    server = await startServer();
    report = await runScript({
      endpoint: server.baseUrl,
      key: server.key,
      wrongKey: randomTestKey(),
      series: {
        entire: wirePoints(entireSeries),
        lastSpike: wirePoints(lastSpikeSeries),
        lastNormal: wirePoints(lastNormalSeries),
        changePoint: wirePoints(changePointSeries),
        tooShort: wirePoints(tooShortSeries),
      },
    });
  });

  afterAll(async () => {
    await server?.close();
  });

  it(`runs the pinned SDK version ${SDK_VERSION}`, () => {
    expect(report.sdkVersion).toBe(SDK_VERSION);
  });

  it('detects the spike over the entire series', () => {
    const result = succeeded(report.entire);
    expect(result.path).toBe(`${PREFIX}/entire/detect`);
    expectEntireDetection(result, entireSeries);
  });

  it('flags a spiking last point and suggests 4 periods + 1 as the window', () => {
    const result = succeeded(report.lastSpike);
    expect(result.path).toBe(`${PREFIX}/last/detect`);
    expectLastPointSpike(result, lastSpikeSeries);
  });

  it('does not flag a last point that follows the weekly pattern', () => {
    expectLastPointNormal(succeeded(report.lastNormal), lastNormalSeries);
  });

  it('finds the changepoint at the level shift', () => {
    const result = succeeded(report.changePoint);
    expect(result.path).toBe(`${PREFIX}/changepoint/detect`);
    expectChangePointDetection(result, changePointSeries);
  });

  it('raises HttpResponseError with code InvalidSeries for a 5-point series on every operation', () => {
    for (const [operation, failure] of Object.entries(report.invalidSeries)) {
      expect(failure, operation).toMatchObject({
        exception: 'HttpResponseError',
        statusCode: 400,
        code: 'InvalidSeries',
        modelCode: 'InvalidSeries',
        errorCodeHeader: 'InvalidSeries',
      });
    }
  });

  it('raises ClientAuthenticationError for an unknown key', () => {
    expect(report.wrongKey).toMatchObject({ exception: 'ClientAuthenticationError', statusCode: 401 });
  });
});
