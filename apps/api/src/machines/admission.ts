// The admission gate in front of the learned model's expensive work (MODEL_CALLS_MAX_RUNNING,
// MODEL_CALLS_MAX_QUEUED). Unbounded, a burst of large detections with embeddings holds tens of
// megabytes each at once and every one of them slows down; bounded, at most `maxRunning` run, at
// most `maxQueued` wait in arrival order, and the rest are refused at once with a retriable 503
// (the app's error handler adds `Retry-After`), which clients and load balancers know how to back
// off from.
import { AppError, ERRORS } from '../errors.js';

export interface AdmissionLimits {
  /** Calls that may run at once; at least 1. */
  readonly maxRunning: number;
  /** Calls that may wait for a running slot; 0 refuses every call beyond `maxRunning`. */
  readonly maxQueued: number;
}

export class AdmissionGate {
  private running = 0;
  private readonly waiting: (() => void)[] = [];

  constructor(private readonly limits: AdmissionLimits) {}

  /** Calls running now. */
  get runningCount(): number {
    return this.running;
  }

  /** Calls waiting for a slot now. */
  get queuedCount(): number {
    return this.waiting.length;
  }

  /** Runs `work` when a slot is free; rejects with ServerBusy at once when the queue is full too. */
  async run<T>(work: () => Promise<T>): Promise<T> {
    if (this.running < this.limits.maxRunning) {
      this.running += 1;
    } else if (this.waiting.length < this.limits.maxQueued) {
      // The finishing call hands its slot over, so `running` already counts this one.
      await new Promise<void>((resolve) => this.waiting.push(resolve));
    } else {
      throw new AppError(
        ERRORS.ServerBusy,
        `The service is running as many learned-model calls as it allows (${this.limits.maxRunning} running, ${this.limits.maxQueued} waiting). Retry shortly.`,
      );
    }
    try {
      return await work();
    } finally {
      const next = this.waiting.shift();
      if (next) next();
      else this.running -= 1;
    }
  }
}
