// Delivery attempts in a thread of their own. In the embedded default the dispatcher shares its
// process with the stream worker and the API, and each attempt (the request written, the answer
// parsed, the sockets' events) is main-thread work that judging would otherwise have: with a
// hundred slow receivers that was thousands of requests in flight beside detection. Here the
// attempts run on a worker thread, with its own event loop and its own connection pools; the
// dispatcher (queue, retries, the log) stays where it was and only sends each signed request over.
import { Worker } from 'node:worker_threads';
import type { AttemptOutcome, AttemptRequest } from './deliver.js';

/** What the thread needs of an attempt: everything but the signal, the pools and the lookup (its own). */
export type ThreadAttempt = Omit<AttemptRequest, 'signal' | 'connections' | 'lookup'>;

export type ThreadMessage =
  | { readonly type: 'attempt'; readonly id: number; readonly request: ThreadAttempt }
  | { readonly type: 'abort'; readonly id: number }
  | { readonly type: 'close' };

export interface ThreadReply {
  readonly id: number;
  readonly outcome: AttemptOutcome;
}

export interface DeliveryThread {
  attempt(request: ThreadAttempt, signal?: AbortSignal): Promise<AttemptOutcome>;
  /** Abandons what is in flight and ends the thread. */
  close(): Promise<void>;
}

export function startDeliveryThread(pools: { readonly maxSocketsPerAddress: number; readonly idleMs: number }): DeliveryThread {
  const worker = new Worker(new URL('./delivery-thread-bootstrap.mjs', import.meta.url), { workerData: pools });
  const pending = new Map<number, (outcome: AttemptOutcome) => void>();
  let nextId = 1;
  let ended: string | null = null;
  const failAll = (reason: string): void => {
    ended = reason;
    for (const resolve of pending.values()) resolve({ ok: false, statusCode: null, latencyMs: 0, error: reason });
    pending.clear();
  };
  worker.on('message', (reply: ThreadReply) => {
    const resolve = pending.get(reply.id);
    pending.delete(reply.id);
    resolve?.(reply.outcome);
  });
  // An attempt the thread cannot answer is a failed attempt: the dispatcher retries it on its schedule.
  worker.on('error', (err) => failAll(`the delivery thread failed: ${err.message}`));
  worker.on('exit', (code) => failAll(`the delivery thread exited (${code})`));
  // Idle, it does not keep the process alive.
  worker.unref();
  return {
    attempt(request, signal) {
      if (ended !== null) return Promise.resolve({ ok: false, statusCode: null, latencyMs: 0, error: ended });
      const id = nextId++;
      return new Promise<AttemptOutcome>((resolve) => {
        const abandon = (): void => worker.postMessage({ type: 'abort', id } satisfies ThreadMessage);
        signal?.addEventListener('abort', abandon, { once: true });
        pending.set(id, (outcome) => {
          signal?.removeEventListener('abort', abandon);
          resolve(outcome);
        });
        worker.postMessage({ type: 'attempt', id, request } satisfies ThreadMessage);
        if (signal?.aborted) abandon();
      });
    },
    async close() {
      if (ended !== null) return;
      const exited = new Promise<void>((resolve) => worker.once('exit', () => resolve()));
      worker.postMessage({ type: 'close' } satisfies ThreadMessage);
      // The thread ends once its port is closed and its sockets are gone; terminate if it lingers.
      const timer = setTimeout(() => void worker.terminate(), 2_000);
      await exited;
      clearTimeout(timer);
    },
  };
}
