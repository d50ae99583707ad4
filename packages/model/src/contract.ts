// The learned model as the rest of the platform sees it. The implementation runs ONNX graphs with
// onnxruntime-node; callers (the native API, the streaming workers) depend only on this.

/** Dimension of the embedding of one point (the window of points ending at it). */
export const EMBEDDING_DIM = 192;

/** The predictor's weights, as flat float32 arrays in the layout the ONNX graphs take. */
export interface PredictorWeights {
  /** Named tensors (e.g. `w1`, `b1`, `w2`, `b2`) with their shapes. */
  readonly tensors: Readonly<Record<string, { readonly dims: readonly number[]; readonly data: Float32Array }>>;
}

/** How values are scaled before they reach the encoder; stored with a baseline. */
export interface Normalisation {
  readonly center: number;
  readonly scale: number;
}

export interface EnergyOptions {
  readonly weights?: PredictorWeights;
  readonly normalisation?: Normalisation;
  readonly includeEmbeddings?: boolean;
  /**
   * Only these points' energies (indices in ascending order; the rest of the answer is 0): the
   * encoder then runs on each such point's window and the one before it, not on every window.
   * Not with `includeEmbeddings`.
   */
  readonly points?: ArrayLike<number>;
}

export interface EnergyResult {
  /** One per input point: the predictor's error on that point's embedding (0 where there is no history). */
  readonly energies: Float64Array;
  /** One 192-number embedding per input point, when asked for. */
  readonly embeddings: Float32Array[] | null;
  readonly normalisation: Normalisation;
}

export interface FineTuneOptions {
  /** Upper bound on epochs (Adam modes; `ridge` makes one pass); early stopping on a held-out tail usually ends sooner. */
  readonly maxEpochs?: number;
  /** Share of windows held out at the end of the series for early stopping. */
  readonly holdoutShare?: number;
  /** Adam learning rate (default 1e-3). */
  readonly learningRate?: number;
  /** Epochs without a better held-out loss before stopping (default 5). */
  readonly patience?: number;
  /** Training pairs per Adam step (default: 128, or more on long series so an epoch has at most 16 steps). */
  readonly batchSize?: number;
  /** Seed of the per-epoch shuffle; the same series and options give the same weights. */
  readonly seed?: number;
  /**
   * How the predictor is fine-tuned (first layer frozen except in `full`): `ridge` (default) solves
   * the output layer (w2, b2) in closed form, ridge towards the generic weights; `head` trains the
   * output layer with Adam; `full` trains all four tensors with Adam. See packages/model/README.md.
   */
  readonly mode?: 'ridge' | 'head' | 'full';
  /**
   * How `ridge` solves its system: `primal` (default) inverts the 1,200 x 1,200 Gram matrix of the
   * features; `dual` inverts the T x T kernel of the T training pairs instead (the same solution,
   * all strengths in one call, and the closer to an exact solve where T is well under 1,200, whose
   * Gram matrix is then nearly singular); `auto` takes `dual` when there are fewer training pairs
   * than features (a series of up to about 1,530 points), where it is the cheaper.
   */
  readonly ridgeForm?: 'primal' | 'dual' | 'auto';
}

export interface FineTuneStats {
  readonly status: 'completed' | 'skipped';
  readonly finalLoss: number;
  readonly epochsRun: number;
  readonly epochsMax: number;
  readonly earlyStopped: boolean;
  readonly windows: number;
  readonly durationSeconds: number;
}

export interface FineTuneResult {
  readonly weights: PredictorWeights;
  readonly normalisation: Normalisation;
  readonly stats: FineTuneStats;
  /**
   * The first point of the held-out tail: the energies of points from here on come from pairs the
   * fit never trained on (they only chose among candidate weights), so they calibrate the
   * baseline's energy statistics; the earlier points' energies are in-sample and too low.
   */
  readonly heldOutFrom: number;
}

export interface ModelRuntime {
  /** Reported to clients as `model_version`. */
  readonly modelVersion: string;
  /**
   * Energies (and optionally embeddings) of a series. Without `weights` the generic predictor is
   * used; without `normalisation` the series' own robust centre and scale are used.
   */
  energies(values: ArrayLike<number>, options?: EnergyOptions): Promise<EnergyResult>;
  /** Fine-tunes the predictor on healthy data with the encoder frozen. */
  fineTune(values: ArrayLike<number>, options?: FineTuneOptions): Promise<FineTuneResult>;
  close(): Promise<void>;
}
