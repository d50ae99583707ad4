// Typed failures of the model package. The API maps these to its own coded errors at the HTTP edge
// (the package cannot depend on the app), so it keeps this small registry of its own.

export const MODEL_ERROR_CODES = {
  /** Fine-tuning needs at least `MIN_FINETUNE_POINTS` values. The caller's input, not an outage. */
  MODEL_SERIES_TOO_SHORT: { retriable: false },
  /** A value in the series is NaN or infinite. */
  MODEL_SERIES_INVALID: { retriable: false },
  /** Options that cannot go together or point outside the series: the caller's bug. */
  MODEL_OPTIONS_INVALID: { retriable: false },
  /** Predictor weights with missing tensors, wrong shapes or an unreadable byte encoding. */
  MODEL_WEIGHTS_INVALID: { retriable: false },
  /** An asset (ONNX graph, generic weights, manifest) is missing or unreadable. */
  MODEL_ASSETS_UNAVAILABLE: { retriable: false },
  /** onnxruntime failed while running a graph. Context says which graph. */
  MODEL_INFERENCE_FAILED: { retriable: true },
  /** The runtime was closed. */
  MODEL_CLOSED: { retriable: false },
  /** The fine-tuning thread died or could not start. */
  MODEL_WORKER_FAILED: { retriable: true },
} as const;

export type ModelErrorCode = keyof typeof MODEL_ERROR_CODES;

export class ModelError extends Error {
  override readonly name = 'ModelError';
  readonly code: ModelErrorCode;
  readonly retriable: boolean;
  /** The model version the failure happened with, when known. */
  readonly modelVersion: string | undefined;

  constructor(code: ModelErrorCode, message: string, options?: { cause?: unknown; modelVersion?: string }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.retriable = MODEL_ERROR_CODES[code].retriable;
    this.modelVersion = options?.modelVersion;
  }
}

export function isModelError(value: unknown): value is ModelError {
  return value instanceof ModelError;
}

export function isModelErrorCode(value: string): value is ModelErrorCode {
  return Object.hasOwn(MODEL_ERROR_CODES, value);
}
