// The tables of docs/evaluation.md (the README's detection quality page) against the committed
// summaries: every figure printed there is the committed run's (eval/results.json), rounded as
// printed; the ablation table is the last --ablation run's (eval/ablation.json), one row per
// variant; the folds' tables eval/tune.json's, entire/detect's eval/batch.json's, the sweep
// eval/sweep.json's, UCR dev eval/ucr.json's and the peers eval/peers.json's. A re-run that moves
// a figure fails until the page says so.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { markdownTableRows } from '../../test/markdown.js';

const PAGE = readFileSync(fileURLToPath(new URL('../../docs/evaluation.md', import.meta.url)), 'utf8');

interface ProfileScore {
  readonly score: number;
  readonly raw: number;
  readonly nullRaw: number;
  readonly perfectRaw: number;
  readonly lost: { readonly missedWindows: number; readonly lateDetections: number; readonly falsePositives: number };
}
interface Profiles {
  readonly standard: ProfileScore;
  readonly reward_low_FP_rate: ProfileScore;
  readonly reward_low_FN_rate: ProfileScore;
}
interface FoldSummary {
  readonly mean: number;
  readonly min: number;
  readonly max: number;
  /** Each fold's score, in the order of nab.categories. */
  readonly scores: readonly (number | null)[];
}
interface Results {
  readonly engine: { readonly version: string; readonly sourceSha256: string };
  readonly nab: {
    readonly categories: readonly string[];
    readonly detectors: readonly {
      readonly id: string;
      readonly name: string;
      readonly profiles: Profiles;
      readonly folds: { readonly standard: FoldSummary };
    }[];
    readonly windowRobustness: {
      readonly windows: readonly { readonly window: number | string; readonly standard: number }[];
      readonly spread: number;
      readonly vendor: { readonly standard: number };
    };
  };
  readonly tcpd: { readonly detectors: readonly { readonly id: string; readonly f1: number; readonly cover: number }[] };
  readonly anchors: readonly { readonly name: string; readonly nab?: readonly number[]; readonly tcpdF1?: number; readonly tcpdCover?: number }[];
  readonly peers: readonly { readonly name: string; readonly nab: readonly number[]; readonly date: string }[];
}
interface Ablation {
  readonly engine: { readonly version: string };
  readonly variants: readonly {
    readonly variant: string;
    readonly nab: { readonly standard: number; readonly reward_low_FP_rate: number; readonly reward_low_FN_rate: number } | null;
    readonly tcpd: { readonly f1: number; readonly cover: number } | null;
  }[];
}
const results = JSON.parse(readFileSync(fileURLToPath(new URL('../results.json', import.meta.url)), 'utf8')) as Results;
const ablation = JSON.parse(readFileSync(fileURLToPath(new URL('../ablation.json', import.meta.url)), 'utf8')) as Ablation;
const committed = (name: string): unknown => JSON.parse(readFileSync(fileURLToPath(new URL(`../${name}`, import.meta.url)), 'utf8'));
const batch = committed('batch.json') as { readonly table: string; readonly foldTable: string };
const peers = committed('peers.json') as { readonly table: string };
const sweep = committed('sweep.json') as {
  readonly points: readonly {
    readonly sensitivity: number;
    readonly precision: number | null;
    readonly recall: number;
    readonly detections: number;
    readonly recalledWindows: number;
    readonly windows: number;
    readonly nab: Readonly<Record<'standard' | 'reward_low_FP_rate' | 'reward_low_FN_rate', number>>;
  }[];
};
interface UcrFigures {
  readonly top1: number;
  readonly top3: number;
}
const ucr = committed('ucr.json') as {
  readonly rows: readonly {
    readonly name: string;
    readonly A: UcrFigures;
    readonly B: UcrFigures;
    readonly all: UcrFigures;
    readonly flaggedShare: number | null;
    readonly flags: { readonly healthyFlaggedShare: number; readonly anomalyFlaggedShare: number; readonly episodes: number; readonly falseEpisodes: number } | null;
  }[];
  readonly anchors: readonly ({ readonly name: string } & UcrFigures)[];
};
const tune = JSON.parse(readFileSync(fileURLToPath(new URL('../tune.json', import.meta.url)), 'utf8')) as {
  readonly engine: { readonly sourceSha256: string };
  readonly set: Readonly<Record<string, number>>;
  readonly rows: readonly { readonly row: string; readonly table: string }[];
};

function detector(id: string): Results['nab']['detectors'][number] {
  const found = results.nab.detectors.find((d) => d.id === id);
  if (found === undefined) throw new Error(`no NAB detector ${id} in eval/results.json`);
  return found;
}

/** NAB's three normalised scores as the page prints them (one decimal). */
function nabCells(id: string): string[] {
  const { standard, reward_low_FP_rate: lowFp, reward_low_FN_rate: lowFn } = detector(id).profiles;
  return [standard.score, lowFp.score, lowFn.score].map((score) => score.toFixed(1));
}

/** The standard profile's folds as the page prints them. */
function foldCell(folds: FoldSummary): string {
  return `${folds.mean.toFixed(1)} (${folds.min.toFixed(1)}–${folds.max.toFixed(1)})`;
}

/** TCPD's F1 and cover as the page prints them (three decimals). */
function tcpdCells(id: string): string[] {
  const found = results.tcpd.detectors.find((d) => d.id === id);
  if (found === undefined) throw new Error(`no TCPD detector ${id} in eval/results.json`);
  return [found.f1, found.cover].map((value) => value.toFixed(3));
}

function anchor(name: string): Results['anchors'][number] {
  const found = results.anchors.find((a) => a.name === name);
  if (found === undefined) throw new Error(`no anchor ${name} in eval/results.json`);
  return found;
}

// The page's row label (up to its first " (" explanation) -> the ablation's engine variant.
const ABLATION_ROWS: Readonly<Record<string, string>> = {
  default: 'default',
  'no score calibration': 'no-calibration',
  'no asymmetric band': 'no-asymmetric-band',
  'no refractory': 'no-refractory',
  'no echo rule': 'no-echo',
  'no new-level alarm': 'no-new-level',
  'no past range': 'no-past-range',
  'a long window judged whole': 'no-suggested-span',
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

describe('the evaluation tables of docs/evaluation.md', () => {
  it('print the headline rows of the committed run, what ships, with their folds', () => {
    const rows = markdownTableRows(PAGE, '| what ships (engine');
    const expected = new Map<string, string[]>(
      [
        ['(a) streaming worker, its defaults', 'shipped:stream'],
        ['(b) last/detect client, suggestedWindow + pastRange', 'shipped:last-client'],
        ['(c) entire/detect, each file', 'shipped:entire'],
      ].map(([label, id]) => [label!, [...nabCells(id!), foldCell(detector(id!).folds.standard)]]),
    );
    expect(new Map(rows.map(([label, ...cells]) => [label!, cells]))).toEqual(expected);
    expect(PAGE).toContain(`| what ships (engine ${results.engine.version}) |`);
  });

  it("print the window row of the committed run, with the vendor's suggested window beside it", () => {
    const rows = markdownTableRows(PAGE, '| last/detect client, NAB standard |');
    const r = results.nab.windowRobustness;
    expect(rows[0]).toEqual(['by window', ...r.windows.map((w) => w.standard.toFixed(1)), r.spread.toFixed(1), r.vendor.standard.toFixed(1)]);
    const ids = ['window:720', 'window:1441', 'shipped:last-client', 'window:8640'];
    expect(rows[1]).toEqual(['folds: mean (min–max)', ...ids.map((id) => foldCell(detector(id).folds.standard)), '', foldCell(detector('window:vendor').folds.standard)]);
  });

  it('print the references of the committed run: the harness window, the changepoints, the reference detectors and the anchors', () => {
    const rows = markdownTableRows(PAGE, '| reference | NAB standard | NAB low FP | NAB low FN | TCPD F1 | TCPD cover |');
    const expected = new Map<string, string[]>([
      ['harness window: first 15 % of each file (not shipped)', [...nabCells('engine:default'), '', '']],
      ['changepoint/detect, defaults', ['', '', '', ...tcpdCells('changepoint')]],
      ['rolling z-score (reference)', [...nabCells('zscore'), '', '']],
      ['spectral residual (reference)', [...nabCells('sr'), '', '']],
      ['never fires (NAB null, TCPD zero)', [...nabCells('null'), ...tcpdCells('null')]],
      ...results.peers.map((p): [string, string[]] => [`${p.name.replace(' (peer)', '')} (peer; npm run eval:peers, ${p.date})`, [...p.nab.map((v) => v.toFixed(1)), '', '']]),
      ['ARTime (published, 35 dev files)', [...anchor('ARTime (published)').nab!.map((s) => s.toFixed(1)), '', '']],
      ['Numenta HTM (published, 35 dev files)', [...anchor('Numenta HTM (published)').nab!.map((s) => s.toFixed(1)), '', '']],
      ['binseg, default (published, 25 series)', ['', '', '', anchor('binseg default (published)').tcpdF1!.toFixed(3), anchor('binseg default (published)').tcpdCover!.toFixed(3)]],
      ['bocpd, best parameters per series (published oracle)', ['', '', '', anchor('bocpd oracle (published)').tcpdF1!.toFixed(3), '']],
    ]);
    expect(new Map(rows.map(([label, ...cells]) => [label!, cells]))).toEqual(expected);
  });

  it('print where the headline rows (a) and (b) lose their raw points, and how many more the goal needs', () => {
    const rows = markdownTableRows(PAGE, '| NAB dev, raw points lost against a perfect detector |');
    // Issue 22's goal for rows (a) and (b), per profile.
    const goals = [
      ['standard', 'standard', 72],
      ['low FP', 'reward_low_FP_rate', 64],
      ['low FN', 'reward_low_FN_rate', 79],
    ] as const;
    const expected = [
      ['(a)', 'shipped:stream'],
      ['(b)', 'shipped:last-client'],
    ].flatMap(([row, id]) =>
      goals.map(([label, profile, goal]) => {
        const p = detector(id!).profiles[profile];
        // The parts add up to what the raw score falls short of a perfect one.
        expect(p.lost.missedWindows + p.lost.lateDetections + p.lost.falsePositives).toBeCloseTo(p.perfectRaw - p.raw, 9);
        const needed = p.nullRaw + (goal / 100) * (p.perfectRaw - p.nullRaw) - p.raw;
        return [
          `${row} ${label}`,
          p.lost.missedWindows.toFixed(1),
          p.lost.lateDetections.toFixed(1),
          p.lost.falsePositives.toFixed(1),
          `${p.raw.toFixed(1)} / ${p.perfectRaw}`,
          needed > 0 ? needed.toFixed(1) : 'met',
        ];
      }),
    );
    expect(rows).toEqual(expected);
  });

  it("print the folds' tables of the last eval:tune run, taken around the shipped engine, one per row", () => {
    expect(tune.rows.map((r) => r.row)).toEqual(['shipped:stream', 'shipped:entire']);
    for (const r of tune.rows) expect(PAGE, r.row).toContain(r.table);
    expect(tune.set).toEqual({});
    expect(tune.engine.sourceSha256).toBe(results.engine.sourceSha256);
  });

  it('print each headline row\'s leave-one-category-out folds, one row per held-out category', () => {
    const rows = markdownTableRows(PAGE, '| held out (NAB standard) | (a) | (b) | (c) |');
    const ids = ['shipped:stream', 'shipped:last-client', 'shipped:entire'];
    const { categories } = results.nab;
    expect(categories).toHaveLength(4);
    expect(rows).toEqual(categories.map((c, i) => [c, ...ids.map((id) => detector(id).folds.standard.scores[i]!.toFixed(1))]));
  });

  it("print entire/detect's rows and its event constants' folds as the last eval:batch run printed them", () => {
    expect(PAGE).toContain(batch.table);
    expect(PAGE).toContain(batch.foldTable);
  });

  it("print the peers' table of the last eval:peers run", () => {
    expect(PAGE).toContain(peers.table);
  });

  it('print the sensitivity sweep of the last --sweep run, one row per sensitivity', () => {
    const rows = markdownTableRows(PAGE, '| sensitivity | precision | recall |');
    expect(rows).toEqual(
      sweep.points.map((p) => [
        p.sensitivity === 95 ? '95 (the default)' : String(p.sensitivity),
        p.precision === null ? '—' : p.precision.toFixed(3),
        p.recall.toFixed(3),
        String(p.detections),
        `${p.recalledWindows}/${p.windows}`,
        ...[p.nab.standard, p.nab.reward_low_FP_rate, p.nab.reward_low_FN_rate].map((x) => x.toFixed(1)),
      ]),
    );
  });

  it("print UCR dev's rows of the last eval:ucr run, by half, with the published anchors", () => {
    const rows = markdownTableRows(PAGE, '| row | top-1 A | top-1 B |');
    const f = (x: number): string => x.toFixed(2);
    const expected = [
      ...ucr.rows.map((r) => [
        r.name,
        f(r.A.top1),
        f(r.B.top1),
        f(r.all.top1),
        f(r.A.top3),
        f(r.B.top3),
        f(r.all.top3),
        r.flaggedShare === null ? '' : `${(100 * r.flaggedShare).toFixed(2)} %`,
        r.flags === null ? '' : `${(100 * r.flags.healthyFlaggedShare).toFixed(2)} %`,
        r.flags === null ? '' : `${(100 * r.flags.anomalyFlaggedShare).toFixed(1)} %`,
        r.flags === null ? '' : `${r.flags.episodes.toLocaleString('en-US')} (${r.flags.falseEpisodes.toLocaleString('en-US')})`,
      ]),
      ...ucr.anchors.map((a) => [a.name, '', '', a.top1.toFixed(3), '', '', a.top3.toFixed(3), '', '', '', '']),
    ];
    // The page explains some rows in brackets after the run's name.
    const label = (text: string): string => (ucr.rows.some((r) => r.name === text) ? text : text.replace(/ \((the [^)]*)\)$/, ''));
    expect(rows.map(([name, ...cells]) => [label(name!), ...cells])).toEqual(expected);
  });

  it('give every variant of the last --ablation run one ablation row with its figures', () => {
    const rows = markdownTableRows(PAGE, '| variant | NAB standard / low FP / low FN | TCPD F1 / cover |');
    const variants = rows.map(([label]) => {
      const key = label!.split(' (')[0]!;
      const variant = ABLATION_ROWS[key];
      if (variant === undefined) throw new Error(`an ablation row the test does not know: ${label}`);
      return variant;
    });
    expect([...variants].sort()).toEqual(ablation.variants.map((v) => v.variant).sort());
    rows.forEach(([, nab, tcpd], index) => {
      const v = ablation.variants.find((x) => x.variant === variants[index])!;
      const isChangepointVariant = v.variant.startsWith('cp-');
      const nabText = v.nab === null ? '' : [v.nab.standard, v.nab.reward_low_FP_rate, v.nab.reward_low_FN_rate].map((s) => s.toFixed(1)).join(' / ');
      expect(nab, v.variant).toBe(isChangepointVariant ? '' : nabText);
      const showsTcpd = v.variant === 'default' || isChangepointVariant;
      expect(tcpd, v.variant).toBe(showsTcpd && v.tcpd !== null ? [v.tcpd.f1, v.tcpd.cover].map((x) => x.toFixed(3)).join(' / ') : '');
    });
  });
});
