// The engine variants' NAB runs spread over threads. Streaming the 35 files takes each variant
// about 25 s of one core and the variants are independent, so on the 2-core machine two threads
// halve the evaluation's wall time. Each thread runs whole variants (`nab-thread.ts`); the flags
// come back here and are scored in this thread, so the figures are the in-process run's.
import { Worker } from 'node:worker_threads';
import type { NabCorpus } from './nab-data.js';
import type { NabDetections } from './nab-run.js';

export interface NabThreadData {
  readonly repoRoot: string;
  readonly nabDir: string;
}

export interface NabThreadRequest {
  readonly variant: string;
}

export type NabThreadMessage =
  | { readonly kind: 'file'; readonly variant: string; readonly file: string; readonly ms: number; readonly error: string | undefined }
  | {
      readonly kind: 'done';
      readonly variant: string;
      readonly flags: readonly Uint8Array[];
      readonly elapsedMs: readonly number[];
      readonly errors: readonly (string | undefined)[];
      readonly plans: readonly unknown[];
    }
  | { readonly kind: 'failed'; readonly variant: string; readonly error: string };

export interface NabThreadOptions extends NabThreadData {
  readonly corpus: NabCorpus;
  readonly variants: readonly string[];
  readonly threads: number;
  readonly onFile?: (variant: string, file: string, ms: number, error: string | undefined) => void;
}

/** Each variant's NAB detections (as `detectNab` returns them), the variants spread over threads. */
export async function detectVariantsInThreads(options: NabThreadOptions): Promise<Map<string, NabDetections>> {
  const results = new Map<string, NabDetections>();
  const queue = [...options.variants];
  const threads = Math.max(1, Math.min(options.threads, queue.length));
  const data: NabThreadData = { repoRoot: options.repoRoot, nabDir: options.nabDir };

  const runThread = (): Promise<void> =>
    new Promise((resolve, reject) => {
      const worker = new Worker(new URL('./nab-thread-bootstrap.mjs', import.meta.url), { workerData: data });
      let settled = false;
      const finish = (error?: Error): void => {
        if (settled) return;
        settled = true;
        void worker.terminate();
        if (error === undefined) resolve();
        else reject(error);
      };
      const next = (): void => {
        const variant = queue.shift();
        if (variant === undefined) finish();
        else worker.postMessage({ variant } satisfies NabThreadRequest);
      };
      worker.on('message', (message: NabThreadMessage) => {
        if (message.kind === 'file') {
          options.onFile?.(message.variant, message.file, message.ms, message.error);
        } else if (message.kind === 'failed') {
          finish(new Error(`NAB thread, variant ${message.variant}: ${message.error}`));
        } else {
          results.set(message.variant, {
            detections: options.corpus.series.map((s, i) => ({
              file: s.file,
              rowCount: s.values.length,
              windows: s.windows,
              detections: Array.from(message.flags[i]!, (x) => x === 1),
            })),
            elapsedMs: [...message.elapsedMs],
            errors: [...message.errors],
            plans: [...message.plans],
          });
          next();
        }
      });
      worker.on('error', (error) => finish(error));
      worker.on('exit', (code) => finish(code === 0 ? undefined : new Error(`NAB thread exited with code ${code}`)));
      next();
    });

  await Promise.all(Array.from({ length: threads }, runThread));
  return results;
}
