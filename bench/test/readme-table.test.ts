// The benchmark table of docs/benchmark.md against the committed bench/results.json: the table is that
// run's, row for row, each latency and throughput as the run measured it to the digits printed, and
// the line under it is that run's machine; the file is a summary (bench/summary.ts), nothing more.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { markdownTableRows, printedAs } from '../../test/markdown.js';
import { runSummary, type RunResult } from '../summary.js';

const PAGE = readFileSync(fileURLToPath(new URL('../../docs/benchmark.md', import.meta.url)), 'utf8');

const results = JSON.parse(readFileSync(fileURLToPath(new URL('../results.json', import.meta.url)), 'utf8')) as RunResult;

const HEADER = '| what | case | points | p50 ms | p99 ms | throughput | notes |';

describe("the benchmark table of docs/benchmark.md", () => {
  it('is the committed run, row for row', () => {
    const rows = markdownTableRows(PAGE, HEADER);
    expect(rows).toHaveLength(results.rows.length);
    rows.forEach(([, what, points, p50, p99, throughput, notes], index) => {
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
      expect(notes, label).toBe(run.remark ?? '');
    });
  });

  it("says under the table when and on what the run was made", () => {
    const { cpuModel, cores, node, loadAverageAtStart, loadAverageAtEnd } = results.machine;
    const when = `${results.date.slice(0, 10)} ${results.date.slice(11, 16)} UTC`;
    expect(PAGE).toContain(
      `${when}, ${cpuModel}, ${cores} cores, Node ${node}; load average ${loadAverageAtStart[0]} at the start, ` +
        `${loadAverageAtEnd[0]} at the end; ${results.durationS} s.`,
    );
  });

  it('is committed as its summary: what the page shows, nothing more', () => {
    expect(runSummary(results)).toEqual(results);
  });

  it('reads printed numbers at their own digits', () => {
    expect(printedAs('1,034', 1033.94)).toBe(true);
    expect(printedAs('26.9', 26.9)).toBe(true);
    expect(printedAs('558', 544.87)).toBe(false);
    expect(printedAs('1', 0.99)).toBe(true);
    expect(printedAs('36', 36.6)).toBe(false);
  });
});
