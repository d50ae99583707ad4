// The fine-tuning cases of the model benchmark, shared by `packages/model/bench/finetune.ts` (the
// model's own table) and the repository benchmark (`npm run bench`, bench/run.ts), so both time
// the same calls and compare with the same slow references.
import { FINETUNE_DEFAULTS, type FineTuneOptions, type ModelRuntime } from '../src/index.js';

/** The slow references: Adam at a 4x lower learning rate, with 4x the epochs and 4x the patience. */
const SLOW = {
  learningRate: FINETUNE_DEFAULTS.learningRate / 4,
  maxEpochs: FINETUNE_DEFAULTS.maxEpochs * 4,
  patience: FINETUNE_DEFAULTS.patience * 4,
} as const;

/** The option sets the benchmarks compare; `fast` is what the API uses (the default, ridge). */
export const FINETUNE_CASES = {
  fast: {} as FineTuneOptions,
  adamHead: { mode: 'head' } satisfies FineTuneOptions,
  /** The slow reference the default must not lose to: Adam on the output layer, slow settings. */
  reference: { ...SLOW, mode: 'head' } satisfies FineTuneOptions,
  referenceFull: { ...SLOW, mode: 'full' } satisfies FineTuneOptions,
} as const;

export type FineTuneCase = keyof typeof FINETUNE_CASES;

/** In words, for tables and notes. */
export const FINETUNE_CASE_LABELS: Record<FineTuneCase, string> = {
  fast: 'ridge (default)',
  adamHead: `Adam, output layer, lr ${FINETUNE_DEFAULTS.learningRate}, ${FINETUNE_DEFAULTS.maxEpochs} epochs`,
  reference: `slow reference: Adam, output layer, lr ${SLOW.learningRate}, ${SLOW.maxEpochs} epochs`,
  referenceFull: `slow reference: Adam, all tensors, lr ${SLOW.learningRate}, ${SLOW.maxEpochs} epochs`,
};

/** One case run `samples` times on one series. */
export interface FineTuneTiming {
  readonly case: FineTuneCase;
  readonly points: number;
  readonly windows: number;
  /** Wall-clock duration of each call, in milliseconds (the runtime's own `durationSeconds` is in `statsSeconds`). */
  readonly durationsMs: number[];
  readonly statsSeconds: number[];
  /** Held-out loss of the last call (every case is seeded, so each call ends at the same loss). */
  readonly finalLoss: number;
  readonly epochsRun: number;
}

/** Runs one fine-tuning case `samples` times on `values` and times each call. */
export async function timeFineTune(
  runtime: ModelRuntime,
  values: ArrayLike<number>,
  fineTuneCase: FineTuneCase,
  samples = 1,
): Promise<FineTuneTiming> {
  const durationsMs: number[] = [];
  const statsSeconds: number[] = [];
  let last: Awaited<ReturnType<ModelRuntime['fineTune']>> | undefined;
  for (let i = 0; i < Math.max(1, samples); i++) {
    const t0 = performance.now();
    last = await runtime.fineTune(values, FINETUNE_CASES[fineTuneCase]);
    durationsMs.push(performance.now() - t0);
    statsSeconds.push(last.stats.durationSeconds);
  }
  const stats = (last as NonNullable<typeof last>).stats;
  return {
    case: fineTuneCase,
    points: values.length,
    windows: stats.windows,
    durationsMs,
    statsSeconds,
    finalLoss: stats.finalLoss,
    epochsRun: stats.epochsRun,
  };
}

/** A machine-like series: 5-minute data with a daily period (288 points), a faster cycle and noise. */
export function machineSeries(points: number, seed: number): number[] {
  let a = seed >>> 0;
  const random = (): number => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return Array.from({ length: points }, (_, t) => {
    return 50 + 8 * Math.sin((2 * Math.PI * t) / 288) + 2 * Math.sin((2 * Math.PI * t) / 12) + (random() - 0.5) * 1.5;
  });
}
