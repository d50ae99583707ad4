// The committed benchmark files are summaries: only what docs/benchmark.md's tables and the line
// under each show, so a full run changes a few kilobytes and the tests (bench/test/) can check the
// page against them. A run's every figure (settings, series, time shares, means, samples, the
// printed table) goes to `.cache/bench/` beside them, which git ignores.
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

/** Where a full run's every figure goes (`.cache/bench/<name>`), not committed. */
export function fullResultsPath(name: string): string {
  return fileURLToPath(new URL(`../.cache/bench/${name}`, import.meta.url));
}

/** Writes `value` as indented JSON, creating the directory. */
export async function writeJson(path: string, value: unknown): Promise<void> {
  await mkdir(dirname(path), { recursive: true });
  await writeFile(path, `${JSON.stringify(value, null, 2)}\n`);
}

export interface RunRow {
  readonly section: string;
  readonly name: string;
  readonly points: number;
  readonly latency: { readonly p50Ms: number; readonly p99Ms: number };
  readonly throughput: number;
  readonly throughputUnit: string;
  readonly remark?: string;
}

export interface RunResult {
  readonly date: string;
  readonly durationS: number;
  readonly machine: {
    readonly cpuModel: string;
    readonly cores: number;
    readonly node: string;
    readonly loadAverageAtStart: readonly number[];
    readonly loadAverageAtEnd: readonly number[];
  };
  readonly rows: readonly RunRow[];
}

/** bench/results.json: the table of docs/benchmark.md ("Current figures") and the line under it. */
export function runSummary(run: RunResult): RunResult {
  const { cpuModel, cores, node, loadAverageAtStart, loadAverageAtEnd } = run.machine;
  return {
    date: run.date,
    durationS: run.durationS,
    machine: { cpuModel, cores, node, loadAverageAtStart, loadAverageAtEnd },
    rows: run.rows.map((row) => ({
      section: row.section,
      name: row.name,
      points: row.points,
      latency: { p50Ms: row.latency.p50Ms, p99Ms: row.latency.p99Ms },
      throughput: row.throughput,
      throughputUnit: row.throughputUnit,
      ...(row.remark ? { remark: row.remark } : {}),
    })),
  };
}

export interface StreamingRow {
  readonly name: string;
  readonly machines: number;
  readonly points: number;
  readonly windowPoints: number;
  readonly pointsPerSecond: number;
  readonly lag?: { readonly p50Ms: number; readonly p99Ms: number };
  readonly perPointMs?: Readonly<Record<string, number>>;
  readonly batches: number;
  readonly meanBatchMessages: number;
}

/** The machine of a streaming run, as bench/streaming.ts records it (among other fields). */
export type StreamingEnvironment = {
  readonly node: string;
  readonly cpus: number;
  readonly cpuModel: string;
  readonly loadAverage1m: number;
};

export interface StreamingResult {
  readonly generatedAt: string;
  readonly environment: StreamingEnvironment;
  readonly rows: readonly StreamingRow[];
}

/** bench/streaming-results.json: the streaming table of docs/benchmark.md and the machine under it. */
export function streamingSummary(run: Omit<StreamingResult, 'environment'> & { readonly environment: Readonly<Record<string, unknown>> }): StreamingResult {
  const { node, cpus, cpuModel, loadAverage1m } = run.environment as unknown as StreamingEnvironment;
  return {
    generatedAt: run.generatedAt,
    environment: { node, cpus, cpuModel, loadAverage1m },
    rows: run.rows.map((row) => ({
      name: row.name,
      machines: row.machines,
      points: row.points,
      windowPoints: row.windowPoints,
      pointsPerSecond: row.pointsPerSecond,
      ...(row.lag ? { lag: { p50Ms: row.lag.p50Ms, p99Ms: row.lag.p99Ms } } : {}),
      batches: row.batches,
      meanBatchMessages: row.meanBatchMessages,
      ...(row.perPointMs?.['detect'] !== undefined ? { perPointMs: { detect: row.perPointMs['detect'] } } : {}),
    })),
  };
}
