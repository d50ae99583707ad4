// The ModelRuntime on onnxruntime-node: sessions are created in the factory and released in
// close(); nothing happens at import time.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { InferenceSession, Tensor } from 'onnxruntime-node';
import {
  EMBEDDING_DIM,
  type EnergyOptions,
  type EnergyResult,
  type FineTuneOptions,
  type FineTuneResult,
  type ModelRuntime,
  type Normalisation,
  type PredictorWeights,
} from './contract.js';
import { energiesFromPredictions, predictionEnergy } from './energy.js';
import { ModelError } from './errors.js';
import { runFineTune, type TrainingGraphs } from './finetune.js';
import { assertPredictorWeights, decodePredictorWeights, PREDICTOR_TENSOR_NAMES } from './weights-codec.js';
import { assertFiniteSeries, buildWindowRows, robustNormalisation, WARMUP_POINTS, WINDOW_POINTS } from './windows.js';

export interface ModelRuntimeOptions {
  /** Folder with the ONNX graphs, generic weights and manifest.json. Default: this package's `assets/`. */
  readonly assetsDir?: string;
  /**
   * onnxruntime intra-op threads per session (default 1). On the shared 2-core machine one thread
   * measured faster than two (a busy machine starves the second thread while the first spins).
   */
  readonly intraOpThreads?: number;
}

/** Rows per encoder/predictor call: bounds the memory of one call on long series. */
const ROWS_PER_RUN = 4096;

export const ASSET_FILES = {
  encoder: 'encoder.onnx',
  predictor: 'predictor.onnx',
  trainStep: 'predictor_train_step.onnx',
  evalLoss: 'predictor_eval.onnx',
  features: 'predictor_features.onnx',
  headTrainStep: 'predictor_head_train_step.onnx',
  headGram: 'predictor_head_gram.onnx',
  headRidge: 'predictor_head_ridge.onnx',
  headRidgeDual: 'predictor_head_ridge_dual.onnx',
  genericWeights: 'predictor_generic.bin',
  manifest: 'manifest.json',
} as const;

export function defaultAssetsDir(): string {
  return fileURLToPath(new URL('../assets/', import.meta.url));
}

interface Manifest {
  readonly modelVersion: string;
}

async function readAsset(dir: string, file: string): Promise<Buffer> {
  try {
    return await readFile(join(dir, file));
  } catch (cause) {
    throw new ModelError('MODEL_ASSETS_UNAVAILABLE', `cannot read model asset ${join(dir, file)}`, { cause });
  }
}

export interface LoadedModelRuntime extends ModelRuntime {
  /** The generic (pretrained) predictor weights. */
  readonly genericWeights: PredictorWeights;
  /** Embeddings [N*192] of a series under a normalisation. */
  embed(values: ArrayLike<number>, normalisation: Normalisation): Promise<Float32Array>;
}

export async function createModelRuntime(options: ModelRuntimeOptions = {}): Promise<LoadedModelRuntime> {
  const dir = options.assetsDir ?? defaultAssetsDir();
  const threads = options.intraOpThreads ?? 1;
  const manifestBytes = await readAsset(dir, ASSET_FILES.manifest);
  let manifest: Manifest;
  try {
    manifest = JSON.parse(manifestBytes.toString('utf8')) as Manifest;
  } catch (cause) {
    throw new ModelError('MODEL_ASSETS_UNAVAILABLE', 'model manifest.json is not valid JSON', { cause });
  }
  const modelVersion = manifest.modelVersion;
  const genericWeights = decodePredictorWeights(await readAsset(dir, ASSET_FILES.genericWeights));
  const sessionOptions: InferenceSession.SessionOptions = {
    intraOpNumThreads: threads,
    interOpNumThreads: 1,
    executionMode: 'sequential',
    graphOptimizationLevel: 'all',
  };
  const sessions: InferenceSession[] = [];
  const open = async (file: string): Promise<InferenceSession> => {
    const bytes = await readAsset(dir, file);
    try {
      const session = await InferenceSession.create(bytes, sessionOptions);
      sessions.push(session);
      return session;
    } catch (cause) {
      throw new ModelError('MODEL_ASSETS_UNAVAILABLE', `onnxruntime cannot load ${file}`, { cause, modelVersion });
    }
  };
  let encoder: InferenceSession, predictor: InferenceSession, trainStep: InferenceSession, evalLoss: InferenceSession;
  let features: InferenceSession, headTrainStep: InferenceSession, headGram: InferenceSession, headRidge: InferenceSession;
  let headRidgeDual: InferenceSession;
  try {
    encoder = await open(ASSET_FILES.encoder);
    predictor = await open(ASSET_FILES.predictor);
    trainStep = await open(ASSET_FILES.trainStep);
    evalLoss = await open(ASSET_FILES.evalLoss);
    features = await open(ASSET_FILES.features);
    headTrainStep = await open(ASSET_FILES.headTrainStep);
    headGram = await open(ASSET_FILES.headGram);
    headRidge = await open(ASSET_FILES.headRidge);
    headRidgeDual = await open(ASSET_FILES.headRidgeDual);
  } catch (err) {
    await Promise.all(sessions.map((s) => s.release()));
    throw err;
  }
  let closed = false;

  const run = async (
    session: InferenceSession,
    graph: string,
    feeds: Record<string, Tensor>,
  ): Promise<InferenceSession.OnnxValueMapType> => {
    if (closed) throw new ModelError('MODEL_CLOSED', 'the model runtime is closed', { modelVersion });
    try {
      return await session.run(feeds);
    } catch (cause) {
      throw new ModelError('MODEL_INFERENCE_FAILED', `onnxruntime failed running ${graph}`, { cause, modelVersion });
    }
  };

  const weightFeeds = (weights: PredictorWeights, prefix = ''): Record<string, Tensor> => {
    const feeds: Record<string, Tensor> = {};
    for (const name of PREDICTOR_TENSOR_NAMES) {
      const t = weights.tensors[name];
      if (t === undefined) throw new ModelError('MODEL_WEIGHTS_INVALID', `predictor weights lack ${name}`);
      feeds[prefix + name] = new Tensor('float32', t.data, t.dims);
    }
    return feeds;
  };

  const floatOutput = (outputs: InferenceSession.OnnxValueMapType, name: string, graph: string): Float32Array => {
    const value = outputs[name];
    if (value === undefined || !(value.data instanceof Float32Array)) {
      throw new ModelError('MODEL_INFERENCE_FAILED', `${graph} returned no float32 output ${name}`, { modelVersion });
    }
    return value.data;
  };

  /** Embeddings of the windows ending at `ends` (every point when null), in that order. */
  const embed = async (values: ArrayLike<number>, normalisation: Normalisation, ends: ArrayLike<number> | null = null): Promise<Float32Array> => {
    const n = ends === null ? values.length : ends.length;
    const windows = buildWindowRows(values, normalisation, ends);
    const out = new Float32Array(n * EMBEDDING_DIM);
    for (let start = 0; start < n; start += ROWS_PER_RUN) {
      const rows = Math.min(ROWS_PER_RUN, n - start);
      const input = windows.subarray(start * WINDOW_POINTS, (start + rows) * WINDOW_POINTS);
      const outputs = await run(encoder, 'encoder', { window: new Tensor('float32', input, [rows, WINDOW_POINTS]) });
      out.set(floatOutput(outputs, 'embedding', 'encoder'), start * EMBEDDING_DIM);
    }
    return out;
  };

  const predict = async (inputs: Float32Array, rows: number, weights: PredictorWeights): Promise<Float32Array> => {
    const feedsW = weightFeeds(weights);
    const out = new Float32Array(rows * EMBEDDING_DIM);
    for (let start = 0; start < rows; start += ROWS_PER_RUN) {
      const count = Math.min(ROWS_PER_RUN, rows - start);
      const x = inputs.subarray(start * EMBEDDING_DIM, (start + count) * EMBEDDING_DIM);
      const outputs = await run(predictor, 'predictor', { x: new Tensor('float32', x, [count, EMBEDDING_DIM]), ...feedsW });
      out.set(floatOutput(outputs, 'pred', 'predictor'), start * EMBEDDING_DIM);
    }
    return out;
  };

  /**
   * The energies of `points` only (ascending indices; 0 elsewhere, and before WARMUP_POINTS as in
   * the whole-series answer): a point's energy needs its own window's embedding and the one
   * before it, so the encoder runs on those windows alone, and the predictor on the earlier ones.
   */
  const energiesAt = async (
    values: ArrayLike<number>,
    points: ArrayLike<number>,
    normalisation: Normalisation,
    weights: PredictorWeights,
  ): Promise<Float64Array> => {
    const n = values.length;
    const out = new Float64Array(n);
    // The windows needed, each once: t − 1 and t for every point past the warm-up.
    const ends: number[] = [];
    // The points past the warm-up, and where each one's window lies among `ends`.
    const targets: number[] = [];
    const slotOf: number[] = [];
    for (let k = 0; k < points.length; k++) {
      const t = points[k]!;
      if (!Number.isSafeInteger(t) || t < 0 || t >= n || (k > 0 && t <= points[k - 1]!)) {
        throw new ModelError('MODEL_OPTIONS_INVALID', `points must be ascending indices below ${n} (points[${k}] = ${t})`, { modelVersion });
      }
      if (t < WARMUP_POINTS) continue;
      if (ends[ends.length - 1] !== t - 1) ends.push(t - 1);
      targets.push(t);
      slotOf.push(ends.length);
      ends.push(t);
    }
    if (targets.length === 0) return out;
    const embeddings = await embed(values, normalisation, ends);
    const inputs = new Float32Array(targets.length * EMBEDDING_DIM);
    slotOf.forEach((slot, k) => inputs.set(embeddings.subarray((slot - 1) * EMBEDDING_DIM, slot * EMBEDDING_DIM), k * EMBEDDING_DIM));
    const predicted = await predict(inputs, targets.length, weights);
    targets.forEach((t, k) => (out[t] = predictionEnergy(predicted, k, embeddings, slotOf[k]!)));
    return out;
  };

  const graphs: TrainingGraphs = {
    async trainStep(mode, feeds, trained) {
      const graph = mode === 'head' ? 'predictor_head_train_step' : 'predictor_train_step';
      const outputs = await run(mode === 'head' ? headTrainStep : trainStep, graph, feeds);
      const next: Record<string, Float32Array> = {};
      for (const name of trained) {
        next[name] = floatOutput(outputs, `${name}_new`, graph);
        next[`m_${name}`] = floatOutput(outputs, `m_${name}_new`, graph);
        next[`v_${name}`] = floatOutput(outputs, `v_${name}_new`, graph);
      }
      return { loss: floatOutput(outputs, 'loss', graph)[0] ?? Number.NaN, next };
    },
    async headGram(feeds) {
      const outputs = await run(headGram, 'predictor_head_gram', feeds);
      const out: Record<string, Float32Array> = {};
      for (const name of ['gram', 'cross', 'a_mean', 'r_mean', 'diag_mean']) {
        out[name] = floatOutput(outputs, name, 'predictor_head_gram');
      }
      return out;
    },
    async headRidge(feeds) {
      const outputs = await run(headRidge, 'predictor_head_ridge', feeds);
      return {
        w2: floatOutput(outputs, 'w2_new', 'predictor_head_ridge'),
        b2: floatOutput(outputs, 'b2_new', 'predictor_head_ridge'),
      };
    },
    async headRidgeDual(feeds) {
      const outputs = await run(headRidgeDual, 'predictor_head_ridge_dual', feeds);
      return {
        w2: floatOutput(outputs, 'w2_new', 'predictor_head_ridge_dual'),
        b2: floatOutput(outputs, 'b2_new', 'predictor_head_ridge_dual'),
      };
    },
    async features(feeds) {
      return floatOutput(await run(features, 'predictor_features', feeds), 'a', 'predictor_features');
    },
    async evalLoss(feeds) {
      const outputs = await run(evalLoss, 'predictor_eval', feeds);
      return floatOutput(outputs, 'loss', 'predictor_eval')[0] ?? Number.NaN;
    },
  };

  return {
    modelVersion,
    genericWeights,
    embed,

    async energies(values, opts: EnergyOptions = {}): Promise<EnergyResult> {
      assertFiniteSeries(values);
      const weights = opts.weights ?? genericWeights;
      if (opts.weights !== undefined) assertPredictorWeights(opts.weights);
      const normalisation = opts.normalisation ?? robustNormalisation(values);
      const n = values.length;
      if (opts.points !== undefined) {
        if (opts.includeEmbeddings === true) {
          throw new ModelError('MODEL_OPTIONS_INVALID', 'energies of some points come without embeddings (points with includeEmbeddings)', { modelVersion });
        }
        return { energies: await energiesAt(values, opts.points, normalisation, weights), embeddings: null, normalisation };
      }
      const embeddings = await embed(values, normalisation);
      let energies: Float64Array = new Float64Array(n);
      if (n > WARMUP_POINTS) {
        const rows = n - WARMUP_POINTS;
        const inputs = embeddings.subarray((WARMUP_POINTS - 1) * EMBEDDING_DIM, (n - 1) * EMBEDDING_DIM);
        energies = energiesFromPredictions(embeddings, await predict(inputs, rows, weights), n);
      }
      let perPoint: Float32Array[] | null = null;
      if (opts.includeEmbeddings === true) {
        perPoint = new Array<Float32Array>(n);
        for (let t = 0; t < n; t++) perPoint[t] = embeddings.subarray(t * EMBEDDING_DIM, (t + 1) * EMBEDDING_DIM);
      }
      return { energies, embeddings: perPoint, normalisation };
    },

    async fineTune(values: ArrayLike<number>, opts: FineTuneOptions = {}): Promise<FineTuneResult> {
      return runFineTune(values, opts, { embed, graphs, genericWeights, modelVersion });
    },

    async close(): Promise<void> {
      if (closed) return;
      closed = true;
      await Promise.all(sessions.map((s) => s.release()));
    },
  };
}
