// Fine-tuning of the predictor with the encoder frozen: the series is embedded once and the
// (e[t-1], e[t]) pairs are split into a training part and a held-out tail. Default (`ridge`): the
// output layer is solved in closed form over the frozen first layer's features, ridge towards the
// generic weights, the strength picked on the held-out tail. `head` / `full`: Adam steps through the
// exported training-step graphs from the generic weights, the best weights by held-out loss kept
// (early stopping with patience). Measurements behind the default: packages/model/README.md.
import { seededRandom } from '@adp/detection';
import { Tensor } from 'onnxruntime-node';
import { EMBEDDING_DIM, type FineTuneOptions, type FineTuneResult, type Normalisation, type PredictorWeights } from './contract.js';
import { ModelError } from './errors.js';
import { PREDICTOR_HIDDEN, PREDICTOR_TENSOR_NAMES, PREDICTOR_TENSOR_SHAPES, type PredictorTensorName } from './weights-codec.js';
import { assertFiniteSeries, robustNormalisation, WARMUP_POINTS } from './windows.js';

/** The API refuses shorter baselines; fewer points leave too few pairs to train and hold out. */
export const MIN_FINETUNE_POINTS = 100;

export const FINETUNE_DEFAULTS = {
  maxEpochs: 50,
  holdoutShare: 0.2,
  learningRate: 1e-3,
  mode: 'ridge',
  /**
   * Ridge strengths tried in `ridge` mode, relative to the mean diagonal of the features' Gram
   * matrix; the one with the lowest held-out loss wins (best on 1,000 and 8,640 points: 0.01, 0.001).
   */
  ridgeLambdas: [0.001, 0.01, 0.1],
  patience: 5,
  /** Smallest batch; long series use larger batches so an epoch is at most `maxStepsPerEpoch` steps. */
  batchSize: 128,
  maxStepsPerEpoch: 16,
  seed: 1,
  /** Adam steps over which the learning rate ramps up linearly from ~0 (fresh moments on pretrained weights). */
  warmupSteps: 10,
} as const;

/**
 * Learning rate of a 1-based step: linear warm-up, then cosine decay to 5% of the peak at the end
 * of `totalSteps` (so the last epochs refine rather than wander).
 */
export function learningRateAt(step: number, totalSteps: number, peak: number): number {
  const warm = Math.min(1, step / FINETUNE_DEFAULTS.warmupSteps);
  const progress = Math.min(1, Math.max(0, (step - 1) / Math.max(1, totalSteps - 1)));
  return peak * warm * (0.05 + 0.95 * 0.5 * (1 + Math.cos(Math.PI * progress)));
}

/** The ONNX graphs fine-tuning drives; feeds and outputs use the graphs' own names. */
export interface TrainingGraphs {
  /** predictor_train_step.onnx (all tensors) or predictor_head_train_step.onnx (w2, b2). */
  trainStep(
    mode: 'head' | 'full',
    feeds: Record<string, Tensor>,
    trained: readonly PredictorTensorName[],
  ): Promise<{ loss: number; next: Record<string, Float32Array> }>;
  /** predictor_features.onnx: relu(x W1 + b1), [rows, 1200]. */
  features(feeds: Record<string, Tensor>): Promise<Float32Array>;
  /** predictor_head_gram.onnx: the head's least-squares statistics (gram, cross, a_mean, r_mean, diag_mean). */
  headGram(feeds: Record<string, Tensor>): Promise<Record<string, Float32Array>>;
  /** predictor_head_ridge.onnx: closed-form head weights (w2_new, b2_new) for one ridge strength. */
  headRidge(feeds: Record<string, Tensor>): Promise<{ w2: Float32Array; b2: Float32Array }>;
  /**
   * predictor_head_ridge_dual.onnx: the same closed-form head weights solved over the training
   * pairs (x, y and the prior's w1, b1, w2), one set per strength of `lambda` [L]: w2_new
   * [L, 1200, 192] and b2_new [L, 192] back to back.
   */
  headRidgeDual(feeds: Record<string, Tensor>): Promise<{ w2: Float32Array; b2: Float32Array }>;
  evalLoss(feeds: Record<string, Tensor>): Promise<number>;
}

export interface FineTuneDeps {
  embed(values: ArrayLike<number>, normalisation: Normalisation): Promise<Float32Array>;
  readonly graphs: TrainingGraphs;
  readonly genericWeights: PredictorWeights;
  readonly modelVersion: string;
}


function shuffle(indices: Uint32Array, random: () => number): void {
  for (let i = indices.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    const tmp = indices[i] ?? 0;
    indices[i] = indices[j] ?? 0;
    indices[j] = tmp;
  }
}

function tensorsOf(
  arrays: Record<string, Float32Array>,
  prefix: string,
  names: readonly PredictorTensorName[] = PREDICTOR_TENSOR_NAMES,
  sourcePrefix = prefix,
): Record<string, Tensor> {
  const feeds: Record<string, Tensor> = {};
  for (const name of names) {
    const data = arrays[sourcePrefix + name];
    if (data === undefined) throw new ModelError('MODEL_WEIGHTS_INVALID', `missing training tensor ${sourcePrefix}${name}`);
    feeds[prefix + name] = new Tensor('float32', data, PREDICTOR_TENSOR_SHAPES[name]);
  }
  return feeds;
}

export async function runFineTune(
  values: ArrayLike<number>,
  options: FineTuneOptions,
  deps: FineTuneDeps,
): Promise<FineTuneResult> {
  const started = performance.now();
  if (values.length < MIN_FINETUNE_POINTS) {
    throw new ModelError(
      'MODEL_SERIES_TOO_SHORT',
      `fine-tuning needs at least ${MIN_FINETUNE_POINTS} points, got ${values.length}`,
      { modelVersion: deps.modelVersion },
    );
  }
  assertFiniteSeries(values);
  const maxEpochs = Math.max(0, Math.floor(options.maxEpochs ?? FINETUNE_DEFAULTS.maxEpochs));
  const holdoutShare = Math.min(0.9, Math.max(0.01, options.holdoutShare ?? FINETUNE_DEFAULTS.holdoutShare));
  const learningRate = options.learningRate ?? FINETUNE_DEFAULTS.learningRate;
  const patience = Math.max(1, Math.floor(options.patience ?? FINETUNE_DEFAULTS.patience));
  const requestedBatch = options.batchSize;
  const random = seededRandom(options.seed ?? FINETUNE_DEFAULTS.seed);
  const mode = options.mode ?? FINETUNE_DEFAULTS.mode;
  const ridgeForm = options.ridgeForm ?? 'primal';
  const trained: readonly PredictorTensorName[] = mode === 'full' ? PREDICTOR_TENSOR_NAMES : ['w2', 'b2'];

  const normalisation = robustNormalisation(values);
  const n = values.length;
  const embeddings = await deps.embed(values, normalisation);
  // Pair i predicts e[WARMUP_POINTS + i] from e[WARMUP_POINTS + i - 1].
  const pairs = n - WARMUP_POINTS;
  const holdout = Math.max(1, Math.round(pairs * holdoutShare));
  const train = pairs - holdout;
  // Pair i's energy is point WARMUP_POINTS + i's: the held-out pairs are the points from here on.
  const heldOutFrom = WARMUP_POINTS + train;
  const xs = embeddings.subarray((WARMUP_POINTS - 1) * EMBEDDING_DIM, (n - 1) * EMBEDDING_DIM);
  const ys = embeddings.subarray(WARMUP_POINTS * EMBEDDING_DIM, n * EMBEDDING_DIM);
  const holdoutFeeds = {
    x: new Tensor('float32', xs.subarray(train * EMBEDDING_DIM), [holdout, EMBEDDING_DIM]),
    y: new Tensor('float32', ys.subarray(train * EMBEDDING_DIM), [holdout, EMBEDDING_DIM]),
  };

  const state: Record<string, Float32Array> = {};
  for (const name of PREDICTOR_TENSOR_NAMES) {
    const generic = deps.genericWeights.tensors[name];
    if (generic === undefined) throw new ModelError('MODEL_WEIGHTS_INVALID', `generic weights lack ${name}`);
    state[name] = generic.data; // never written: each step returns fresh arrays
    if (!trained.includes(name)) continue;
    state[`m_${name}`] = new Float32Array(generic.data.length);
    state[`v_${name}`] = new Float32Array(generic.data.length);
  }
  if (mode === 'ridge') {
    // The dual form inverts a train x train kernel instead of the features' Gram matrix: cheaper
    // while there are fewer training pairs than features.
    const dual = ridgeForm === 'dual' || (ridgeForm === 'auto' && train < PREDICTOR_HIDDEN);
    return ridgeFineTune({ deps, state, xs, ys, train, holdoutFeeds, normalisation, pairs, started, heldOutFrom, dual });
  }
  // Head mode: the first layer is frozen, so its features are computed once for every pair.
  const features =
    mode === 'head'
      ? await deps.graphs.features({
          x: new Tensor('float32', xs.subarray(0, train * EMBEDDING_DIM), [train, EMBEDDING_DIM]),
          ...tensorsOf(state, '', ['w1', 'b1']),
        })
      : null;
  const evaluate = (): Promise<number> => deps.graphs.evalLoss({ ...holdoutFeeds, ...tensorsOf(state, '') });

  let bestLoss = await evaluate();
  let best: Record<string, Float32Array> = { ...state };
  let sinceBest = 0;
  let epochsRun = 0;
  let earlyStopped = false;
  let step = 0;
  const order = new Uint32Array(train);
  for (let i = 0; i < train; i++) order[i] = i;
  // Batches of near-equal size (no tiny last batch): ceil(train / batchSize) of them. By default the
  // batch grows with the series (at most maxStepsPerEpoch steps an epoch): on 8,640 points, 54 small
  // noisy steps an epoch made the held-out loss jump and early stopping end training too soon.
  const batchSize = Math.max(
    1,
    Math.floor(requestedBatch ?? Math.max(FINETUNE_DEFAULTS.batchSize, Math.ceil(train / FINETUNE_DEFAULTS.maxStepsPerEpoch))),
  );
  const batches = Math.max(1, Math.ceil(train / batchSize));
  const maxRows = Math.ceil(train / batches);
  const bx = new Float32Array(maxRows * EMBEDDING_DIM);
  const by = new Float32Array(maxRows * EMBEDDING_DIM);
  const ba = new Float32Array(features === null ? 0 : maxRows * PREDICTOR_HIDDEN);

  for (let epoch = 0; epoch < maxEpochs && train > 0; epoch++) {
    shuffle(order, random);
    for (let b = 0; b < batches; b++) {
      const from = Math.floor((b * train) / batches);
      const to = Math.floor(((b + 1) * train) / batches);
      const rows = to - from;
      for (let r = 0; r < rows; r++) {
        const src = (order[from + r] ?? 0) * EMBEDDING_DIM;
        bx.set(xs.subarray(src, src + EMBEDDING_DIM), r * EMBEDDING_DIM);
        by.set(ys.subarray(src, src + EMBEDDING_DIM), r * EMBEDDING_DIM);
        if (features !== null) {
          const f = (order[from + r] ?? 0) * PREDICTOR_HIDDEN;
          ba.set(features.subarray(f, f + PREDICTOR_HIDDEN), r * PREDICTOR_HIDDEN);
        }
      }
      step += 1;
      const feeds: Record<string, Tensor> = {
        x: new Tensor('float32', bx.subarray(0, rows * EMBEDDING_DIM), [rows, EMBEDDING_DIM]),
        y: new Tensor('float32', by.subarray(0, rows * EMBEDDING_DIM), [rows, EMBEDDING_DIM]),
        step: new Tensor('float32', new Float32Array([step]), []),
        lr: new Tensor('float32', new Float32Array([learningRateAt(step, maxEpochs * batches, learningRate)]), []),
        ...tensorsOf(state, '', trained),
        ...tensorsOf(state, 'm_', trained),
        ...tensorsOf(state, 'v_', trained),
      };
      if (features !== null) feeds.a = new Tensor('float32', ba.subarray(0, rows * PREDICTOR_HIDDEN), [rows, PREDICTOR_HIDDEN]);
      const { next } = await deps.graphs.trainStep(mode, feeds, trained);
      Object.assign(state, next);
    }
    epochsRun += 1;
    const loss = await evaluate();
    if (loss < bestLoss) {
      bestLoss = loss;
      best = { ...state };
      sinceBest = 0;
    } else if (++sinceBest >= patience) {
      earlyStopped = epoch + 1 < maxEpochs;
      break;
    }
  }

  return {
    weights: ownedWeights(best, deps.genericWeights),
    normalisation,
    heldOutFrom,
    stats: {
      status: 'completed',
      finalLoss: bestLoss,
      epochsRun,
      epochsMax: maxEpochs,
      earlyStopped,
      windows: pairs,
      durationSeconds: (performance.now() - started) / 1000,
    },
  };
}

interface RidgeInputs {
  readonly deps: FineTuneDeps;
  readonly state: Record<string, Float32Array>;
  readonly xs: Float32Array;
  readonly ys: Float32Array;
  readonly train: number;
  readonly holdoutFeeds: Record<string, Tensor>;
  readonly normalisation: Normalisation;
  readonly pairs: number;
  readonly started: number;
  readonly heldOutFrom: number;
  /** Solve over the training pairs (predictor_head_ridge_dual.onnx) instead of the features. */
  readonly dual: boolean;
}

/**
 * `ridge` mode: the head's fine-tune is a linear least-squares problem once the first layer is
 * frozen, so it is solved in closed form (ridge towards the generic weights) for a few strengths,
 * keeping the one with the lowest held-out loss (the generic weights if none beats them). One pass
 * over the data: epochsRun = epochsMax = 1.
 */
async function ridgeFineTune(input: RidgeInputs): Promise<FineTuneResult> {
  const { deps, state, holdoutFeeds } = input;
  const evaluate = (weights: Record<string, Float32Array>): Promise<number> =>
    deps.graphs.evalLoss({ ...holdoutFeeds, ...tensorsOf(weights, '') });
  let best: Record<string, Float32Array> = { ...state };
  let bestLoss = await evaluate(best);
  const candidates = input.dual ? dualRidgeCandidates(input) : primalRidgeCandidates(input);
  for await (const { w2, b2 } of candidates) {
    const candidate = { ...state, w2, b2 };
    const loss = await evaluate(candidate);
    if (Number.isFinite(loss) && loss < bestLoss) {
      bestLoss = loss;
      best = candidate;
    }
  }
  return {
    weights: ownedWeights(best, deps.genericWeights),
    normalisation: input.normalisation,
    heldOutFrom: input.heldOutFrom,
    stats: {
      status: 'completed',
      finalLoss: bestLoss,
      epochsRun: 1,
      epochsMax: 1,
      earlyStopped: false,
      windows: input.pairs,
      durationSeconds: (performance.now() - input.started) / 1000,
    },
  };
}

function tensor(data: Float32Array, dims: readonly number[]): Tensor {
  return new Tensor('float32', data, dims);
}

/** The head's weights for each ridge strength, in FINETUNE_DEFAULTS.ridgeLambdas' order, from the features' Gram matrix. */
async function* primalRidgeCandidates(input: RidgeInputs): AsyncGenerator<{ w2: Float32Array; b2: Float32Array }> {
  const { deps, state, xs, ys, train } = input;
  const stats = await deps.graphs.headGram({
    x: tensor(xs.subarray(0, train * EMBEDDING_DIM), [train, EMBEDDING_DIM]),
    y: tensor(ys.subarray(0, train * EMBEDDING_DIM), [train, EMBEDDING_DIM]),
    ...tensorsOf(state, '', ['w1', 'b1']),
  });
  const need = (name: string): Float32Array => {
    const value = stats[name];
    if (value === undefined) throw new ModelError('MODEL_INFERENCE_FAILED', `predictor_head_gram returned no ${name}`);
    return value;
  };
  const statFeeds = {
    gram: tensor(need('gram'), [PREDICTOR_HIDDEN, PREDICTOR_HIDDEN]),
    cross: tensor(need('cross'), [PREDICTOR_HIDDEN, EMBEDDING_DIM]),
    a_mean: tensor(need('a_mean'), [1, PREDICTOR_HIDDEN]),
    r_mean: tensor(need('r_mean'), [1, EMBEDDING_DIM]),
    diag_mean: tensor(need('diag_mean'), []),
    ...tensorsOf(state, '', ['w2']),
  };
  for (const lambda of FINETUNE_DEFAULTS.ridgeLambdas) {
    yield await deps.graphs.headRidge({ ...statFeeds, lambda: tensor(new Float32Array([lambda]), []) });
  }
}

/** The same candidates solved over the training pairs, every strength in one call. */
async function* dualRidgeCandidates(input: RidgeInputs): AsyncGenerator<{ w2: Float32Array; b2: Float32Array }> {
  const { deps, state, xs, ys, train } = input;
  const lambdas = FINETUNE_DEFAULTS.ridgeLambdas;
  const { w2, b2 } = await deps.graphs.headRidgeDual({
    x: tensor(xs.subarray(0, train * EMBEDDING_DIM), [train, EMBEDDING_DIM]),
    y: tensor(ys.subarray(0, train * EMBEDDING_DIM), [train, EMBEDDING_DIM]),
    ...tensorsOf(state, '', ['w1', 'b1', 'w2']),
    lambda: tensor(Float32Array.from(lambdas), [lambdas.length]),
  });
  const w2Size = PREDICTOR_HIDDEN * EMBEDDING_DIM;
  if (w2.length !== lambdas.length * w2Size || b2.length !== lambdas.length * EMBEDDING_DIM) {
    throw new ModelError('MODEL_INFERENCE_FAILED', `predictor_head_ridge_dual returned ${w2.length} and ${b2.length} values for ${lambdas.length} strengths`);
  }
  // Copies, not views: the kept weights own their buffers (they may be transferred to another thread).
  for (let k = 0; k < lambdas.length; k++) {
    yield { w2: w2.slice(k * w2Size, (k + 1) * w2Size), b2: b2.slice(k * EMBEDDING_DIM, (k + 1) * EMBEDDING_DIM) };
  }
}

function ownedWeights(best: Record<string, Float32Array>, generic: PredictorWeights): PredictorWeights {
  const tensors: Record<string, { dims: readonly number[]; data: Float32Array }> = {};
  for (const name of PREDICTOR_TENSOR_NAMES) {
    const data = best[name] ?? new Float32Array();
    // Never hand out the generic arrays themselves (a caller may transfer or mutate the result).
    const owned = data === generic.tensors[name]?.data ? data.slice() : data;
    tensors[name] = { dims: [...PREDICTOR_TENSOR_SHAPES[name]], data: owned };
  }
  return { tensors };
}
