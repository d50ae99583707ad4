// `npm run eval:machine`: the machine model's threshold across sensitivities, on the dataset its
// constants were chosen on (SKAB dev, its own channels) and on one they were not (UCR dev, each
// series as a machine of one channel, the training part as its baseline). It calls the model's own
// functions (fitMachineModel, judgeMachine), which the API's multivariate baseline and detection
// call with the same inputs, so its SKAB row at the default sensitivity is the `machine` row of
// `npm run eval:skab` (docs/machine-model.md).
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { fitMachineModel, judgeMachine } from '@adp/machine';
import { listSkabExperiments, loadSkabExperiment, SKAB_TRAIN_ROWS } from './skab-data.js';
import { addExperiment, emptyCounts, skabScore } from './skab-run.js';
import { listUcrSeries, loadUcrSeries } from './ucr-data.js';
import { isUcrHit } from './ucr-scorer.js';

export const SWEEP_SENSITIVITIES = [50, 80, 90, 95, 97, 99] as const;
/** A baseline holds at most this many points (the API's limit): the training part's last ones. */
const BASELINE_MAX_POINTS = 8640;

export interface UcrMachineRow {
  readonly sensitivity: number;
  /** Per cent of the test parts' points outside the anomaly's scoring window that are flagged. */
  readonly healthyFlagged: number;
  /** Series with at least one such point. */
  readonly seriesWithFalseFlags: number;
  /** Series whose anomaly window holds a flagged point. */
  readonly anomaliesFlagged: number;
  readonly series: number;
}

async function skabRows(dir: string): Promise<string[]> {
  const experiments = await Promise.all((await listSkabExperiments(dir)).map((id) => loadSkabExperiment(dir, id)));
  const models = experiments.map((experiment) =>
    fitMachineModel({ channels: [...experiment.channels], values: experiment.values.map((values) => values.slice(0, SKAB_TRAIN_ROWS)) }),
  );
  return SWEEP_SENSITIVITIES.map((sensitivity) => {
    const counts = emptyCounts();
    experiments.forEach((experiment, index) => {
      const verdict = judgeMachine(models[index]!, experiment.values.map((values) => values.slice(SKAB_TRAIN_ROWS)), sensitivity);
      addExperiment(counts, verdict.isAnomaly, experiment.anomaly.slice(SKAB_TRAIN_ROWS), verdict.episodes.map(({ start, end }) => [start, end] as const));
    });
    const score = skabScore(counts);
    return `| ${sensitivity} | ${score.f1.toFixed(3)} | ${score.far.toFixed(1)} % | ${score.mar.toFixed(1)} % | ${counts.faultsFound} / ${counts.faults} | ${counts.falseEpisodes} of ${counts.episodes} |`;
  });
}

export async function ucrMachineRows(dir: string): Promise<UcrMachineRow[]> {
  const rows = SWEEP_SENSITIVITIES.map((sensitivity) => ({ sensitivity, healthyFlags: 0, healthyPoints: 0, seriesWithFalseFlags: 0, anomaliesFlagged: 0 }));
  const infos = await listUcrSeries(dir);
  for (const info of infos) {
    const series = await loadUcrSeries(dir, info);
    const values = Array.from(series.values);
    const model = fitMachineModel({ channels: ['value'], values: [values.slice(Math.max(0, series.trainEnd - BASELINE_MAX_POINTS), series.trainEnd)] });
    const test = values.slice(series.trainEnd);
    for (const row of rows) {
      const verdict = judgeMachine(model, [test], row.sensitivity);
      let falseFlags = 0;
      let inAnomaly = false;
      verdict.isAnomaly.forEach((flag, i) => {
        const inside = isUcrHit(series.trainEnd + i + 1, series);
        if (!inside) row.healthyPoints++;
        if (!flag) return;
        if (inside) inAnomaly = true;
        else falseFlags++;
      });
      row.healthyFlags += falseFlags;
      if (falseFlags > 0) row.seriesWithFalseFlags++;
      if (inAnomaly) row.anomaliesFlagged++;
    }
  }
  return rows.map(({ sensitivity, healthyFlags, healthyPoints, seriesWithFalseFlags, anomaliesFlagged }) => ({
    sensitivity,
    healthyFlagged: Number(((100 * healthyFlags) / Math.max(1, healthyPoints)).toFixed(1)),
    seriesWithFalseFlags,
    anomaliesFlagged,
    series: infos.length,
  }));
}

async function main(): Promise<void> {
  const shared = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..', 'shared', 'datasets');
  const skabDir = path.join(shared, 'skab_dev');
  const ucrDir = path.join(shared, 'ucr_dev');
  if ((await listSkabExperiments(skabDir)).length === 0) {
    process.stdout.write(`SKAB development set not found at ${skabDir}: skipped\n`);
  } else {
    process.stdout.write('SKAB dev (20 experiments, the machine model)\n\n| sensitivity | F1 | false alarms | missed | faults found | false episodes |\n|---|---|---|---|---|---|\n');
    process.stdout.write(`${(await skabRows(skabDir)).join('\n')}\n\n`);
  }
  const ucr = await ucrMachineRows(ucrDir).catch((err: unknown) => {
    process.stdout.write(`UCR development set not readable at ${ucrDir} (${err instanceof Error ? err.message : String(err)}): skipped\n`);
    return null;
  });
  if (ucr === null) return;
  process.stdout.write('UCR dev (each series a machine of one channel)\n\n| sensitivity | healthy points flagged | series with a false flag | anomalies flagged |\n|---|---|---|---|\n');
  for (const row of ucr) {
    process.stdout.write(`| ${row.sensitivity} | ${row.healthyFlagged.toFixed(1)} % | ${row.seriesWithFalseFlags} of ${row.series} | ${row.anomaliesFlagged} of ${row.series} |\n`);
  }
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) {
  main().catch((err: unknown) => {
    process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exitCode = 1;
  });
}
