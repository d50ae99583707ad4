// The model thread's own side (startFineTuneThread): builds a runtime, then answers fine-tune and
// energies requests one at a time. Only ever loaded in a worker thread (it reads workerData and parentPort).
import { parentPort, workerData } from 'node:worker_threads';
import { EMBEDDING_DIM } from './contract.js';
import { isModelError } from './errors.js';
import { createModelRuntime, type ModelRuntimeOptions } from './runtime.js';
import type { ThreadEnergies, ThreadReply, ThreadRequest } from './fine-tune-thread.js';

function describe(err: unknown): { code: string; message: string } {
  if (isModelError(err)) return { code: err.code, message: err.message };
  return { code: 'MODEL_WORKER_FAILED', message: err instanceof Error ? err.message : String(err) };
}

async function serve(): Promise<void> {
  const port = parentPort;
  if (port === null) return;
  const { runtimeOptions } = workerData as { runtimeOptions: ModelRuntimeOptions };
  let runtime;
  try {
    runtime = await createModelRuntime(runtimeOptions);
  } catch (err) {
    port.postMessage({ kind: 'error', id: null, ...describe(err) } satisfies ThreadReply);
    return;
  }
  let queue: Promise<void> = Promise.resolve();
  port.on('message', (request: ThreadRequest) => {
    queue = queue.then(async () => {
      try {
        if (request.kind === 'energies') {
          const answer = await runtime.energies(request.values, request.options);
          // The per-point embeddings are views on one buffer: it crosses whole, once.
          const views = answer.embeddings;
          const first = views?.[0];
          const flat = views === null ? null : first === undefined ? new Float32Array(0) : new Float32Array(first.buffer, first.byteOffset, views.length * EMBEDDING_DIM);
          const result: ThreadEnergies = { energies: answer.energies, embeddings: flat, normalisation: answer.normalisation };
          const transfer = [answer.energies.buffer as ArrayBuffer, ...(flat === null ? [] : [flat.buffer as ArrayBuffer])];
          port.postMessage({ kind: 'energies', id: request.id, result } satisfies ThreadReply, transfer);
          return;
        }
        const result = await runtime.fineTune(request.values, request.options);
        const transfer = [...new Set(Object.values(result.weights.tensors).map((t) => t.data.buffer as ArrayBuffer))];
        port.postMessage({ kind: 'result', id: request.id, result } satisfies ThreadReply, transfer);
      } catch (err) {
        port.postMessage({ kind: 'error', id: request.id, ...describe(err) } satisfies ThreadReply);
      }
    });
  });
  port.postMessage({ kind: 'ready' } satisfies ThreadReply);
}

void serve();
