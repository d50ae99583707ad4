// The benchmark table of docs/benchmark.md against the committed bench/results.json: the table is that
// run's, row for row, each latency and throughput as the run measured it to the digits printed.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { markdownTableRows, printedAs } from '../../test/markdown.js';

const PAGE = readFileSync(fileURLToPath(new URL('../../docs/benchmark.md', import.meta.url)), 'utf8');

interface BenchRow {
  readonly name: string;
  readonly points: number;
  readonly latency: { readonly p50Ms: number; readonly p99Ms: number };
  readonly throughput: number;
  readonly throughputUnit: string;
}
const results = JSON.parse(readFileSync(fileURLToPath(new URL('../results.json', import.meta.url)), 'utf8')) as {
  readonly rows: readonly BenchRow[];
};

const HEADER = '| what | case | points | p50 ms | p99 ms | throughput | notes |';

describe("the benchmark table of docs/benchmark.md", () => {
  it('is the committed run, row for row', () => {
    const rows = markdownTableRows(PAGE, HEADER);
    expect(rows).toHaveLength(results.rows.length);
    rows.forEach(([, what, points, p50, p99, throughput], index) => {
      const run = results.rows[index]!;
      const label = `${run.name} (row ${index + 1})`;
      // The case names the operation the run measured (its first word: entire/detect, POST, judgeStream, ...).
      expect(what, label).toContain(run.name.split(/[ ,]/)[0]!);
      expect(points!.split(' ')[0], label).toBe(run.points.toLocaleString('en-US'));
      expect(printedAs(p50!, run.latency.p50Ms), `${label}: p50 ${p50} against ${run.latency.p50Ms}`).toBe(true);
      expect(printedAs(p99!, run.latency.p99Ms), `${label}: p99 ${p99} against ${run.latency.p99Ms}`).toBe(true);
      const [value, unit] = throughput!.split(' ');
      expect(unit, label).toBe(run.throughputUnit);
      expect(printedAs(value!, run.throughput), `${label}: throughput ${value} against ${run.throughput}`).toBe(true);
    });
  });

  it('reads printed numbers at their own digits', () => {
    expect(printedAs('1,034', 1033.94)).toBe(true);
    expect(printedAs('26.9', 26.9)).toBe(true);
    expect(printedAs('558', 544.87)).toBe(false);
    expect(printedAs('1', 0.99)).toBe(true);
    expect(printedAs('36', 36.6)).toBe(false);
  });
});
