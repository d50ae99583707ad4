// The SKAB development set (../shared/datasets/skab_dev): a water pump's eight sensors a second,
// each experiment a healthy start and a closed valve, `;`-separated with `anomaly` labels.
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';

/** The benchmark's protocol: the first rows of each experiment are the machine's healthy data. */
export const SKAB_TRAIN_ROWS = 400;

export interface SkabExperiment {
  /** `valve1/3`: the folder and the file's number. */
  readonly id: string;
  readonly channels: readonly string[];
  /** Per row, ISO 8601 (the file's local timestamps, read as UTC). */
  readonly timestamps: readonly string[];
  /** Channel-major readings: `values[c][row]`. */
  readonly values: readonly (readonly number[])[];
  /** Per row: labelled anomalous. */
  readonly anomaly: readonly boolean[];
}

/** The experiments' ids, folder by folder, files by number; none when the folder is absent. */
export async function listSkabExperiments(dir: string): Promise<string[]> {
  const ids: string[] = [];
  for (const folder of ['valve1', 'valve2']) {
    let names: string[];
    try {
      names = await readdir(path.join(dir, folder));
    } catch {
      continue;
    }
    const numbers = names.filter((name) => /^\d+\.csv$/.test(name)).map((name) => Number(name.slice(0, -4)));
    for (const number of numbers.sort((a, b) => a - b)) ids.push(`${folder}/${number}`);
  }
  return ids;
}

/** Parses one experiment's file text (its header names the channels between the timestamp and the labels). */
export function parseSkabExperiment(id: string, text: string): SkabExperiment {
  const lines = text.trim().split(/\r?\n/);
  const header = (lines[0] ?? '').split(';');
  const anomalyColumn = header.indexOf('anomaly');
  if (header[0] !== 'datetime' || anomalyColumn < 2) throw new RangeError(`${id}: not a SKAB experiment (header ${header.join(';')})`);
  // Channel names as the API takes them: `Volume Flow RateRMS` becomes `Volume_Flow_RateRMS`.
  const channels = header.slice(1, anomalyColumn).map((name) => name.replace(/[^A-Za-z0-9_.:-]/g, '_'));
  const values = channels.map(() => [] as number[]);
  const timestamps: string[] = [];
  const anomaly: boolean[] = [];
  for (const [index, line] of lines.slice(1).entries()) {
    const cells = line.split(';');
    const readings = channels.map((_, c) => Number(cells[c + 1]));
    if (readings.some((value) => !Number.isFinite(value))) throw new RangeError(`${id}: row ${index + 1} has a reading that is not a number`);
    readings.forEach((value, c) => values[c]!.push(value));
    timestamps.push(`${(cells[0] ?? '').replace(' ', 'T')}Z`);
    anomaly.push(Number(cells[anomalyColumn]) === 1);
  }
  return { id, channels, timestamps, values, anomaly };
}

export async function loadSkabExperiment(dir: string, id: string): Promise<SkabExperiment> {
  return parseSkabExperiment(id, await readFile(path.join(dir, `${id}.csv`), 'utf8'));
}
