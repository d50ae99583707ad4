// The dashboard in real Chromium against the platform `npm start` opens (embedded store, bus and
// worker) on a loopback port: sign in with the first-start account, create baselines from a
// univariate and a multivariate CSV, detect on a CSV and compare what the chart and table flag with
// the API's own answer, download the results, list the machines, read usage and the plan's quota,
// sign out. With SCREENSHOTS=1 it saves the main pages to docs/screenshots/ for the README.
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromiumPresent, launchChromium } from './chromium.js';
import { signInWithPassword, startBrowserTestPlatform, type BrowserTestPlatform } from './platform.js';
import { cycleCsv, multivariateCsv } from './series.js';

const inCi = process.env['CI'] === 'true';
if (!chromiumPresent && !inCi) console.warn('Skipping the browser tests: /usr/bin/chromium not found (bash infra/chromium.sh installs it)');

const SCREENSHOTS = fileURLToPath(new URL('../../docs/screenshots/', import.meta.url));
/** Rewrite docs/screenshots/*.png only when asked: they are committed, and a run should not dirty the tree. */
const TAKE_SCREENSHOTS = process.env['SCREENSHOTS'] === '1';
const MACHINE = 'pump-18';
/** Waits on the page: generous, for a loaded CI machine (each wait ends as soon as its condition holds). */
const WAIT = { timeout: 60_000, interval: 100 };
const healthy = cycleCsv(1000, { seed: 4 });
const suspect = cycleCsv(300, { seed: 9, spikes: [200], spike: 15 });
const shifted = cycleCsv(240, { seed: 11, shiftAt: 150, shift: 20 });
/** Over the synchronous 8,640 points: entire-series detection goes as a detection job. */
const long = cycleCsv(30_000, { seed: 13, spikes: [25_000], spike: 15 });
const press = multivariateCsv(200, { seed: 5 });
const PRESS = 'press-2';
/** The points of the live detection the usage page's quota must count. */
const KNOWN_POINTS = 48;

describe.skipIf(!chromiumPresent && !inCi)('the dashboard in Chromium', () => {
  let started: BrowserTestPlatform | undefined;
  let browser: Browser | undefined;
  let page: Page;
  let baseUrl: string;
  let key: string;
  let email: string;
  let password: string;
  let workDir: string;

  /** The JSON API, called as the dashboard calls it: the reference the pages are compared with. */
  async function api<T>(method: string, path: string, body?: unknown): Promise<T> {
    const response = await fetch(`${baseUrl}${path}`, {
      method,
      headers: { 'x-service-key': key, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    expect(response.status, `${method} ${path}`).toBeLessThan(300);
    return (await response.json()) as T;
  }

  async function screenshot(name: string): Promise<void> {
    if (!TAKE_SCREENSHOTS) return;
    await page.screenshot({ path: join(SCREENSHOTS, `${name}.png`) });
  }

  async function chartAnomalies(): Promise<number[]> {
    const attribute = await page.getByTestId('chart').getAttribute('data-anomalies');
    return attribute === null || attribute === '' ? [] : attribute.split(',').map(Number);
  }

  async function tableIndices(): Promise<number[]> {
    return (await page.locator('[data-testid="flagged"] tbody tr').evaluateAll((rows) => rows.map((row) => Number(row.getAttribute('data-index')))));
  }

  beforeAll(async () => {
    started = await startBrowserTestPlatform('adp-browser-data-');
    ({ baseUrl, key, email, password } = started);
    workDir = await mkdtemp(join(tmpdir(), 'adp-browser-files-'));
    await writeFile(join(workDir, 'press.csv'), press.csv);
    await writeFile(join(workDir, 'press-broken.csv'), 'timestamp,temp,rpm\n2025-06-01T10:00:00Z,20.5,1500\n2025-06-01T10:01:00Z,20.7,\n');
    await writeFile(join(workDir, 'healthy.csv'), healthy.csv);
    await writeFile(join(workDir, 'suspect.csv'), suspect.csv);
    await writeFile(join(workDir, 'shifted.csv'), shifted.csv);
    await writeFile(join(workDir, 'long.csv'), long.csv);
    await writeFile(join(workDir, 'broken.csv'), 'timestamp,value\n2025-06-01T10:00:00Z,50.1\n2025-06-01T10:01:00Z,abc\n');
    browser = await launchChromium();
    const context = await browser.newContext({ viewport: { width: 1200, height: 800 }, acceptDownloads: true });
    page = await context.newPage();
    page.setDefaultTimeout(WAIT.timeout);
  });

  afterAll(async () => {
    await browser?.close();
    await started?.close();
    await rm(workDir, { recursive: true, force: true });
  });

  async function signIn(): Promise<void> {
    await signInWithPassword(page, email, password);
  }

  it('refuses a wrong password, then signs in with the first-start account', async () => {
    await page.goto(`${baseUrl}/dashboard/`);
    await page.getByLabel('Email').fill(email);
    await page.getByLabel('Password').fill('not the password at all');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await expect.poll(() => page.getByRole('alert').textContent(), WAIT).toBe('Not signed in: The email or the password is wrong.');
    expect(await page.context().cookies()).toEqual([]);

    await signIn();
    expect(await page.getByTestId('who').textContent()).toBe(`Signed in as ${email}`);
    const [cookie] = await page.context().cookies();
    expect(cookie).toMatchObject({ name: 'adp_session', httpOnly: true, sameSite: 'Lax' });
    // The session survives a reload: the page asks the server, the script never sees the cookie.
    await page.reload();
    await page.getByTestId('who').waitFor();
    expect(await page.evaluate('document.cookie')).toBe('');
  });

  it('creates a baseline from a univariate CSV and shows its statistics', async () => {
    await page.goto(`${baseUrl}/dashboard/#/baseline`);
    await page.getByLabel('Machine id').fill(MACHINE);
    await page.getByLabel('Label').fill('cooling pump');
    await page.getByLabel('CSV of healthy data').setInputFiles(join(workDir, 'healthy.csv'));
    await page.getByRole('button', { name: 'Create baseline' }).click();
    const stats = page.getByTestId('baseline-stats');
    await stats.waitFor({ timeout: 120_000 });
    const text = await stats.textContent();
    expect(text).toContain(`Baseline of ${MACHINE} (cooling pump)`);
    expect(text).toContain('series length1,000');
    expect(text).toContain('fine-tuningcompleted');
    // The page shows the stored baseline's window count (its held-out tail's), whatever it is.
    const stored = await api<{ stats: { num_windows: number }; label: string }>('GET', `/v1/baseline?machine_id=${MACHINE}`);
    expect(stored.label).toBe('cooling pump');
    expect(stored.stats.num_windows).toBeGreaterThan(0);
    expect(text).toContain(`windows${stored.stats.num_windows}`);
    await screenshot('baseline');
  });

  it('creates a baseline from a multivariate CSV: one per channel', async () => {
    await page.goto(`${baseUrl}/dashboard/#/baseline`);
    // The browser checks the machine id before anything is sent (its pattern compiles).
    const machineId = page.getByLabel('Machine id');
    await machineId.fill('pump 18!');
    expect(await machineId.evaluate((input) => (input as unknown as { validity: { patternMismatch: boolean } }).validity.patternMismatch)).toBe(true);
    await machineId.fill('pump-18:temp');
    expect(await machineId.evaluate((input) => (input as unknown as { validity: { valid: boolean } }).validity.valid)).toBe(true);
    await page.getByLabel('Machine id').fill(PRESS);
    await page.getByLabel('Label').fill('');
    await page.getByLabel('CSV of healthy data').setInputFiles(join(workDir, 'press-broken.csv'));
    await page.getByRole('button', { name: 'Create baseline' }).click();
    await expect.poll(() => page.getByRole('alert').textContent(), WAIT).toBe(
      'press-broken.csv: Line 3, column 3 (rpm): the value is empty (every row needs every channel)',
    );
    await page.getByLabel('CSV of healthy data').setInputFiles(join(workDir, 'press.csv'));
    await page.getByRole('button', { name: 'Create baseline' }).click();
    const stats = page.getByTestId('baseline-stats');
    await expect.poll(async () => stats.textContent(), { ...WAIT, timeout: 180_000 }).toContain(`Baseline of ${PRESS}`);
    const stored = await api<{ channels?: { channel: string }[] }>('GET', `/v1/baseline?machine_id=${PRESS}`);
    expect(stored.channels?.map((channel) => channel.channel)).toEqual(['temp', 'rpm']);
    expect(await stats.textContent()).toContain('channelstemp, rpm');
  });

  it('explains a bad file by line and column', async () => {
    await page.goto(`${baseUrl}/dashboard/#/detect`);
    await page.getByLabel(/CSV file/).setInputFiles(join(workDir, 'broken.csv'));
    await page.getByRole('button', { name: 'Detect' }).click();
    await expect.poll(() => page.getByRole('alert').textContent(), WAIT).toBe('broken.csv: Line 3, column 2 (value): "abc" is not a number');
  });

  it('detects on a CSV and flags on the chart and in the table exactly what the API flags', async () => {
    const reference = await api<{ isAnomaly: boolean[] }>('POST', '/anomalydetector/v1.1/timeseries/entire/detect', {
      series: suspect.points,
      granularity: 'minutely',
      sensitivity: 95,
    });
    const flagged = reference.isAnomaly.flatMap((anomalous, index) => (anomalous ? [index] : []));
    expect(flagged).toContain(200);

    await page.goto(`${baseUrl}/dashboard/#/detect`);
    await page.getByTestId('detect-form').waitFor();
    // No empty card under the form before there are results.
    expect(await page.getByTestId('detect-results').isVisible()).toBe(false);
    await page.getByLabel(/CSV file/).setInputFiles(join(workDir, 'suspect.csv'));
    await page.getByLabel('Mode').selectOption('entire');
    await page.getByRole('button', { name: 'Detect' }).click();
    await page.getByTestId('chart').locator('canvas').waitFor();
    expect(await chartAnomalies()).toEqual(flagged);
    expect(await tableIndices()).toEqual(flagged);
    expect(await page.getByTestId('summary').textContent()).toBe(`suspect.csv: 300 points, ${flagged.length} ${flagged.length === 1 ? 'anomaly' : 'anomalies'}.`);
  });

  it('downloads the results as JSON and CSV', async () => {
    const flagged = await chartAnomalies();
    const [json] = await Promise.all([page.waitForEvent('download'), page.getByTestId('download-json').click()]);
    expect(json.suggestedFilename()).toBe('suspect-entire-results.json');
    const body = JSON.parse(await readFile(await json.path(), 'utf8')) as { anomaly_indices: number[]; rows: unknown[]; request: Record<string, unknown> };
    expect(body.anomaly_indices).toEqual(flagged);
    expect(body.rows).toHaveLength(300);
    expect(body.request).toMatchObject({ mode: 'entire', file: 'suspect.csv', granularity: 'minutely', sensitivity: 95 });

    const [csv] = await Promise.all([page.waitForEvent('download'), page.getByTestId('download-csv').click()]);
    const lines = (await readFile(await csv.path(), 'utf8')).trim().split('\n');
    expect(lines).toHaveLength(301);
    expect(lines[201]).toMatch(/^200,2025-06-01T13:20:00.000Z,[\d.]+,[\d.]+,[\d.]+,[\d.]+,true,true,false,/);
  });

  it("detects per point with the machine's baseline: regimes on the chart", async () => {
    const reference = await api<{ isAnomaly: boolean[]; regimes: string[]; engine: string }>('POST', '/v1/detect', {
      series: suspect.points,
      granularity: 'minutely',
      sensitivity: 95,
      machine_id: MACHINE,
    });
    expect(reference.engine).toBe('fine-tuned');
    await page.getByLabel('Mode').selectOption('streaming');
    await page.getByLabel('Machine id').fill(MACHINE);
    await page.getByRole('button', { name: 'Detect' }).click();
    await expect.poll(() => page.getByTestId('summary').textContent(), WAIT).toContain('suspect.csv');
    await expect.poll(() => page.getByTestId('chart').getAttribute('data-regime-spans'), WAIT).toContain('SHOCK:200-');
    // The learned model's warm-up band is far wider than the data: the chart's range stays near the values.
    const values = suspect.points.map((point) => point.value);
    const span = Math.max(...values) - Math.min(...values);
    const [low, high] = ((await page.getByTestId('chart').getAttribute('data-y-range')) ?? '').split(',').map(Number);
    expect(low).toBeGreaterThanOrEqual(Math.min(...values) - 1.1 * span);
    expect(high).toBeLessThanOrEqual(Math.max(...values) + 1.1 * span);
    expect(await chartAnomalies()).toEqual(reference.isAnomaly.flatMap((anomalous, index) => (anomalous ? [index] : [])));
    expect(await page.locator('[data-testid="flagged"] tbody tr[data-index="200"] td').nth(7).textContent()).toBe(reference.regimes[200]);
    await screenshot('detect');
  });

  it('says so when the machine id has no baseline, rather than passing the generic verdict off as the machine\'s', async () => {
    await page.getByLabel('Machine id').fill('pump-81');
    await page.getByRole('button', { name: 'Detect' }).click();
    await expect.poll(() => page.getByTestId('no-baseline').textContent(), WAIT).toBe(
      "Machine 'pump-81' has no baseline: the series was judged by the generic model. Create one on the Baseline page, or check the id.",
    );
    await page.getByLabel('Machine id').fill(MACHINE);
    await page.getByRole('button', { name: 'Detect' }).click();
    await expect.poll(() => page.getByTestId('no-baseline').count(), WAIT).toBe(0);
  });

  it("shows the API's own error, with its status and code", async () => {
    await page.getByLabel('Machine id').fill('-not-an-id');
    await page.getByRole('button', { name: 'Detect' }).click();
    await expect.poll(() => page.getByRole('alert').textContent(), WAIT).toMatch(/ \(400 InvalidMachineId\)$/);
    expect(await page.getByTestId('detect-results').textContent()).toBe('');
    await page.getByLabel('Machine id').fill(MACHINE);
  });

  it('marks on the chart the changepoints the API finds', async () => {
    const reference = await api<{ isChangePoint: boolean[] }>('POST', '/anomalydetector/v1.1/timeseries/changepoint/detect', {
      series: shifted.points,
      granularity: 'minutely',
      stableTrendWindow: 10,
    });
    const changepoints = reference.isChangePoint.flatMap((changed, index) => (changed ? [index] : []));
    expect(changepoints.length).toBeGreaterThan(0);
    await page.getByLabel(/CSV file/).setInputFiles(join(workDir, 'shifted.csv'));
    await page.getByLabel('Mode').selectOption('changepoint');
    expect(await page.getByLabel(/Sensitivity/).isDisabled()).toBe(true);
    await page.getByRole('button', { name: 'Detect' }).click();
    await expect.poll(() => page.getByTestId('summary').textContent(), WAIT).toContain('shifted.csv: 240 points');
    const marked = await page.getByTestId('chart').getAttribute('data-changepoints');
    expect(marked?.split(',').map(Number)).toEqual(changepoints);
    expect(await tableIndices()).toEqual(changepoints);
    // No band and no anomalies in a changepoint answer: the legend names what is drawn.
    const legend = await page.getByTestId('legend').textContent();
    expect(legend).toContain(`changepoint (${changepoints.length})`);
    expect(legend).not.toMatch(/band|anomal/);
  });

  it('detects on a 30,000-row CSV as a detection job: its progress, then the job\'s flags on the chart (drawn downsampled) and in the table', async () => {
    await page.goto(`${baseUrl}/dashboard/#/detect`);
    await page.getByLabel(/CSV file/).setInputFiles(join(workDir, 'long.csv'));
    await page.getByLabel('Mode').selectOption('entire');
    await page.getByRole('button', { name: 'Detect' }).click();
    await page.getByTestId('job-progress').waitFor();
    await page.getByTestId('chart').locator('canvas').waitFor();

    const [job] = (await api<{ jobs: { job_id: string; status: string; points_total: number }[] }>('GET', '/v1/jobs')).jobs;
    expect(job).toMatchObject({ status: 'done', points_total: 30_000 });
    const flagged: number[] = [];
    let cursor: string | null = null;
    do {
      const results: { results: { point_index: number; is_anomaly: boolean }[]; next_cursor: string | null } = await api(
        'GET',
        `/v1/jobs/${job!.job_id}/results?limit=10000${cursor === null ? '' : `&cursor=${cursor}`}`,
      );
      flagged.push(...results.results.filter((row) => row.is_anomaly).map((row) => row.point_index));
      cursor = results.next_cursor;
    } while (cursor !== null);
    expect(flagged).toContain(25_000);

    expect(await page.getByTestId('chart').getAttribute('data-points')).toBe('30000');
    expect(Number(await page.getByTestId('chart').getAttribute('data-drawn'))).toBeLessThanOrEqual(20_000 + flagged.length);
    expect(await chartAnomalies()).toEqual(flagged);
    expect(await tableIndices()).toEqual(flagged);
    expect(await page.getByTestId('summary').textContent()).toBe(`long.csv: 30,000 points, ${flagged.length} ${flagged.length === 1 ? 'anomaly' : 'anomalies'}.`);
  });

  it("lists the machine and charts its stored results on the machine's page", async () => {
    await api('POST', '/v1/telemetry', { machine_id: MACHINE, points: suspect.points });
    await expect
      .poll(async () => (await api<{ results: unknown[] }>('GET', `/v1/machines/${MACHINE}/results?limit=1000`)).results.length, WAIT)
      .toBe(300);

    await page.goto(`${baseUrl}/dashboard/#/machines`);
    const row = page.locator(`tr[data-machine-id="${MACHINE}"]`);
    await row.waitFor();
    expect(await row.textContent()).toContain('cooling pump');
    await screenshot('machines');

    await row.getByRole('link', { name: MACHINE }).click();
    await page.getByTestId('machine-status').getByText('model in use').waitFor();
    await page.getByTestId('machine-results').getByTestId('chart').locator('canvas').waitFor({ timeout: 60_000 });
    const results = await api<{ results: { is_anomaly: boolean }[] }>('GET', `/v1/machines/${MACHINE}/results?limit=1000`);
    expect(await chartAnomalies()).toEqual(results.results.flatMap((result, index) => (result.is_anomaly ? [index] : [])));
    expect(await page.getByTestId('chart').getAttribute('data-points')).toBe('300');
    const lastAnomaly = results.results.flatMap((result, index) => (result.is_anomaly ? [suspect.points[index]?.timestamp] : [])).pop();
    expect(await page.getByTestId('machine-results').getByTestId('summary').textContent()).toContain(`last anomaly: ${lastAnomaly}.`);
    await page.getByRole('heading', { name: 'Stored results' }).evaluate((heading) => heading.scrollIntoView());
    await screenshot('machine');

    // A range picked with the date and time pickers (UTC): the 100 points from the 100th on.
    const fromTs = suspect.points[100]!.timestamp.replace(/Z$/, '').replace(/\.000$/, '');
    const toTs = suspect.points[200]!.timestamp.replace(/Z$/, '').replace(/\.000$/, '');
    await page.getByLabel('From (UTC)').fill(fromTs);
    await page.getByLabel('To (UTC, exclusive)').fill(toTs);
    await page.getByRole('button', { name: 'Load results' }).click();
    await expect.poll(() => page.getByTestId('chart').getAttribute('data-points'), WAIT).toBe('100');
  });

  it("charts a multi-channel machine's score on its page and links its channels", async () => {
    // The press's channels go on from its baseline's 200 rows; rpm runs 60 high for 40 points.
    const start = Date.UTC(2025, 5, 1, 10, 0) + 200 * 60_000;
    const points = Array.from({ length: 120 }, (_, k) => {
      const i = 200 + k;
      const temp = 60 + 3 * Math.sin((2 * Math.PI * i) / 45);
      const rpm = 1500 + 40 * Math.cos((2 * Math.PI * i) / 30) + (k >= 60 && k < 100 ? 60 : 0);
      return { timestamp: new Date(start + k * 60_000).toISOString(), channels: { temp, rpm } };
    });
    await api('POST', '/v1/telemetry', { machine_id: PRESS, points });
    await expect.poll(async () => (await api<{ results: unknown[] }>('GET', `/v1/machines/${PRESS}/results?limit=1000`)).results.length, WAIT).toBe(120);
    const results = await api<{ results: { is_anomaly: boolean }[] }>('GET', `/v1/machines/${PRESS}/results?limit=1000`);
    const flagged = results.results.flatMap((result, index) => (result.is_anomaly ? [index] : []));
    expect(flagged.some((index) => index >= 60 && index < 100)).toBe(true);

    await page.goto(`${baseUrl}/dashboard/#/machines/${PRESS}`);
    const channels = page.getByTestId('machine-channels');
    await channels.waitFor(WAIT);
    expect(await channels.textContent()).toBe('Channels: temp, rpm.');
    expect(await channels.getByRole('link', { name: 'rpm' }).getAttribute('href')).toBe(`#/machines/${encodeURIComponent(`${PRESS}:rpm`)}`);
    expect(await page.getByTestId('machine-status').textContent()).toContain('machine-model');
    expect(await page.getByTestId('results-note').textContent()).toContain("The machine's score per point");
    await page.getByTestId('machine-results').getByTestId('chart').locator('canvas').waitFor({ timeout: 60_000 });
    expect(await page.getByTestId('chart').getAttribute('data-points')).toBe('120');
    expect(await chartAnomalies()).toEqual(flagged);
  });

  it("judges a multichannel CSV against the machine's baseline on the Detect page: its score, flags and episodes", async () => {
    // The press's channels after its baseline's 200 rows, rpm 60 high for 40 of them.
    const start = Date.UTC(2025, 5, 1, 10, 0) + 400 * 60_000;
    const rows = Array.from({ length: 150 }, (_, k) => {
      const i = 400 + k;
      const temp = Math.round((60 + 3 * Math.sin((2 * Math.PI * i) / 45)) * 100) / 100;
      const rpm = Math.round(1500 + 40 * Math.cos((2 * Math.PI * i) / 30) + (k >= 70 && k < 110 ? 60 : 0));
      return { timestamp: new Date(start + k * 60_000).toISOString().replace('.000Z', 'Z'), temp, rpm };
    });
    await writeFile(join(workDir, 'press-judged.csv'), `timestamp,temp,rpm\n${rows.map((r) => `${r.timestamp},${r.temp},${r.rpm}`).join('\n')}\n`);
    const reference = await api<{ machine: { is_anomaly: boolean[]; episodes: unknown[] } }>('POST', '/v1/detect', {
      machine_id: PRESS,
      granularity: 'minutely',
      sensitivity: 95,
      series: rows.map((r) => ({ timestamp: r.timestamp, channels: { temp: r.temp, rpm: r.rpm } })),
    });
    const flagged = reference.machine.is_anomaly.flatMap((flag, index) => (flag ? [index] : []));
    expect(flagged.some((index) => index >= 70 && index < 110)).toBe(true);

    await page.goto(`${baseUrl}/dashboard/#/detect`);
    await page.getByLabel(/CSV file/).setInputFiles(join(workDir, 'press-judged.csv'));
    // Another mode than per point: the page says what a multichannel file needs.
    await page.getByLabel('Mode').selectOption('entire');
    await page.getByRole('button', { name: 'Detect' }).click();
    await expect.poll(() => page.getByRole('alert').textContent(), WAIT).toContain('has several channels');
    await page.getByLabel('Mode').selectOption('streaming');
    await page.getByLabel('Machine id').fill(PRESS);
    await page.getByLabel(/Sensitivity/).fill('95');
    await page.getByRole('button', { name: 'Detect' }).click();
    await page.getByTestId('episodes').waitFor(WAIT);
    expect(await page.getByTestId('chart').getAttribute('data-points')).toBe('150');
    expect(await chartAnomalies()).toEqual(flagged);
    expect(await page.locator('[data-testid="episodes"] tbody tr').count()).toBe(reference.machine.episodes.length);
    expect(await page.getByTestId('summary').textContent()).toContain("press-judged.csv: 150 points of 2 channels, the machine's score against its joint model");
  });

  it("sends a multichannel CSV over 8,640 rows as a detection job and charts the machine's verdict from it", async () => {
    // 9,000 rows of the press's channels, rpm 60 high for 300 of them.
    const start = Date.UTC(2025, 5, 2, 0, 0);
    const rows = Array.from({ length: 9000 }, (_, k) => {
      const i = 600 + k;
      const temp = Math.round((60 + 3 * Math.sin((2 * Math.PI * i) / 45)) * 100) / 100;
      const rpm = Math.round(1500 + 40 * Math.cos((2 * Math.PI * i) / 30) + (k >= 5000 && k < 5300 ? 60 : 0));
      return { timestamp: new Date(start + k * 60_000).toISOString().replace('.000Z', 'Z'), temp, rpm };
    });
    await writeFile(join(workDir, 'press-month.csv'), `timestamp,temp,rpm\n${rows.map((r) => `${r.timestamp},${r.temp},${r.rpm}`).join('\n')}\n`);

    await page.goto(`${baseUrl}/dashboard/#/detect`);
    await page.getByLabel(/CSV file/).setInputFiles(join(workDir, 'press-month.csv'));
    await page.getByLabel('Mode').selectOption('streaming');
    await page.getByLabel('Machine id').fill(PRESS);
    await page.getByLabel(/Sensitivity/).fill('95');
    await page.getByRole('button', { name: 'Detect' }).click();
    await page.getByTestId('job-progress').waitFor(WAIT);
    await page.getByTestId('episodes').waitFor({ timeout: 120_000 });

    // What the page shows is the job's machine verdict: read it from the API the same way.
    const jobs = await api<{ jobs: { job_id: string; series: { series_index: number; kind: string }[] }[] }>('GET', '/v1/jobs?limit=1');
    const job = jobs.jobs[0]!;
    const verdict = job.series.find((series) => series.kind === 'machine')!;
    expect(job.series.map((series) => series.kind)).toEqual(['channel', 'channel', 'machine']);
    const page1 = await api<{ results: { is_anomaly: boolean }[]; episodes: unknown[] }>('GET', `/v1/jobs/${job.job_id}/results?series_index=${verdict.series_index}&limit=10000`);
    const flagged = page1.results.flatMap((result, index) => (result.is_anomaly ? [index] : []));
    expect(flagged.some((index) => index >= 5000 && index < 5300)).toBe(true);
    expect(await page.getByTestId('chart').getAttribute('data-points')).toBe('9000');
    expect(await chartAnomalies()).toEqual(flagged);
    expect(await page.locator('[data-testid="episodes"] tbody tr').count()).toBe(page1.episodes.length);
    expect(await page.getByTestId('summary').textContent()).toContain("press-month.csv: 9,000 points of 2 channels, the machine's score against its joint model");
  });

  it('keeps the header on one line at a tablet\'s 768 px', async () => {
    await page.setViewportSize({ width: 768, height: 900 });
    try {
      await page.goto(`${baseUrl}/dashboard/#/machines`);
      const header = page.locator('header');
      await header.waitFor();
      const box = await header.boundingBox();
      const link = await page.locator('nav a').first().boundingBox();
      // One line: the header no taller than its links' line and its padding.
      expect(box!.height).toBeLessThan(link!.height * 2 + 20);
      const tops = await page.locator('nav a').evaluateAll((links) => links.map((a) => Math.round(a.getBoundingClientRect().top)));
      expect(new Set(tops).size).toBe(1);
    } finally {
      await page.setViewportSize({ width: 1200, height: 800 });
    }
  });

  it('shows usage per endpoint and the plan with its points this month', async () => {
    // The first-start key is a test key, which the quota never counts; the session's calls are live.
    const before = await api<{ plan: string; points_used_this_month: number }>('GET', '/v1/usage/summary');
    expect(before.plan).toBe('paid');
    const series = Array.from({ length: KNOWN_POINTS }, (_, i) => ({ timestamp: new Date(Date.UTC(2025, 5, 1, i)).toISOString(), value: 10 + Math.sin(i / 4) }));
    const status = await page.evaluate(async (body) => {
      const session = (await (await fetch('/dashboard/api/session')).json()) as { csrf_token: string };
      const headers = { 'content-type': 'application/json', 'x-csrf-token': session.csrf_token };
      return (await fetch('/anomalydetector/v1.1/timeseries/entire/detect', { method: 'POST', headers, body })).status;
    }, JSON.stringify({ series, granularity: 'hourly' }));
    expect(status).toBe(200);

    await page.goto(`${baseUrl}/dashboard/#/usage`);
    const used = (before.points_used_this_month + KNOWN_POINTS).toLocaleString('en-US');
    await expect.poll(() => page.getByTestId('quota-used').textContent(), WAIT).toBe(`${used} points this month (UTC)`);
    expect(await page.getByTestId('quota-plan').textContent()).toBe('paid');
    expect(await page.getByTestId('quota-remaining').textContent()).toBe('Unlimited: the paid plan has no monthly quota.');
    expect(await page.getByTestId('quota-renews').count()).toBe(0);
    expect(await page.getByTestId('quota-bar').count()).toBe(0);

    const baselineRow = page.locator('[data-testid="usage"] tr[data-endpoint="v1/baseline"]');
    await baselineRow.waitFor();
    // Two baselines: the univariate one's 1,000 points and the multivariate one's, as the API counts them.
    const usage = await api<{ endpoint: string; call_count: number; total_points: number }[]>('GET', '/v1/usage');
    const baselines = usage.find((record) => record.endpoint === 'v1/baseline');
    expect(baselines?.call_count).toBe(2);
    const points = (baselines?.total_points ?? 0).toLocaleString('en-US');
    expect(await baselineRow.locator('td').allTextContents()).toEqual(['v1/baseline', '2', points]);
    // The day the server counted them on (its `to` is its today), not this process's clock.
    const today = (await api<{ to: string }>('GET', '/v1/usage/daily')).to;
    const dayRow = page.locator(`[data-testid="usage-daily"] tr[data-day="${today}"][data-endpoint="v1/baseline"]`);
    expect(await dayRow.locator('td').allTextContents()).toEqual([today, 'v1/baseline', '2', points]);
    await screenshot('usage');
  });

  it('returns to the sign-in page when the session ends elsewhere', async () => {
    const [cookie] = await page.context().cookies();
    // Signed out from another tab: the server forgets the session; this tab learns at its next call.
    await fetch(`${baseUrl}/dashboard/api/logout`, { method: 'POST', headers: { cookie: `adp_session=${cookie?.value ?? ''}` } });
    await page.getByRole('link', { name: 'Machines' }).click();
    await expect.poll(() => page.getByRole('alert').textContent(), WAIT).toBe('The session has ended (401). Sign in again.');
    await signIn();
    await page.goto(`${baseUrl}/dashboard/#/machines`);
    await page.locator(`tr[data-machine-id="${MACHINE}"]`).waitFor();
  });

  it('signs out: the session ends on the server and the pages ask to sign in again', async () => {
    const [cookie] = await page.context().cookies();
    await page.getByTestId('sign-out').click();
    await page.getByTestId('signin').waitFor();
    expect(await page.context().cookies()).toEqual([]);
    const replayed = await fetch(`${baseUrl}/v1/usage`, { headers: { cookie: `adp_session=${cookie?.value ?? ''}` } });
    expect(replayed.status).toBe(401);
    await page.goto(`${baseUrl}/dashboard/#/machines`);
    await page.getByTestId('signin').waitFor();
    expect(await page.locator('tr[data-machine-id]').count()).toBe(0);
  });
});
