// The model off the event loop: a worker thread that owns its own ModelRuntime and runs the same
// fineTune and energies code. Series and results cross the thread boundary by transfer, not copy.
import { Worker } from 'node:worker_threads';
import { EMBEDDING_DIM, type EnergyOptions, type EnergyResult, type FineTuneOptions, type FineTuneResult } from './contract.js';
import { isModelErrorCode, ModelError } from './errors.js';
import type { ModelRuntimeOptions } from './runtime.js';
import { threadExecArgv } from './thread-flags.js';

export interface FineTuneThread {
  /** Fine-tunes in the thread; calls on one thread run one after another. */
  fineTune(values: ArrayLike<number>, options?: FineTuneOptions): Promise<FineTuneResult>;
  /** `ModelRuntime.energies` in the thread (the same numbers: same graphs, same batches), queued with the fine-tunes. */
  energies(values: ArrayLike<number>, options?: EnergyOptions): Promise<EnergyResult>;
  /** Ends the thread; pending calls fail with MODEL_WORKER_FAILED. */
  close(): Promise<void>;
}

/** Messages between the caller and the thread (see fine-tune-thread-main.ts). */
export type ThreadReply =
  | { readonly kind: 'ready' }
  | { readonly kind: 'result'; readonly id: number; readonly result: FineTuneResult }
  | { readonly kind: 'energies'; readonly id: number; readonly result: ThreadEnergies }
  | { readonly kind: 'error'; readonly id: number | null; readonly code: string; readonly message: string };

/** An energies answer on the wire: the embeddings as the one [N*192] buffer the runtime's per-point views share. */
export interface ThreadEnergies {
  readonly energies: Float64Array;
  readonly embeddings: Float32Array | null;
  readonly normalisation: EnergyResult['normalisation'];
}

export type ThreadRequest =
  | { readonly kind: 'fineTune'; readonly id: number; readonly values: Float64Array; readonly options: FineTuneOptions }
  | { readonly kind: 'energies'; readonly id: number; readonly values: Float64Array; readonly options: EnergyOptions };

type Answer = FineTuneResult | ThreadEnergies;

/**
 * Starts a worker thread with its own runtime (its sessions load once, so reuse the thread for
 * many fine-tunes). The thread is TypeScript loaded through tsx (see fine-tune-thread-bootstrap.mjs).
 */
export async function startFineTuneThread(runtimeOptions: ModelRuntimeOptions = {}): Promise<FineTuneThread> {
  const worker = new Worker(new URL('./fine-tune-thread-bootstrap.mjs', import.meta.url), {
    execArgv: threadExecArgv(),
    workerData: { runtimeOptions },
  });
  const pending = new Map<number, { resolve: (r: Answer) => void; reject: (e: unknown) => void }>();
  let nextId = 1;
  let failure: ModelError | null = null;

  const failAll = (error: ModelError): void => {
    failure ??= error;
    for (const p of pending.values()) p.reject(error);
    pending.clear();
  };

  const ready = new Promise<void>((resolve, reject) => {
    worker.on('message', (msg: ThreadReply) => {
      if (msg.kind === 'ready') {
        resolve();
        return;
      }
      if (msg.kind === 'error' && msg.id === null) {
        const err = toModelError(msg.code, msg.message);
        reject(err);
        failAll(err);
        return;
      }
      const id = msg.id;
      if (id === null) return;
      const entry = pending.get(id);
      if (entry === undefined) return;
      pending.delete(id);
      if (msg.kind === 'result' || msg.kind === 'energies') entry.resolve(msg.result);
      else entry.reject(toModelError(msg.code, msg.message));
    });
    worker.on('error', (cause) => {
      const err = new ModelError('MODEL_WORKER_FAILED', 'the fine-tuning thread failed', { cause });
      reject(err);
      failAll(err);
    });
    worker.on('exit', (code) => {
      const err = new ModelError('MODEL_WORKER_FAILED', `the fine-tuning thread exited (code ${code})`);
      reject(err);
      failAll(err);
    });
  });
  try {
    await ready;
  } catch (err) {
    await worker.terminate();
    throw err;
  }

  const call = (kind: ThreadRequest['kind'], values: ArrayLike<number>, options: FineTuneOptions | EnergyOptions): Promise<Answer> => {
    if (failure !== null) return Promise.reject(failure);
    const id = nextId++;
    const copy = Float64Array.from(values);
    // `points` may be a plain array; the weights' arrays are copied (the caller keeps its predictor).
    return new Promise<Answer>((resolve, reject) => {
      pending.set(id, { resolve, reject });
      worker.postMessage({ kind, id, values: copy, options } as ThreadRequest, [copy.buffer]);
    });
  };

  return {
    async fineTune(values, options = {}) {
      return (await call('fineTune', values, options)) as FineTuneResult;
    },
    async energies(values, options = {}) {
      const answer = (await call('energies', values, options)) as ThreadEnergies;
      const flat = answer.embeddings;
      let embeddings: Float32Array[] | null = null;
      if (flat !== null) {
        const n = flat.length / EMBEDDING_DIM;
        embeddings = new Array<Float32Array>(n);
        for (let t = 0; t < n; t++) embeddings[t] = flat.subarray(t * EMBEDDING_DIM, (t + 1) * EMBEDDING_DIM);
      }
      return { energies: answer.energies, embeddings, normalisation: answer.normalisation };
    },
    async close() {
      failAll(new ModelError('MODEL_WORKER_FAILED', 'the fine-tuning thread was closed'));
      await worker.terminate();
    },
  };
}

/** One fine-tune in a fresh worker thread (startup included); for repeated use keep a thread. */
export async function fineTuneInThread(
  values: ArrayLike<number>,
  options: FineTuneOptions & ModelRuntimeOptions = {},
): Promise<FineTuneResult> {
  const { assetsDir, intraOpThreads, ...fineTuneOptions } = options;
  const runtimeOptions: ModelRuntimeOptions = {
    ...(assetsDir === undefined ? {} : { assetsDir }),
    ...(intraOpThreads === undefined ? {} : { intraOpThreads }),
  };
  const worker = await startFineTuneThread(runtimeOptions);
  try {
    return await worker.fineTune(values, fineTuneOptions);
  } finally {
    await worker.close();
  }
}

function toModelError(code: string, message: string): ModelError {
  return new ModelError(isModelErrorCode(code) ? code : 'MODEL_WORKER_FAILED', message);
}
