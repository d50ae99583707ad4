// The delivery thread (see sender.ts): signs and sends the attempts it is sent, each within its
// timeout, over connections it keeps open per checked address, and answers each attempt's outcome.
// An `abort` message abandons those in flight (the dispatcher stopping).
import { setMaxListeners } from 'node:events';
import { parentPort, workerData } from 'node:worker_threads';
import { DeliveryConnections, signAndAttempt, type AttemptOutcome, type SignedDelivery } from './deliver.js';

/** One attempt, as the dispatcher hands it to the thread. */
export interface ThreadAttempt extends SignedDelivery {
  readonly id: number;
}

/** Attempts go to the thread, and their outcomes come back, in batches: one message per turn of either event loop. */
export type ThreadRequest = { readonly kind: 'attempts'; readonly attempts: readonly ThreadAttempt[] } | { readonly kind: 'abort' };
export interface ThreadReply {
  readonly outcomes: readonly { readonly id: number; readonly outcome: AttemptOutcome }[];
}
export interface ThreadSettings {
  readonly maxSocketsPerAddress: number;
  readonly idleMs: number;
}

const settings = workerData as ThreadSettings;
const connections = new DeliveryConnections(settings);
const newAbort = (): AbortController => {
  const controller = new AbortController();
  // Every attempt in flight listens: thousands at once is normal.
  setMaxListeners(0, controller.signal);
  return controller;
};
let abort = newAbort();

let answered: { id: number; outcome: AttemptOutcome }[] = [];
const answer = (id: number, outcome: AttemptOutcome): void => {
  if (answered.length === 0) {
    setImmediate(() => {
      const outcomes = answered;
      answered = [];
      parentPort?.postMessage({ outcomes } satisfies ThreadReply);
    });
  }
  answered.push({ id, outcome });
};

parentPort?.on('message', (request: ThreadRequest) => {
  if (request.kind === 'abort') {
    abort.abort();
    abort = newAbort();
    connections.close();
    return;
  }
  for (const attempt of request.attempts) start(attempt);
});

function start(attempt: ThreadAttempt): void {
  let outcome: Promise<AttemptOutcome>;
  try {
    outcome = signAndAttempt(attempt, { signal: abort.signal, connections });
  } catch (err) {
    // A secret the library cannot read: a failed attempt, as it would be in the dispatcher's thread.
    outcome = Promise.resolve({ ok: false, statusCode: null, latencyMs: 0, error: err instanceof Error ? err.message : String(err) });
  }
  void outcome.then((result) => answer(attempt.id, result));
}
