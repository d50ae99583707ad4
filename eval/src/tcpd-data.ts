// Loading the local TCPD subset (../shared/datasets/tcpd): datasets/<name>/<name>.json in the
// format of schema.json, and annotations.json ({ series: { annotatorId: [0-based indices] } }).
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { requireDataset } from './datasets.js';

/**
 * The 25 univariate series that ANCHORS.md averages over (n_dim 1, data present, without
 * quality_control_1..5 and uk_coal_employ, which the benchmark leaves out of its aggregates).
 */
export const TCPD_SERIES = [
  'bank', 'brent_spot', 'businv', 'centralia', 'children_per_woman', 'co2_canada', 'construction',
  'debt_ireland', 'gdp_argentina', 'gdp_croatia', 'gdp_iran', 'gdp_japan', 'global_co2',
  'homeruns', 'jfk_passengers', 'lga_passengers', 'nile', 'ozone', 'rail_lines', 'seatbelts',
  'shanghai_license', 'unemployment_nl', 'us_population', 'usd_isk', 'well_log',
] as const;

export interface TcpdSeries {
  readonly name: string;
  readonly nObs: number;
  /** One finite value per observation; missing observations filled (see fillMissing). */
  readonly values: readonly number[];
  /** Indices that were missing in the file and were filled. */
  readonly missingIndices: readonly number[];
  /** One change-point list per annotator (may be empty), in annotator-id order. */
  readonly annotations: readonly (readonly number[])[];
}

/**
 * TCPD marks missing observations with null or a non-numeric entry. The changepoint endpoint
 * takes finite values only and the metrics index the original positions, so a missing value is
 * replaced in place (never dropped): linear interpolation between the nearest observed
 * neighbours, the nearest observed value at the ends. None of the 25 series has a gap today.
 */
export function fillMissing(raw: readonly unknown[]): { values: number[]; missingIndices: number[] } {
  const observed = raw.map((v) => (typeof v === 'number' && Number.isFinite(v) ? v : undefined));
  const missingIndices = observed.flatMap((v, i) => (v === undefined ? [i] : []));
  const known = observed.flatMap((v, i) => (v === undefined ? [] : [i]));
  if (known.length === 0) throw new RangeError('a series with no observed value');
  const values = observed.map((v, i) => {
    if (v !== undefined) return v;
    let hi = known.findIndex((k) => k > i);
    if (hi < 0) hi = known.length;
    const left = known[hi - 1];
    const right = known[hi];
    if (left === undefined) return observed[right as number] as number;
    if (right === undefined) return observed[left] as number;
    const a = observed[left] as number;
    const b = observed[right] as number;
    return a + ((b - a) * (i - left)) / (right - left);
  });
  return { values, missingIndices };
}

interface TcpdFile {
  name: string;
  n_obs: number;
  n_dim: number;
  series: { raw: unknown[] }[];
}

export async function loadTcpdSeries(
  datasetDir: string,
  names: readonly string[] = TCPD_SERIES,
): Promise<TcpdSeries[]> {
  await requireDataset('TCPD subset', datasetDir);
  const annotations = JSON.parse(
    await readFile(path.join(datasetDir, 'annotations.json'), 'utf8'),
  ) as Record<string, Record<string, number[]>>;
  return Promise.all(
    names.map(async (name): Promise<TcpdSeries> => {
      const file = JSON.parse(
        await readFile(path.join(datasetDir, 'datasets', name, `${name}.json`), 'utf8'),
      ) as TcpdFile;
      const column = file.series[0];
      if (file.n_dim !== 1 || file.series.length !== 1 || column === undefined) {
        throw new RangeError(`${name}: not univariate`);
      }
      if (column.raw.length !== file.n_obs) throw new RangeError(`${name}: n_obs mismatch`);
      const byAnnotator = annotations[name];
      if (byAnnotator === undefined) throw new RangeError(`${name}: no annotations`);
      const ids = Object.keys(byAnnotator).sort((a, b) => Number(a) - Number(b));
      return {
        name,
        nObs: file.n_obs,
        ...fillMissing(column.raw),
        annotations: ids.map((id) => byAnnotator[id] ?? []),
      };
    }),
  );
}
