// Loading the NAB dev split (../shared/datasets/nab_dev): data/**.csv (timestamp,value),
// labels/combined_windows.json (windows as timestamps) and config/profiles.json.
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { requireDataset } from './datasets.js';
import type { NabProfile, NabWindow } from './nab-scorer.js';

export interface NabSeries {
  /** Path relative to data/, as combined_windows.json names it. */
  readonly file: string;
  readonly timestampsMs: readonly number[];
  readonly values: readonly number[];
  readonly windows: readonly NabWindow[];
}

export interface NabCorpus {
  readonly series: readonly NabSeries[];
  readonly profiles: readonly NabProfile[];
}

/** The profile order used in tables and results: standard, low FP, low FN. */
export const NAB_PROFILE_NAMES = ['standard', 'reward_low_FP_rate', 'reward_low_FN_rate'] as const;
export type NabProfileName = (typeof NAB_PROFILE_NAMES)[number];

/** "2014-04-10 07:15:00.000000" or "2014-04-10 07:15:00" as UTC epoch milliseconds. */
export function parseNabTimestamp(text: string): number {
  const m = /^(\d{4})-(\d{2})-(\d{2})[ T](\d{2}):(\d{2}):(\d{2})(?:\.\d+)?$/.exec(text.trim());
  if (m === null) throw new SyntaxError(`not a NAB timestamp: ${JSON.stringify(text)}`);
  const [, y, mo, d, h, mi, s] = m.map(Number) as [number, number, number, number, number, number, number];
  return Date.UTC(y, mo - 1, d, h, mi, s);
}

export function parseNabCsv(file: string, text: string): { timestampsMs: number[]; values: number[] } {
  const lines = text.split(/\r?\n/).filter((l) => l.trim() !== '');
  const header = lines.shift();
  if (header?.trim() !== 'timestamp,value') throw new SyntaxError(`${file}: unexpected header ${header ?? ''}`);
  const timestampsMs: number[] = [];
  const values: number[] = [];
  for (const line of lines) {
    const comma = line.indexOf(',');
    const value = Number(line.slice(comma + 1));
    if (comma < 0 || !Number.isFinite(value)) throw new SyntaxError(`${file}: bad row ${line}`);
    timestampsMs.push(parseNabTimestamp(line.slice(0, comma)));
    values.push(value);
  }
  return { timestampsMs, values };
}

/**
 * Turns a window given as [start, end] timestamps into inclusive row indices: the rows whose
 * timestamp lies within [start, end]. (NAB's rows are matched by timestamp, not by position; in
 * this split every window edge is an exact row timestamp.)
 */
export function windowRows(
  file: string,
  timestampsMs: readonly number[],
  startMs: number,
  endMs: number,
): NabWindow {
  let startRow = -1;
  let endRow = -1;
  timestampsMs.forEach((t, i) => {
    if (t >= startMs && t <= endMs) {
      if (startRow < 0) startRow = i;
      endRow = i;
    }
  });
  if (startRow < 0) throw new RangeError(`${file}: a window matches no rows`);
  return { startRow, endRow };
}

export async function loadNabCorpus(datasetDir: string): Promise<NabCorpus> {
  await requireDataset('NAB dev split', datasetDir);
  const windowsJson = JSON.parse(
    await readFile(path.join(datasetDir, 'labels', 'combined_windows.json'), 'utf8'),
  ) as Record<string, [string, string][]>;
  const profilesJson = JSON.parse(
    await readFile(path.join(datasetDir, 'config', 'profiles.json'), 'utf8'),
  ) as Record<string, { CostMatrix: { tpWeight: number; fnWeight: number; fpWeight: number } }>;
  const profiles = NAB_PROFILE_NAMES.map((name): NabProfile => {
    const cm = profilesJson[name]?.CostMatrix;
    if (cm === undefined) throw new RangeError(`profiles.json lacks ${name}`);
    return { name, tpWeight: cm.tpWeight, fnWeight: cm.fnWeight, fpWeight: cm.fpWeight };
  });
  const files = Object.keys(windowsJson).sort();
  const series = await Promise.all(
    files.map(async (file): Promise<NabSeries> => {
      const { timestampsMs, values } = parseNabCsv(
        file,
        await readFile(path.join(datasetDir, 'data', file), 'utf8'),
      );
      const windows = (windowsJson[file] ?? []).map(([start, end]) =>
        windowRows(file, timestampsMs, parseNabTimestamp(start), parseNabTimestamp(end)),
      );
      windows.sort((a, b) => a.startRow - b.startRow);
      return { file, timestampsMs, values, windows };
    }),
  );
  return { series, profiles };
}
