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

/**
 * One NAB pass: an engine variant on the harness window; or a row of what ships (shipped.ts), by
 * its id, at the default sensitivity or another (the sensitivity sweep).
 */
export type NabThreadRequest = { readonly variant: string } | { readonly row: string; readonly sensitivity?: number };

/** The key a run's results are filed under: the variant's name, or the row's id and `@<sensitivity>` when given. */
export function runKey(run: NabThreadRequest): string {
  if ('variant' in run) return run.variant;
  return run.sensitivity === undefined ? run.row : `${run.row}@${run.sensitivity}`;
}

export type NabThreadMessage =
  | { readonly kind: 'file'; readonly run: string; readonly file: string; readonly ms: number; readonly error: string | undefined }
  | {
      readonly kind: 'done';
      readonly run: string;
      readonly flags: readonly Uint8Array[];
      readonly elapsedMs: readonly number[];
      readonly errors: readonly (string | undefined)[];
      readonly plans: readonly unknown[];
    }
  | { readonly kind: 'failed'; readonly run: string; readonly error: string };

export interface NabThreadOptions extends NabThreadData {
  readonly corpus: NabCorpus;
  /** The runs: variant names, or shipped rows (at a sensitivity for the sweep). */
  readonly runs: readonly (string | NabThreadRequest)[];
  readonly threads: number;
  /** Progress: the run's key (`runKey`), the file, its time and error. */
  readonly onFile?: (run: string, file: string, ms: number, error: string | undefined) => void;
}

/**
 * Each run's NAB detections (as `detectNab` returns them), filed under `runKey`, the runs spread
 * over threads.
 */
export async function detectVariantsInThreads(options: NabThreadOptions): Promise<Map<string, NabDetections>> {
  const results = new Map<string, NabDetections>();
  const queue: NabThreadRequest[] = options.runs.map((run) => (typeof run === 'string' ? { variant: run } : run));
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
        const run = queue.shift();
        if (run === undefined) finish();
        else worker.postMessage(run);
      };
      worker.on('message', (message: NabThreadMessage) => {
        if (message.kind === 'file') {
          options.onFile?.(message.run, message.file, message.ms, message.error);
        } else if (message.kind === 'failed') {
          finish(new Error(`NAB thread, run ${message.run}: ${message.error}`));
        } else {
          results.set(message.run, {
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
