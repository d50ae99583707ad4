// The runner's configuration: parsed once from the command line, validated, frozen, passed in.
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import {
  DEFAULT_CONFIRM_Z,
  ENERGY_DEFAULTS,
  ENERGY_FITS,
  ENERGY_SCALES,
  type EnergyFit,
  type EnergyScale,
} from './energy-settings.js';
import { SHIPPED_ROWS } from './shipped.js';

export const DETECTOR_IDS = ['engine', 'zscore', 'sr', 'null'] as const;
export type DetectorId = (typeof DETECTOR_IDS)[number];

export const BENCHMARKS = ['nab', 'tcpd'] as const;
export type Benchmark = (typeof BENCHMARKS)[number];

/** Sensitivities the sweep runs by default (the service's default, 95, among them). */
export const DEFAULT_SWEEP_SENSITIVITIES = [50, 70, 80, 90, 95, 99] as const;

export interface EvalConfig {
  /** Repository root; results and the chart are written under it. */
  readonly repoRoot: string;
  /** Folder holding nab_dev/ and tcpd/ (default: <repo>/../shared/datasets). */
  readonly datasetsDir: string;
  /** Benchmarks to run (--only). */
  readonly benchmarks: readonly Benchmark[];
  /** Detectors to run (--detector); `engine` runs every selected variant. */
  readonly detectors: readonly DetectorId[];
  /**
   * Engine variants to run on the harness window (--variant); undefined = `default` alone, or
   * all of them with --ablation; none when only --row is given.
   */
  readonly variants: readonly string[] | undefined;
  /**
   * --ablation: every engine variant (the ablation, on the harness window; opt-in: each is a
   * NAB pass of about 25 s of one core). Default false.
   */
  readonly ablation: boolean;
  /**
   * Rows of what ships to run (--row, ids of shipped.ts: shipped:stream, shipped:last-client,
   * shipped:entire, window:720, window:1441, window:8640, window:vendor); undefined = all of them, unless
   * --variant is given (then none).
   */
  readonly rows: readonly string[] | undefined;
  /** --sweep: run the NAB sensitivity sweep instead of the evaluation. */
  readonly sweep: boolean;
  readonly sweepSensitivities: readonly number[];
  /**
   * Where the full results go (per-file counts, settings): eval/out/results.json, which git
   * ignores, for a full run; a filtered run writes nothing unless --out names a file, so quick
   * iterations never overwrite the committed figures.
   */
  readonly resultsPath: string | undefined;
  /**
   * Where the committed summary goes (eval/results.json: the figures docs/evaluation.md prints):
   * a full run without --out only.
   */
  readonly summaryPath: string | undefined;
  /**
   * The learned model's energy on NAB (opt-in: it loads onnxruntime and fine-tunes once per file,
   * about 25 s on the shared 2-core machine): rows `energy: z>=T` per setting, the engine OR the
   * energy, and the engine confirmed by the energy (docs/experiments.md, "Learned energy"). Set by
   * --energy or any --energy-* option; one row per value of each list.
   */
  readonly energy: {
    readonly enabled: boolean;
    /** --energy-thresholds: z thresholds of the energy rows (default: the chosen one, ENERGY_DEFAULTS). */
    readonly thresholds: readonly number[];
    /** --energy-fit: `ridge` (fine-tuned on the prefix, default), `generic`, or both. */
    readonly fits: readonly EnergyFit[];
    /** --energy-scale: `mean-std` (the native API's z-scores, default), `log-robust`, or both. */
    readonly scales: readonly EnergyScale[];
    /** --energy-escalation: refractory exception factors (default: ENERGY_DEFAULTS.escalation). */
    readonly escalations: readonly number[];
    /** --energy-confirm: z an engine flag needs from the energy to be kept (default 2). */
    readonly confirmZ: readonly number[];
  };
  /**
   * --threads: threads that stream the engine variants over NAB, whole variants each (default:
   * the machine's cores, at most 4). 1 streams them in this thread, as before. The figures do not
   * depend on it.
   */
  readonly threads: number;
  readonly help: boolean;
}

export const USAGE = `Usage: npm run eval -- [options]

  --only nab|tcpd          run one benchmark
  --detector LIST          comma-separated: ${DETECTOR_IDS.join(', ')} (default: all)
  --row LIST               comma-separated rows of what ships: ${SHIPPED_ROWS.map((r) => r.id).join(', ')} (default: all; none with --variant)
  --variant LIST           comma-separated engine variants on the harness window (default: default; all with --ablation)
  --ablation               run every engine variant (the ablation; about 25 s of one core each)
  --sweep                  NAB precision/recall over sensitivities -> eval/sweep.json, docs/sensitivity-sweep.png
  --sensitivities LIST     sweep sensitivities (default: ${DEFAULT_SWEEP_SENSITIVITIES.join(',')})
  --energy                 add the learned energy's NAB rows (energy alone, engine+energy, engine confirmed by energy)
  --energy-thresholds LIST energy z thresholds, one row each (default: ${ENERGY_DEFAULTS.threshold}); implies --energy
  --energy-fit LIST        ridge (predictor fine-tuned on the learning prefix, default), generic; implies --energy
  --energy-scale LIST      mean-std (the native API's z-scores, default), log-robust; implies --energy
  --energy-escalation LIST z multiple of the ongoing event's largest that fires again (default: ${ENERGY_DEFAULTS.escalation}); implies --energy
  --energy-confirm LIST    z the energy must reach for an engine flag to be kept (default: ${DEFAULT_CONFIRM_Z}); implies --energy
  --data DIR               datasets folder (default: ../shared/datasets from the repository root)
  --out FILE               write the full results here (default: eval/out/results.json and the
                           summary eval/results.json, full runs only)
  --threads N              threads streaming the engine variants over NAB (default: cores, at most 4; 1: none)
  --help                   this text`;

export class UsageError extends Error {
  override readonly name = 'UsageError';
}

function list(text: string | undefined): string[] | undefined {
  return text === undefined ? undefined : text.split(',').map((s) => s.trim()).filter((s) => s !== '');
}

function oneOf<T extends string>(value: string, allowed: readonly T[], flag: string): T {
  if (!(allowed as readonly string[]).includes(value)) {
    throw new UsageError(`${flag}: ${JSON.stringify(value)} is not one of ${allowed.join(', ')}`);
  }
  return value as T;
}

export function parseConfig(argv: readonly string[], repoRoot: string): EvalConfig {
  let parsed;
  try {
    parsed = parseArgs({
      args: [...argv],
      options: {
        only: { type: 'string' },
        detector: { type: 'string' },
        variant: { type: 'string' },
        row: { type: 'string' },
        ablation: { type: 'boolean', default: false },
        sweep: { type: 'boolean', default: false },
        sensitivities: { type: 'string' },
        data: { type: 'string' },
        out: { type: 'string' },
        threads: { type: 'string' },
        energy: { type: 'boolean', default: false },
        'energy-thresholds': { type: 'string' },
        'energy-fit': { type: 'string' },
        'energy-confirm': { type: 'string' },
        'energy-scale': { type: 'string' },
        'energy-escalation': { type: 'string' },
        help: { type: 'boolean', default: false },
      },
      strict: true,
      allowPositionals: false,
    }).values;
  } catch (err) {
    throw new UsageError(err instanceof Error ? err.message : String(err));
  }
  const benchmarks = parsed.only === undefined ? [...BENCHMARKS] : [oneOf(parsed.only, BENCHMARKS, '--only')];
  const detectors = list(parsed.detector)?.map((d) => oneOf(d, DETECTOR_IDS, '--detector')) ?? [...DETECTOR_IDS];
  if (detectors.length === 0) throw new UsageError('--detector: empty list');
  const variants = list(parsed.variant);
  const rows = list(parsed.row)?.map((r) => oneOf(r, SHIPPED_ROWS.map((row) => row.id), '--row'));
  if (rows !== undefined && rows.length === 0) throw new UsageError('--row: empty list');
  const sweepSensitivities = list(parsed.sensitivities)?.map((s) => {
    const v = Number(s);
    if (!(Number.isFinite(v) && v >= 0 && v <= 100)) throw new UsageError(`--sensitivities: ${s} is not in 0..100`);
    return v;
  }) ?? [...DEFAULT_SWEEP_SENSITIVITIES];
  const numbers = (flag: string, text: string | undefined): number[] | undefined =>
    list(text)?.map((s) => {
      const v = Number(s);
      if (!Number.isFinite(v)) throw new UsageError(`${flag}: ${s} is not a number`);
      return v;
    });
  const energyThresholds = numbers('--energy-thresholds', parsed['energy-thresholds']);
  const energyConfirm = numbers('--energy-confirm', parsed['energy-confirm']);
  const energyEscalations = list(parsed['energy-escalation'])?.map((text) => {
    const v = Number(text);
    if (!(v > 1)) throw new UsageError(`--energy-escalation: ${text} is not a number above 1 (Infinity: off)`);
    return v;
  });
  const energyFits = list(parsed['energy-fit'])?.map((f) => oneOf(f, ENERGY_FITS, '--energy-fit'));
  const energyScales = list(parsed['energy-scale'])?.map((f) => oneOf(f, ENERGY_SCALES, '--energy-scale'));
  const energy = Object.freeze({
    enabled:
      parsed.energy === true ||
      [energyThresholds, energyFits, energyScales, energyEscalations, energyConfirm].some((option) => option !== undefined),
    thresholds: Object.freeze(energyThresholds ?? [ENERGY_DEFAULTS.threshold]),
    fits: Object.freeze(energyFits ?? [ENERGY_DEFAULTS.fit]),
    scales: Object.freeze(energyScales ?? [ENERGY_DEFAULTS.scale]),
    escalations: Object.freeze(energyEscalations ?? [ENERGY_DEFAULTS.escalation]),
    confirmZ: Object.freeze(energyConfirm ?? [DEFAULT_CONFIRM_Z]),
  });
  const threads = parsed.threads === undefined ? Math.min(4, Math.max(1, os.cpus().length)) : Number(parsed.threads);
  if (!(Number.isInteger(threads) && threads >= 1 && threads <= 64)) {
    throw new UsageError(`--threads: ${parsed.threads} is not an integer from 1 to 64`);
  }
  const filtered =
    parsed.only !== undefined || parsed.detector !== undefined || parsed.variant !== undefined || parsed.row !== undefined;
  const resultsPath =
    parsed.out !== undefined
      ? path.resolve(parsed.out)
      : filtered
        ? undefined
        : path.join(repoRoot, 'eval', 'out', 'results.json');
  const summaryPath = parsed.out === undefined && !filtered ? path.join(repoRoot, 'eval', 'results.json') : undefined;
  return Object.freeze({
    repoRoot,
    datasetsDir: path.resolve(parsed.data ?? path.join(repoRoot, '..', 'shared', 'datasets')),
    benchmarks: Object.freeze(benchmarks),
    detectors: Object.freeze(detectors),
    // --row alone runs those rows only; --variant alone those variants only.
    variants: variants === undefined ? (rows === undefined || parsed.ablation === true ? undefined : Object.freeze([])) : Object.freeze(variants),
    ablation: parsed.ablation === true,
    rows: rows === undefined ? (variants === undefined ? undefined : Object.freeze([])) : Object.freeze(rows),
    sweep: parsed.sweep === true,
    sweepSensitivities: Object.freeze([...sweepSensitivities].sort((a, b) => a - b)),
    resultsPath,
    summaryPath,
    energy,
    threads,
    help: parsed.help === true,
  });
}
