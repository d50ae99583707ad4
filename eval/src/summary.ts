// The committed summary of `npm run eval` (eval/results.json): the figures docs/evaluation.md
// prints and eval/test/readme-tables.test.ts checks, nothing per file or per point. The full
// results (per-file counts, settings) go to eval/out/results.json, which git ignores.
import type { EvalResults } from './harness.js';

interface ProfileScore {
  readonly score: number;
  readonly raw: number;
  readonly nullRaw: number;
  readonly perfectRaw: number;
  readonly lost?: { readonly missedWindows: number; readonly lateDetections: number; readonly falsePositives: number };
}
interface Fold {
  readonly heldOut: string;
  readonly score: number | null;
}
interface Folds {
  readonly folds: readonly Fold[];
  readonly mean: number;
  readonly min: number;
  readonly max: number;
}
interface FullNab {
  readonly files: number;
  readonly windows: number;
  readonly windowRobustness: {
    readonly windows: readonly { readonly window: number | string; readonly id: string; readonly standard: number; readonly folds?: Folds }[];
    readonly spread: number;
    readonly vendor?: { readonly standard: number; readonly folds?: Folds };
  } | null;
  readonly detectors: readonly {
    readonly id: string;
    readonly name: string;
    readonly precision: number | null;
    readonly recall: number | null;
    readonly errors: number;
    readonly profiles: Readonly<Record<string, ProfileScore>>;
    readonly folds: Readonly<Record<string, Folds>> | null;
  }[];
}
interface FullTcpd {
  readonly series: number;
  readonly detectors: readonly { readonly id: string; readonly name: string; readonly f1: number; readonly cover: number; readonly errors: number }[];
}

interface FoldsSummary {
  readonly mean: number;
  readonly min: number;
  readonly max: number;
  /** Each fold's score, in the order of the summary's `categories` (the category held out). */
  readonly scores: readonly (number | null)[];
}

/** A fold summary without the per-fold file and window counts: the mean, the range and each fold's score. */
function foldsSummary(f: Folds | undefined | null): FoldsSummary | undefined {
  if (f === undefined || f === null) return undefined;
  return { mean: f.mean, min: f.min, max: f.max, scores: f.folds.map((x) => x.score) };
}

function profileSummary(p: ProfileScore): ProfileScore {
  return { score: p.score, raw: p.raw, nullRaw: p.nullRaw, perfectRaw: p.perfectRaw, ...(p.lost === undefined ? {} : { lost: p.lost }) };
}

/** The summary of a run's results: engine, NAB rows with their profiles and folds, TCPD rows, anchors, peers. */
export function resultsSummary(results: EvalResults): unknown {
  // runEvaluation's nab and tcpd objects, typed here by the fields the summary keeps.
  const nab = results.nab as FullNab | null;
  const tcpd = results.tcpd as FullTcpd | null;
  return {
    engine: results.engine,
    date: results.date,
    elapsedMs: results.elapsedMs,
    machine: results.machine,
    nab:
      nab === null
        ? null
        : {
            files: nab.files,
            windows: nab.windows,
            categories: nab.detectors[0]?.folds?.['standard']?.folds.map((f) => f.heldOut) ?? [],
            // The ablation's variants have their own summary (eval/ablation.json); the harness window stays.
            detectors: nab.detectors.filter((d) => !d.id.startsWith('engine:') || d.id === 'engine:default').map((d) => ({
              id: d.id,
              name: d.name,
              precision: d.precision,
              recall: d.recall,
              errors: d.errors,
              profiles: Object.fromEntries(Object.entries(d.profiles).map(([k, p]) => [k, profileSummary(p)])),
              folds: d.folds === null ? null : Object.fromEntries(Object.entries(d.folds).map(([k, f]) => [k, foldsSummary(f)])),
            })),
            windowRobustness:
              nab.windowRobustness === null
                ? null
                : {
                    windows: nab.windowRobustness.windows.map((w) => ({ window: w.window, id: w.id, standard: w.standard, folds: foldsSummary(w.folds) })),
                    spread: nab.windowRobustness.spread,
                    ...(nab.windowRobustness.vendor === undefined
                      ? {}
                      : { vendor: { standard: nab.windowRobustness.vendor.standard, folds: foldsSummary(nab.windowRobustness.vendor.folds) } }),
                  },
          },
    tcpd:
      tcpd === null
        ? null
          : { series: tcpd.series, detectors: tcpd.detectors.filter((d) => !d.id.startsWith('engine:') || d.id === 'engine:default').map((d) => ({ id: d.id, name: d.name, f1: d.f1, cover: d.cover, errors: d.errors })) },
    anchors: results.anchors,
    peers: results.peers,
  };
}
