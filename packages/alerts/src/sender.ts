// Where a delivery attempt runs: in the dispatcher's own thread, or in a delivery thread of its own.
// An attempt costs the thread that makes it a few tenths of a millisecond of CPU (signing, the
// HTTP exchange, its timer); on the embedded default the dispatcher shares the API's thread with
// the stream worker, so a burst of deliveries to many targets slows detection. In the delivery
// thread the dispatcher's thread keeps only the schedule (retries, per-target limits) and the log.
// The thread signs too: the secrets in force go with each attempt.
import { setMaxListeners } from 'node:events';
import { Worker } from 'node:worker_threads';
import type { Lookup } from './address-guard.js';
import { DeliveryConnections, signAndAttempt, type AttemptOutcome } from './deliver.js';
import type { ThreadAttempt, ThreadReply, ThreadRequest, ThreadSettings } from './sender-thread.js';

export type SenderAttempt = Omit<ThreadAttempt, 'id'>;

export interface AttemptSender {
  /** Readies what attempts need (a thread: started now, so that its start does not delay the first delivery). */
  start(): void;
  send(attempt: SenderAttempt): Promise<AttemptOutcome>;
  /** Abandons the attempts in flight (they answer as abandoned) and closes the connections. */
  close(): Promise<void>;
}

export interface SenderOptions extends ThreadSettings {
  /** Name resolution (tests); default the system's. Only in this thread: a function cannot go to another. */
  readonly lookup?: Lookup;
}

/** Attempts in the calling thread. */
export function inlineSender(options: SenderOptions): AttemptSender {
  const connections = new DeliveryConnections(options);
  const abort = new AbortController();
  // Every attempt in flight listens: thousands at once is normal.
  setMaxListeners(0, abort.signal);
  return {
    start() {},
    send(attempt) {
      return signAndAttempt(attempt, { signal: abort.signal, connections, ...(options.lookup ? { lookup: options.lookup } : {}) });
    },
    close() {
      abort.abort();
      connections.close();
      return Promise.resolve();
    },
  };
}

const stoppedOutcome = (why: string): AttemptOutcome => ({ ok: false, statusCode: null, latencyMs: 0, error: why });
/** How long `close` waits for the thread to answer the attempts it abandons, ms. */
const CLOSE_WAIT_MS = 2_000;

/**
 * Attempts in a delivery thread, started by `start` or the first attempt. A thread that fails or exits
 * answers its attempts as failed (the dispatcher retries them on its schedule); the next attempt
 * starts a new one.
 */
export function threadSender(options: ThreadSettings, entry: URL = new URL('./sender-thread-bootstrap.mjs', import.meta.url)): AttemptSender {
  const settings: ThreadSettings = { maxSocketsPerAddress: options.maxSocketsPerAddress, idleMs: options.idleMs };
  let worker: Worker | null = null;
  let nextId = 1;
  let closed = false;
  const pending = new Map<number, (outcome: AttemptOutcome) => void>();
  /** The attempts each thread has been given and not answered: a thread that dies fails only its own. */
  const given = new Map<Worker, Set<number>>();

  const settle = (id: number, outcome: AttemptOutcome): void => {
    const resolve = pending.get(id);
    pending.delete(id);
    resolve?.(outcome);
  };
  const startThread = (): Worker => {
    // No inherited flags: under `npm start` they carry the main thread's module hooks
    // (instrumentation), which the bootstrap cannot run before its own loader.
    const started = new Worker(entry, { workerData: settings, execArgv: [] });
    const own = new Set<number>();
    given.set(started, own);
    started.on('message', (reply: ThreadReply) => {
      for (const { id, outcome } of reply.outcomes) {
        own.delete(id);
        settle(id, outcome);
      }
    });
    const lost = (why: string): void => {
      if (worker === started) worker = null;
      for (const id of own) settle(id, stoppedOutcome(why));
      own.clear();
    };
    started.on('error', (err) => lost(`the delivery thread failed: ${err.message}`));
    started.on('exit', (code) => {
      lost(`the delivery thread exited (${code})`);
      given.delete(started);
    });
    // The thread's connections and timers do not keep the process alive; the attempts' owners do.
    started.unref();
    return started;
  };
  // The attempts of one turn of the event loop (an alert's targets, a resumed backlog) go in one message.
  let queued: ThreadAttempt[] = [];
  const flush = (): void => {
    const attempts = queued;
    queued = [];
    if (closed) {
      for (const attempt of attempts) settle(attempt.id, stoppedOutcome('abandoned: the dispatcher stopped'));
      return;
    }
    worker ??= startThread();
    const own = given.get(worker)!;
    for (const attempt of attempts) own.add(attempt.id);
    worker.postMessage({ kind: 'attempts', attempts } satisfies ThreadRequest);
  };
  return {
    start() {
      if (!closed) worker ??= startThread();
    },
    send(attempt) {
      if (closed) return Promise.resolve(stoppedOutcome('abandoned: the dispatcher stopped'));
      const id = nextId++;
      return new Promise<AttemptOutcome>((resolve) => {
        pending.set(id, resolve);
        if (queued.length === 0) setImmediate(flush);
        queued.push({ ...attempt, id });
      });
    },
    async close() {
      closed = true;
      const running = worker;
      if (running === null) return;
      if (pending.size > 0) {
        running.postMessage({ kind: 'abort' } satisfies ThreadRequest);
        const deadline = Date.now() + CLOSE_WAIT_MS;
        while (pending.size > 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 5));
      }
      worker = null;
      await running.terminate();
      for (const id of [...pending.keys()]) settle(id, stoppedOutcome('abandoned: the dispatcher stopped'));
    },
  };
}
