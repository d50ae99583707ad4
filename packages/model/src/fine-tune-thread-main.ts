// The fine-tuning thread's own side (startFineTuneThread): builds a runtime, then answers fine-tune requests
// one at a time. Only ever loaded in a worker thread (it reads workerData and parentPort).
import { parentPort, workerData } from 'node:worker_threads';
import type { FineTuneResult } from './contract.js';
import { isModelError } from './errors.js';
import { createModelRuntime, type ModelRuntimeOptions } from './runtime.js';
import type { ThreadReply, ThreadRequest } from './fine-tune-thread.js';

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
        const result: FineTuneResult = await runtime.fineTune(request.values, request.options);
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
