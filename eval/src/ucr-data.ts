// Loading the UCR anomaly archive's development half (../shared/datasets/ucr_dev): one file per
// series, `<NNN>_UCR_Anomaly_<name>_<trainEnd>_<begin>_<end>.txt`, values one a line or all on one
// whitespace-separated line. Positions in the name are 1-based (the dataset README).
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { requireDataset } from './datasets.js';

export interface UcrSeriesInfo {
  /** The archive's series number (the file name's leading NNN). */
  readonly id: number;
  readonly name: string;
  readonly file: string;
  /** Points 1..trainEnd are anomaly-free training data. */
  readonly trainEnd: number;
  /** The labelled anomaly, 1-based and inclusive. */
  readonly begin: number;
  readonly end: number;
}

export interface UcrSeries extends UcrSeriesInfo {
  readonly values: Float64Array;
}

const FILE_NAME = /^(\d+)_UCR_Anomaly_(.+)_(\d+)_(\d+)_(\d+)\.txt$/;

/** The series a file name describes; null for a name that is not a series file. */
export function parseUcrFileName(file: string): UcrSeriesInfo | null {
  const match = FILE_NAME.exec(file);
  if (match === null) return null;
  const [, id, name, trainEnd, begin, end] = match;
  return { id: Number(id), name: name ?? '', file, trainEnd: Number(trainEnd), begin: Number(begin), end: Number(end) };
}

/** A file's values, whatever the mix of line breaks and spaces between them. */
export function parseUcrValues(text: string, file = 'series'): Float64Array {
  const tokens = text.split(/\s+/).filter((token) => token.length > 0);
  const values = new Float64Array(tokens.length);
  tokens.forEach((token, index) => {
    const value = Number(token);
    if (!Number.isFinite(value)) throw new RangeError(`${file}: value ${index + 1} is not a finite number (${token})`);
    values[index] = value;
  });
  return values;
}

/** Checks that the labels fit the values: a training part, then the anomaly inside the test part. */
export function checkUcrSeries(series: UcrSeries): void {
  const n = series.values.length;
  if (!(series.trainEnd >= 1 && series.trainEnd < series.begin && series.begin <= series.end && series.end <= n)) {
    throw new RangeError(`${series.file}: labels trainEnd ${series.trainEnd}, anomaly ${series.begin}..${series.end} do not fit ${n} points`);
  }
}

/** The series files of `<ucrDir>/data`, in series-number order. */
export async function listUcrSeries(ucrDir: string): Promise<UcrSeriesInfo[]> {
  await requireDataset('UCR dev half', ucrDir);
  const files = await readdir(path.join(ucrDir, 'data'));
  return files
    .map((file) => parseUcrFileName(file))
    .filter((info): info is UcrSeriesInfo => info !== null)
    .sort((a, b) => a.id - b.id);
}

export async function loadUcrSeries(ucrDir: string, info: UcrSeriesInfo): Promise<UcrSeries> {
  const text = await readFile(path.join(ucrDir, 'data', info.file), 'utf8');
  const series = { ...info, values: parseUcrValues(text, info.file) };
  checkUcrSeries(series);
  return series;
}

/**
 * The split constants are chosen on: the dev set holds even series numbers only, so `id mod 4`
 * halves it, 0 -> "A" (where any constant is chosen), 2 -> "B" (reported beside it).
 */
export function ucrHalf(id: number): 'A' | 'B' {
  return id % 4 === 0 ? 'A' : 'B';
}
