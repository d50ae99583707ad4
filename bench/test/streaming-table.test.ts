// The streaming table of docs/benchmark.md against the committed bench/streaming-results.json: the
// table is that run's, row for row, to the digits printed, with the run's date and machine under it;
// the file is a summary (bench/summary.ts), nothing more.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { markdownTableRows, printedAs } from '../../test/markdown.js';
import { streamingSummary, type StreamingResult } from '../summary.js';

const PAGE = readFileSync(fileURLToPath(new URL('../../docs/benchmark.md', import.meta.url)), 'utf8');

const results = JSON.parse(readFileSync(fileURLToPath(new URL('../streaming-results.json', import.meta.url)), 'utf8')) as StreamingResult;

const HEADER = '| row | machines | points | window | points/s | lag p50 ms | lag p99 ms | batches (mean messages) | detect ms/point |';

/** An empty cell where the run has no figure; otherwise the figure to the digits printed. */
function sameFigure(cell: string, measured: number | undefined): boolean {
  return measured === undefined ? cell === '' : printedAs(cell, measured);
}

describe('the streaming table of docs/benchmark.md', () => {
  it('is the committed run, row for row', () => {
    const rows = markdownTableRows(PAGE, HEADER);
    expect(rows).toHaveLength(results.rows.length);
    rows.forEach(([name, machines, points, window, rate, lagP50, lagP99, batches, detect], index) => {
      const run = results.rows[index]!;
      const label = `${run.name} (row ${index + 1})`;
      expect(name, label).toBe(run.name);
      expect(printedAs(machines!, run.machines), label).toBe(true);
      expect(printedAs(points!, run.points), label).toBe(true);
      expect(printedAs(window!, run.windowPoints), label).toBe(true);
      expect(printedAs(rate!, run.pointsPerSecond), `${label}: points/s ${rate} against ${run.pointsPerSecond}`).toBe(true);
      expect(sameFigure(lagP50!, run.lag?.p50Ms), `${label}: lag p50 ${lagP50}`).toBe(true);
      expect(sameFigure(lagP99!, run.lag?.p99Ms), `${label}: lag p99 ${lagP99}`).toBe(true);
      const [count, mean] = /^([\d,]+) \(([\d,]+)\)$/.exec(batches!)?.slice(1) ?? [];
      expect(printedAs(count ?? 'x', run.batches) && printedAs(mean ?? 'x', run.meanBatchMessages), `${label}: batches ${batches}`).toBe(true);
      expect(sameFigure(detect!, run.perPointMs?.detect), `${label}: detect ${detect}`).toBe(true);
    });
  });

  it('says under the table when and on what the run was made', () => {
    const line = /Figures of (\d{4}-\d\d-\d\d) from `bench\/streaming-results\.json`: (\d+) cores of an? ([^,]+), load average [\d.]+ at the start and ([\d.]+) at the end/.exec(PAGE);
    expect(line).not.toBeNull();
    const [, date, cores, model, endLoad] = line!;
    expect(date).toBe(results.generatedAt.slice(0, 10));
    expect(Number(cores)).toBe(results.environment.cpus);
    for (const word of model!.split(' ')) expect(results.environment.cpuModel).toContain(word);
    expect(printedAs(endLoad!, results.environment.loadAverage1m)).toBe(true);
  });

  it('is committed as its summary: what the page shows, nothing more', () => {
    expect(streamingSummary(results)).toEqual(results);
  });
});
