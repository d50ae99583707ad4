// README.md's rule and constant tables against the engine's own lists: every rule of
// LAST_POINT_RULES, CHANGEPOINT_RULES and ENTIRE_SERIES_RULES in order, with what it does, and
// every constant of TUNING once, with its value, what it was chosen on and the folds' verdict.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { CHANGEPOINT_RULES, ENTIRE_SERIES_RULES, LAST_POINT_RULES, TUNING } from '../src/index.js';

const README = readFileSync(new URL('../README.md', import.meta.url), 'utf8');

/** The body rows of every table whose header starts with `header`, each cell trimmed. */
function tables(header: string): string[][][] {
  const lines = README.split('\n');
  const found: string[][][] = [];
  lines.forEach((line, start) => {
    if (!line.startsWith(header)) return;
    const rows: string[][] = [];
    for (const row of lines.slice(start + 2)) {
      if (!row.startsWith('|')) break;
      rows.push(row.slice(1, -1).split(' | ').map((cell) => cell.trim()));
    }
    found.push(rows);
  });
  return found;
}

/** What a constant was chosen on, in the README's words, from TUNING's `tunedOn`. */
function chosenOn(tunedOn: string): string {
  if (tunedOn.startsWith('not tuned')) return 'not tuned';
  if (tunedOn.startsWith('TCPD')) return 'TCPD';
  if (tunedOn.startsWith('NAB dev through row (a)')) return 'NAB dev, folds on row (a)';
  if (tunedOn.startsWith('NAB dev through entire/detect, leave-one-category-out')) return 'NAB dev, folds on row (c)';
  if (tunedOn.includes('through entire/detect')) return 'NAB dev, row (c)';
  if (tunedOn.includes('through the judge')) return 'NAB dev, the judge against detectStream';
  if (tunedOn.includes('streaming benchmark series')) return 'NAB dev and the streaming benchmark';
  if (tunedOn.startsWith('NAB dev')) return 'NAB dev';
  throw new Error(`a tunedOn the README has no words for: ${tunedOn}`);
}

describe("the engine's README", () => {
  it("lists the rules of last-point, changepoint and entire-series detection, each in the engine's order, with what it does", () => {
    const rules = (list: readonly { name: string; does: string }[]): string[][] => list.map((r) => [`\`${r.name}\``, r.does]);
    expect(tables('| rule | what it does |')).toEqual([rules(LAST_POINT_RULES), rules(CHANGEPOINT_RULES), rules(ENTIRE_SERIES_RULES)]);
  });

  it('lists every tuned constant once with its value, what it was chosen on and the folds\' verdict', () => {
    const [rows, ...others] = tables('| constant | value | chosen on |');
    expect(others).toEqual([]);
    const tuning = TUNING as Readonly<Record<string, { value: number; tunedOn: string; folds?: string }>>;
    expect(rows).toEqual(
      Object.entries(tuning).map(([name, t]) => [
        `\`${name}\``,
        String(t.value),
        chosenOn(t.tunedOn),
        // The reason a move was not taken is TUNING's to give; the table says that it was not.
        t.folds === undefined ? '' : t.folds.replace(/ \(not taken.*$/, ' (not taken)'),
      ]),
    );
  });
});
