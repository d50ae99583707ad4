// Fine-tuning and energy benchmark of @adp/model: `npx tsx packages/model/bench/finetune.ts`
// [--quick] [--reference-8640] [--threads N]. --reference-8640 adds the slow references at 8,640
// points (several minutes). Prints a markdown table, the README's table, and (not with --quick)
// writes packages/model/bench/results.json, the summary the README shows (./summary.ts), and
// .cache/bench/model-finetune.json, every figure of the run. The fast path is the default fine-tune
// (closed-form ridge on the predictor head). It is compared with the Adam head fine-tune at its
// defaults and with slow references: Adam at a 4x lower learning rate, 4x the epochs and 4x the
// patience, on the head and on all tensors (the cases and their timing live in ./cases.ts, which
// `npm run bench` also uses). `--threads` sets onnxruntime's intra-op threads (default 1).
import os from 'node:os';
import { fileURLToPath } from 'node:url';
import { createModelRuntime, fineTuneInThread, startFineTuneThread } from '../src/index.js';
import { fullResultsPath, writeJson } from '../../../bench/summary.js';
import { FINETUNE_CASES, machineSeries, timeFineTune } from './cases.js';
import { FINETUNE_TABLE_CASES, fineTuneSummary, type FineTuneRow } from './summary.js';

const quick = process.argv.includes('--quick');
const reference8640 = process.argv.includes('--reference-8640');
const threadsArg = process.argv.indexOf('--threads');

const SETTINGS = {
  intraOpThreads: threadsArg > 0 ? Number(process.argv[threadsArg + 1]) : 1,
  sizes: [1000, 8640],
  seed: 20240101,
  energyRuns: quick ? 2 : 5,
  ...FINETUNE_CASES,
};

function median(values: number[]): number {
  const s = [...values].sort((x, y) => x - y);
  const m = s.length >> 1;
  return s.length % 2 ? (s[m] ?? 0) : ((s[m - 1] ?? 0) + (s[m] ?? 0)) / 2;
}

const round = (v: number, digits = 3): number => Number(v.toFixed(digits));

const runtime = await createModelRuntime({ intraOpThreads: SETTINGS.intraOpThreads });
const rows: Record<string, unknown>[] = [];
const sizes = quick ? [1000] : SETTINGS.sizes;
for (const points of sizes) {
  const series = machineSeries(points, SETTINGS.seed);
  const fast = await timeFineTune(runtime, series, 'fast');
  const row: Record<string, unknown> = {
    points,
    windows: fast.windows,
    fineTuneSeconds: round(fast.statsSeconds[0] ?? Number.NaN),
    finalLoss: round(fast.finalLoss, 6),
  };
  if (!quick) {
    const adam = await timeFineTune(runtime, series, 'adamHead');
    row.adamHeadSeconds = round(adam.statsSeconds[0] ?? Number.NaN);
    row.adamHeadEpochsRun = adam.epochsRun;
    row.adamHeadFinalLoss = round(adam.finalLoss, 6);
  }
  if (!quick && (points <= 1000 || reference8640)) {
    const ref = await timeFineTune(runtime, series, 'reference');
    row.referenceSeconds = round(ref.statsSeconds[0] ?? Number.NaN);
    row.referenceEpochsRun = ref.epochsRun;
    row.referenceFinalLoss = round(ref.finalLoss, 6);
    row.lossRatioToReference = round(fast.finalLoss / ref.finalLoss, 3);
  }
  if (!quick && (points <= 1000 || reference8640)) {
    const full = await timeFineTune(runtime, series, 'referenceFull');
    row.fullReferenceSeconds = round(full.statsSeconds[0] ?? Number.NaN);
    row.fullReferenceFinalLoss = round(full.finalLoss, 6);
    row.lossRatioToFullReference = round(fast.finalLoss / full.finalLoss, 3);
  }
  rows.push(row);
}

// Energies (inference) for the longest series, with and without embeddings.
const long = machineSeries(8640, SETTINGS.seed + 1);
const tuned = await runtime.fineTune(machineSeries(1000, SETTINGS.seed), SETTINGS.fast);
const energyTimes: Record<string, number> = {};
for (const includeEmbeddings of [false, true]) {
  const times: number[] = [];
  for (let r = 0; r < SETTINGS.energyRuns; r++) {
    const t0 = performance.now();
    await runtime.energies(long, { weights: tuned.weights, normalisation: tuned.normalisation, includeEmbeddings });
    times.push(performance.now() - t0);
  }
  energyTimes[includeEmbeddings ? 'withEmbeddingsMs' : 'withoutEmbeddingsMs'] = round(median(times), 1);
}
await runtime.close();

// The worker path: a fresh worker (startup included) and a warm one.
const t0 = performance.now();
await fineTuneInThread(machineSeries(1000, SETTINGS.seed), { intraOpThreads: SETTINGS.intraOpThreads });
const coldWorkerSeconds = round((performance.now() - t0) / 1000);
const worker = await startFineTuneThread({ intraOpThreads: SETTINGS.intraOpThreads });
const t1 = performance.now();
await worker.fineTune(machineSeries(1000, SETTINGS.seed));
const warmWorkerSeconds = round((performance.now() - t1) / 1000);
await worker.close();

const load = os.loadavg().map((v) => round(v, 2));
console.log(`\n@adp/model ${runtime.modelVersion}, ${os.cpus().length} CPUs, load average ${load.join(' ')}\n`);
console.log('| points | windows | fine-tune s (ridge) | loss | Adam head s | Adam head loss | slow ref s | slow ref loss | ridge / slow ref | slow full ref s | slow full ref loss | ridge / full ref |');
console.log('|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
for (const r of rows) {
  const cells = [r.points, r.windows, r.fineTuneSeconds, r.finalLoss, r.adamHeadSeconds, r.adamHeadFinalLoss];
  cells.push(r.referenceSeconds, r.referenceFinalLoss, r.lossRatioToReference);
  cells.push(r.fullReferenceSeconds, r.fullReferenceFinalLoss, r.lossRatioToFullReference);
  console.log(`| ${cells.map((c) => c ?? '-').join(' | ')} |`);
}
console.log(`\nenergies, 8,640 points (fine-tuned predictor): ${energyTimes.withoutEmbeddingsMs} ms without embeddings, ${energyTimes.withEmbeddingsMs} ms with`);
console.log(`fine-tune 1,000 points in a worker: ${coldWorkerSeconds} s with worker startup, ${warmWorkerSeconds} s warm\n`);
console.log(`README table (${sizes.map((n) => n.toLocaleString('en-US')).join(' and ')} points):`);
for (const { label, seconds, loss } of FINETUNE_TABLE_CASES) {
  const cells = (rows as unknown as FineTuneRow[]).flatMap((r) => [r[seconds] ?? '-', r[loss] ?? '-']);
  console.log(`| ${label} | ${cells.join(' | ')} |`);
}

if (!quick) {
  const results = {
    modelVersion: runtime.modelVersion,
    measuredAt: new Date().toISOString(),
    machine: { cpus: os.cpus().length, cpuModel: os.cpus()[0]?.model ?? 'unknown', loadAverage: load },
    settings: SETTINGS,
    fineTune: rows as unknown as FineTuneRow[],
    energies8640: energyTimes,
    worker: { coldWorkerSeconds, warmWorkerSeconds },
  };
  await writeJson(fullResultsPath('model-finetune.json'), results);
  await writeJson(fileURLToPath(new URL('./results.json', import.meta.url)), fineTuneSummary(results));
}
