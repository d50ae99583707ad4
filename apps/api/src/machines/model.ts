// The slice of the learned model runtime (@adp/model) the native API uses, and the lazy holder that loads
// it on the first native request, so the app starts (and its other routes serve) without paying
// for the ONNX sessions.
import {
  createModelRuntime,
  isModelError,
  startFineTuneThread,
  type EnergyResult,
  type FineTuneOptions,
  type FineTuneResult,
  type FineTuneThread,
  type Normalisation,
  type PredictorWeights,
} from '@adp/model';
import { AppError, ERRORS } from '../errors.js';

export interface EnergyOptions {
  readonly weights?: PredictorWeights;
  readonly normalisation?: Normalisation;
  readonly includeEmbeddings?: boolean;
  /** Only these points' energies (the embedded worker's; see @adp/model's EnergyOptions). */
  readonly points?: ArrayLike<number>;
}

/** What the baseline service and the detect route need from the model. */
export interface NativeModel {
  /** Reported to clients as `model_version`. */
  readonly modelVersion: string;
  /** Energies of a series. Runs off the event loop (a worker thread). */
  energies(values: ArrayLike<number>, options?: EnergyOptions): Promise<EnergyResult>;
  /** Fine-tunes the predictor on healthy data. Runs off the event loop (a worker thread). */
  fineTune(values: ArrayLike<number>, options?: FineTuneOptions): Promise<FineTuneResult>;
  close(): Promise<void>;
}

/** Builds the production model. */
export type NativeModelFactory = () => Promise<NativeModel>;

/**
 * Model threads kept by the packaged model (fine-tunes and energies): one per core of the 2-core
 * machine, so two calls run at once while the event loop parses, joins shapes and answers.
 */
export const FINE_TUNE_THREADS = 2;
/** After a thread fails to start, how long calls run in process before a thread is tried again. */
export const THREAD_RETRY_MS = 60_000;

/** A fine-tuning thread could not start; `cause` says why. */
export class ThreadStartError extends Error {
  override readonly name = 'ThreadStartError';
  constructor(cause: unknown) {
    super('the fine-tuning thread could not start', { cause });
  }
}

/**
 * Worker threads for fine-tuning and energies, started on first use and kept (each loads its own
 * ONNX sessions once). A call goes to the thread with the fewest calls in flight; a thread that
 * fails is dropped, so the next call starts a fresh one.
 */
export class FineTunePool {
  private readonly threads: { thread: Promise<FineTuneThread>; inFlight: number }[] = [];
  private closed = false;
  private startFailure: unknown = undefined;
  private startRefusedUntilMs = 0;

  constructor(
    private readonly size: number,
    private readonly start: () => Promise<FineTuneThread>,
    private readonly nowMs: () => number = Date.now,
  ) {}

  /** Threads started or starting. */
  get threadCount(): number {
    return this.threads.length;
  }

  fineTune(values: ArrayLike<number>, options?: FineTuneOptions): Promise<FineTuneResult> {
    return this.call((thread) => thread.fineTune(values, options));
  }

  energies(values: ArrayLike<number>, options?: EnergyOptions): Promise<EnergyResult> {
    return this.call((thread) => thread.energies(values, options));
  }

  private async call<T>(work: (thread: FineTuneThread) => Promise<T>): Promise<T> {
    if (this.closed) throw new AppError(ERRORS.ServiceUnavailable, 'The service is shutting down.');
    if (this.nowMs() < this.startRefusedUntilMs) throw new ThreadStartError(this.startFailure);
    let slot = this.threads.reduce<(typeof this.threads)[number] | undefined>(
      (best, candidate) => (best === undefined || candidate.inFlight < best.inFlight ? candidate : best),
      undefined,
    );
    if (slot === undefined || (slot.inFlight > 0 && this.threads.length < this.size)) {
      slot = { thread: this.start(), inFlight: 0 };
      this.threads.push(slot);
    }
    const current = slot;
    current.inFlight += 1;
    try {
      let thread: FineTuneThread;
      try {
        thread = await current.thread;
      } catch (cause) {
        this.drop(current);
        // Do not pay for a failing start on every call: try again after a pause.
        this.startFailure = cause;
        this.startRefusedUntilMs = this.nowMs() + THREAD_RETRY_MS;
        throw new ThreadStartError(cause);
      }
      return await work(thread);
    } catch (error) {
      if (error instanceof ThreadStartError) throw error;
      if (!isModelError(error) || error.code === 'MODEL_WORKER_FAILED') this.drop(current);
      throw error;
    } finally {
      current.inFlight -= 1;
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    const threads = this.threads.splice(0);
    await Promise.all(threads.map(async ({ thread }) => (await thread.catch(() => undefined))?.close()));
  }

  private drop(slot: (typeof this.threads)[number]): void {
    const index = this.threads.indexOf(slot);
    if (index >= 0) this.threads.splice(index, 1);
    void slot.thread.then((thread) => thread.close()).catch(() => undefined);
  }
}

/**
 * The production model from @adp/model: fine-tunes and energies in worker threads (never on the
 * event loop), with a runtime of its own in this thread for when no thread can start.
 */
export const loadPackagedModel: NativeModelFactory = async () => {
  const runtime = await createModelRuntime();
  const pool = new FineTunePool(FINE_TUNE_THREADS, () => startFineTuneThread());
  // A worker that cannot start at all (its loader, its sessions) must not take detection and
  // baselines down: the call runs in this thread instead (onnxruntime still runs the graphs on
  // its own threads; only the glue runs on the event loop). Failures of a started worker (and the
  // caller's bad series) are not retried.
  const inThreadElse = async <T>(threaded: () => Promise<T>, here: () => Promise<T>): Promise<T> => {
    try {
      return await threaded();
    } catch (error) {
      if (!(error instanceof ThreadStartError)) throw error;
      return here();
    }
  };
  return {
    modelVersion: runtime.modelVersion,
    energies: (values, options) =>
      inThreadElse(
        () => pool.energies(values, options),
        () => runtime.energies(values, options),
      ),
    fineTune: (values, options) =>
      inThreadElse(
        () => pool.fineTune(values, options),
        () => runtime.fineTune(values, options),
      ),
    close: async () => {
      await pool.close();
      await runtime.close();
    },
  };
};

/**
 * A model failure as the API reports it: the caller's series at fault is a 400 InvalidSeries;
 * anything else (a failed graph, a dead worker, unreadable assets or weights) is a retriable
 * ModelUnavailable with the cause in the log.
 */
export function toModelAppError(cause: unknown, doing: string): unknown {
  if (cause instanceof AppError) return cause;
  if (isModelError(cause) && (cause.code === 'MODEL_SERIES_INVALID' || cause.code === 'MODEL_SERIES_TOO_SHORT')) {
    return new AppError(ERRORS.InvalidSeries, `The learned model cannot use this series: ${cause.message}.`, { cause });
  }
  return new AppError(ERRORS.ModelUnavailable, `The learned model failed while ${doing}. Retry shortly.`, { cause });
}

/**
 * Loads the model once, on first use. A failed load is not remembered: the next request tries
 * again (the failure may be transient, such as memory pressure).
 */
export class ModelHolder {
  private loading: Promise<NativeModel> | undefined;
  private closed = false;

  constructor(private readonly factory: NativeModelFactory) {}

  get(): Promise<NativeModel> {
    if (this.closed) return Promise.reject(new AppError(ERRORS.ServiceUnavailable, 'The service is shutting down.'));
    if (!this.loading) {
      const loading = this.factory().catch((cause: unknown) => {
        if (this.loading === loading) this.loading = undefined;
        throw toModelAppError(cause, 'loading');
      });
      this.loading = loading;
    }
    return this.loading;
  }

  async close(): Promise<void> {
    this.closed = true;
    const loading = this.loading;
    this.loading = undefined;
    if (!loading) return;
    const model = await loading.catch(() => undefined);
    await model?.close();
  }
}
