// Dashboard benchmark: an 8,640-row CSV (30 days of 5-minute data) uploaded on the "Detect on a
// CSV" page and its chart rendered, in Debian's Chromium through playwright-core.
//
//   npm run bench:dashboard [-- --samples 10]
//
// Each sample reloads the page, picks the file and clicks Detect; the time runs from the click
// until the chart's canvas is drawn with 8,640 points and the table of flagged points is in the
// page (reading and checking the file in the browser, the API call, building the chart and the
// table). Modes: entire series (vendor route) and per point with the learned model (POST
// /v1/detect, generic model). The server is the real app (buildApp, embedded store, fresh
// DATA_DIR) in this process, so it shares the 2 cores with the browser and the driver.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import { join } from 'node:path';
import { buildApp, loadConfig } from '@adp/api';
import { randomTestKey } from '../test/e2e/server.js';
import { launchChromium } from '../test/browser/chromium.js';
import { signInWithPassword } from '../test/browser/platform.js';
import { summarize } from './stats.js';

const ROWS = 8_640;
const samplesArg = process.argv.indexOf('--samples');
const SAMPLES = samplesArg > 0 ? Number(process.argv[samplesArg + 1]) : 5;

function csvOf(rows: number): string {
  const start = Date.UTC(2025, 5, 1);
  const lines = ['timestamp,value'];
  for (let i = 0; i < rows; i += 1) {
    const value = 50 + 5 * Math.sin((2 * Math.PI * i) / 288) + Math.sin(i * 12.9898) * 0.4 + (i % 1_000 === 500 ? 20 : 0);
    lines.push(`${new Date(start + i * 300_000).toISOString()},${value.toFixed(3)}`);
  }
  return `${lines.join('\n')}\n`;
}

async function main(): Promise<void> {
  const dataDir = await mkdtemp(join(os.tmpdir(), 'adp-bench-dashboard-'));
  const file = join(dataDir, 'series-8640.csv');
  await writeFile(file, csvOf(ROWS));
  const key = randomTestKey();
  const config = loadConfig({ DATA_DIR: dataDir, HOST: '127.0.0.1', PORT: '0', BOOTSTRAP_API_KEY: key, LOG_LEVEL: 'warn' });
  const app = await buildApp(config);
  const browser = await launchChromium();
  try {
    await app.listen({ host: config.host, port: config.port });
    const baseUrl = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
    const page = await browser.newPage({ viewport: { width: 1200, height: 800 } });
    await page.goto(`${baseUrl}/dashboard/`);
    const account = app.bootstrapAccount;
    if (!account) throw new Error('the first start created no dashboard account');
    await signInWithPassword(page, account.email, account.password);

    const table: string[] = ['| mode | rows | samples | p50 ms | max ms |', '|---|---:|---:|---:|---:|'];
    for (const mode of ['entire', 'streaming'] as const) {
      const durations: number[] = [];
      // One warm-up (the first bundle load, the model's first load for per-point detection).
      for (let sample = 0; sample <= SAMPLES; sample += 1) {
        await page.goto(`${baseUrl}/dashboard/#/detect`);
        await page.reload();
        await page.getByLabel(/CSV file/).setInputFiles(file);
        await page.getByLabel('Mode').selectOption(mode);
        const started = performance.now();
        await page.getByRole('button', { name: 'Detect' }).click();
        await page.locator(`[data-testid="chart"][data-points="${ROWS}"] canvas`).waitFor({ timeout: 120_000 });
        await page.getByRole('heading', { name: /Flagged points/ }).waitFor();
        if (sample > 0) durations.push(performance.now() - started);
      }
      const summary = summarize(durations);
      table.push(`| ${mode} | ${ROWS.toLocaleString('en-US')} | ${summary.samples} | ${summary.p50Ms.toFixed(0)} | ${summary.maxMs.toFixed(0)} |`);
    }
    console.log(`8,640-row CSV upload and chart render (Chromium ${browser.version()}, ${os.cpus().length} cores, load ${os.loadavg()[0]?.toFixed(2)})`);
    console.log(table.join('\n'));
  } finally {
    await browser.close();
    await app.close();
    await rm(dataDir, { recursive: true, force: true });
  }
}

await main();
