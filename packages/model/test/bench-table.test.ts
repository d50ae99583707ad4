// The fine-tuning table of this package's README against the committed bench/results.json: each
// case's seconds and loss at both sizes as the run measured them, to the digits printed; the line
// under the table is that run's model and machine; the file is a summary (bench/summary.ts), nothing more.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { markdownTableRows, printedAs } from '../../../test/markdown.js';
import { FINETUNE_TABLE_CASES, fineTuneSummary, type FineTuneResults } from '../bench/summary.js';

const README = readFileSync(fileURLToPath(new URL('../README.md', import.meta.url)), 'utf8');
const results = JSON.parse(readFileSync(fileURLToPath(new URL('../bench/results.json', import.meta.url)), 'utf8')) as FineTuneResults;

const HEADER = '| case | 1,000 points: s | loss | 8,640 points: s | loss |';

describe("the fine-tuning table of packages/model/README.md", () => {
  it('is the committed run, case for case, at both sizes', () => {
    const rows = markdownTableRows(README, HEADER);
    expect(rows.map(([label]) => label)).toEqual(FINETUNE_TABLE_CASES.map((c) => c.label));
    expect(results.fineTune.map((row) => row.points)).toEqual([1000, 8640]);
    rows.forEach(([label, ...cells], index) => {
      const { seconds, loss } = FINETUNE_TABLE_CASES[index]!;
      results.fineTune.forEach((run, size) => {
        const [printedSeconds, printedLoss] = [cells[2 * size]!, cells[2 * size + 1]!];
        const measured = [run[seconds], run[loss]];
        for (const [printed, value] of [[printedSeconds, measured[0]], [printedLoss, measured[1]]] as const) {
          if (value === undefined) expect(printed, `${label} at ${run.points}`).toBe('-');
          else expect(printedAs(printed, value), `${label} at ${run.points}: ${printed} against ${value}`).toBe(true);
        }
      });
    });
  });

  it('says under the table which model and machine the run had', () => {
    const { modelVersion, measuredAt, machine } = results;
    const when = `${measuredAt.slice(0, 10)} ${measuredAt.slice(11, 16)} UTC`;
    expect(README).toContain(`${modelVersion}, ${when}, ${machine.cpuModel}, ${machine.cpus} CPUs, load average ${machine.loadAverage[0]}`);
  });

  it('is committed as its summary: what the README shows, nothing more', () => {
    expect(fineTuneSummary(results)).toEqual(results);
  });
});
