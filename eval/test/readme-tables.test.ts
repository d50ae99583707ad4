// The evaluation and ablation tables of docs/evaluation.md (the README's detection quality page) against the committed eval/results.json: every
// figure printed there is the committed run's, rounded as printed, the engine row names the
// version that run measured, and every engine variant of the run has exactly one ablation row.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { markdownTableRows } from '../../test/markdown.js';

const PAGE = readFileSync(fileURLToPath(new URL('../../docs/evaluation.md', import.meta.url)), 'utf8');

interface Profiles {
  readonly standard: { readonly score: number };
  readonly reward_low_FP_rate: { readonly score: number };
  readonly reward_low_FN_rate: { readonly score: number };
}
interface Results {
  readonly engine: { readonly version: string };
  readonly nab: { readonly detectors: readonly { readonly name: string; readonly profiles: Profiles }[] };
  readonly tcpd: { readonly detectors: readonly { readonly name: string; readonly f1: number; readonly cover: number }[] };
  readonly anchors: readonly { readonly name: string; readonly nab?: readonly number[]; readonly tcpdF1?: number; readonly tcpdCover?: number }[];
}
const results = JSON.parse(readFileSync(fileURLToPath(new URL('../results.json', import.meta.url)), 'utf8')) as Results;

/** NAB's three normalised scores as the page prints them (one decimal). */
function nabCells(name: string): string[] {
  const detector = results.nab.detectors.find((d) => d.name === name);
  if (detector === undefined) throw new Error(`no NAB detector ${name} in eval/results.json`);
  const { standard, reward_low_FP_rate: lowFp, reward_low_FN_rate: lowFn } = detector.profiles;
  return [standard.score, lowFp.score, lowFn.score].map((score) => score.toFixed(1));
}

/** TCPD's F1 and cover as the page prints them (three decimals). */
function tcpdCells(name: string): string[] {
  const detector = results.tcpd.detectors.find((d) => d.name === name);
  if (detector === undefined) throw new Error(`no TCPD detector ${name} in eval/results.json`);
  return [detector.f1, detector.cover].map((value) => value.toFixed(3));
}

function anchor(name: string): Results['anchors'][number] {
  const found = results.anchors.find((a) => a.name === name);
  if (found === undefined) throw new Error(`no anchor ${name} in eval/results.json`);
  return found;
}

// The page's row label (up to its first " (" explanation) -> the run's engine variant.
const ABLATION_ROWS: Readonly<Record<string, string>> = {
  default: 'default',
  'no score calibration': 'no-calibration',
  'no asymmetric band': 'no-asymmetric-band',
  'no refractory': 'no-refractory',
  'no echo rule': 'no-echo',
  'no new-level alarm': 'no-new-level',
  'no past range': 'no-past-range',
  'no familiar-range rule': 'no-familiar-range',
  'no routine-miss rule': 'no-routine-miss',
  'sustained alarm also on a point the forecast meets': 'no-sustained-quiet',
  'no stuck-value alarm': 'no-stuck',
  'no period stability': 'no-period-stability',
  'last point needs 3 cycles for a period': 'no-two-cycle-period',
  'no sustained-error alarm': 'no-sustained-error',
  'no seasonal check': 'no-seasonal-check',
  'streaming window = suggested window only': 'window-suggested-only',
  'incremental streaming judge': 'incremental',
  'changepoints: no segmentation refinement': 'cp-no-refine',
  'changepoints: no detrending': 'cp-no-detrend',
  'changepoints: split test without trend': 'cp-no-split-trend',
};

describe("the evaluation tables of docs/evaluation.md", () => {
  it('print the committed run: the engine at its version, the references and the anchors', () => {
    const rows = markdownTableRows(PAGE, '| detector | NAB standard | NAB low FP | NAB low FN | TCPD F1 | TCPD cover |');
    const expected = new Map<string, string[]>([
      [`engine ${results.engine.version}, service defaults`, [...nabCells('engine: default'), ...tcpdCells('engine: default')]],
      ['rolling z-score (reference)', [...nabCells('rolling z-score (reference)'), '', '']],
      ['spectral residual (reference)', [...nabCells('spectral residual (reference)'), '', '']],
      ['never fires (NAB null, TCPD zero)', [...nabCells('null / zero (never fires)'), ...tcpdCells('null / zero (never fires)')]],
      ['ARTime (published, 35 dev files)', [...anchor('ARTime (published)').nab!.map((s) => s.toFixed(1)), '', '']],
      ['Numenta HTM (published, 35 dev files)', [...anchor('Numenta HTM (published)').nab!.map((s) => s.toFixed(1)), '', '']],
      ['binseg, default (published, 25 series)', ['', '', '', anchor('binseg default (published)').tcpdF1!.toFixed(3), anchor('binseg default (published)').tcpdCover!.toFixed(3)]],
      ['bocpd, best parameters per series (published oracle)', ['', '', '', anchor('bocpd oracle (published)').tcpdF1!.toFixed(3), '']],
    ]);
    expect(new Map(rows.map(([label, ...cells]) => [label!, cells]))).toEqual(expected);
  });

  it('give every engine variant of the run one ablation row with its figures', () => {
    const rows = markdownTableRows(PAGE, '| variant | NAB standard / low FP / low FN | TCPD F1 / cover |');
    const variants = rows.map(([label]) => {
      const key = label!.split(' (')[0]!;
      const variant = ABLATION_ROWS[key];
      if (variant === undefined) throw new Error(`an ablation row the test does not know: ${label}`);
      return variant;
    });
    const run = results.nab.detectors.filter((d) => d.name.startsWith('engine: ')).map((d) => d.name.slice('engine: '.length));
    expect([...variants].sort()).toEqual([...run].sort());
    rows.forEach(([, nab, tcpd], index) => {
      const name = `engine: ${variants[index]}`;
      const isChangepointVariant = variants[index]!.startsWith('cp-');
      expect(nab, name).toBe(isChangepointVariant ? '' : nabCells(name).join(' / '));
      const showsTcpd = name === 'engine: default' || isChangepointVariant;
      expect(tcpd, name).toBe(showsTcpd ? tcpdCells(name).join(' / ') : '');
    });
  });
});
