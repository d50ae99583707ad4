// Vendor detection threads (VENDOR_DETECTION_THREADS): a request's body bytes go to a thread of a
// piscina pool, which reads, validates, detects and writes the answer; the event loop keeps only
// the HTTP work, authentication, metering and logging. That raises the requests a process answers
// per second on a machine with a spare core, but the hand-off (the body copied to the thread,
// the answer back, a sleeping thread woken) adds to a request's own time; so the routes hand off
// only while other vendor requests are in flight (./plugin.ts) and answer a lone one in place.
import { Piscina } from 'piscina';
import { VendorError } from './errors.js';
import type { VendorAnswer } from './answer.js';
import type { VendorTask, VendorTaskReply } from './detect-thread.js';
import { threadExecArgv } from '@adp/model';

export interface VendorThreads {
  /** True once the threads have started and answered a first task. */
  readonly ready: boolean;
  /** Starts the threads in the background (once); until they are ready, requests are answered in place. */
  start(): void;
  /** The answer, or a VendorError for a bad request; other failures reject as they are. */
  answer(task: VendorTask): Promise<VendorAnswer>;
  /** Waits for the requests already handed off, then stops the threads. */
  close(): Promise<void>;
}

/**
 * `threads` (>= 1) detection threads, started by `start` (the routes call it when the server
 * listens, or on the first request of an app that never listens), not when the app is built.
 */
export function vendorThreads(
  threads: number,
  onStartFailed: (error: unknown) => void,
  /** The threads' entry module (tests give one that fails). */
  entry: URL = new URL('./detect-thread-bootstrap.mjs', import.meta.url),
): VendorThreads {
  let pool: Piscina<VendorTask, VendorTaskReply> | null = null;
  let ready = false;
  return {
    get ready() {
      return ready;
    },
    start() {
      if (pool !== null) return;
      const started = new Piscina<VendorTask, VendorTaskReply>({
        filename: entry.href,
        minThreads: threads,
        maxThreads: threads,
        // Threads stay up: starting one (loading the engine's modules) costs far more than a request.
        idleTimeout: Number.POSITIVE_INFINITY,
        concurrentTasksPerWorker: 1,
        execArgv: threadExecArgv(),
      });
      pool = started;
      let failed = false;
      const fail = (error: unknown) => {
        if (failed) return;
        failed = true;
        ready = false;
        onStartFailed(error);
        // A thread that cannot start would be replaced by another that cannot either.
        void started.destroy().catch(() => undefined);
      };
      // A thread's failure after the start rejects the request it had (a 500) and piscina replaces
      // the thread; one before the first answer turns the threads off.
      started.on('error', (error: unknown) => {
        if (!ready) fail(error);
      });
      // An empty body is a cheap task that loads the thread's modules (and answers a refusal).
      started.run({ body: new Uint8Array(0), operation: 'last', style: 'v1.1' }).then(
        () => {
          if (!failed) ready = true;
        },
        fail,
      );
    },
    async answer(task) {
      if (pool === null) throw new Error('vendor detection threads are not started');
      const reply = await pool.run(task);
      if ('refusal' in reply) throw new VendorError(reply.refusal.code, reply.refusal.message);
      const { body, points } = reply.answer;
      return { body: typeof body === 'string' ? body : Buffer.from(body.buffer, body.byteOffset, body.byteLength), points };
    },
    async close() {
      ready = false;
      // A pool destroyed after a failed start has nothing left to wait for.
      await pool?.close().catch(() => undefined);
    },
  };
}
