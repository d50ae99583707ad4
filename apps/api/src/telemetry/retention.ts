// Retention of stored streaming results: a sweep at start and then every `intervalMs` deletes the
// points older than the retention (by the point's own timestamp). Several replicas may sweep the
// same store: a sweep is idempotent, and the ClickHouse store issues its mutation only when rows
// are due. A failed sweep is logged and retried at the next one.
import type { FastifyBaseLogger } from 'fastify';
import type { ResultStore } from '@adp/streaming';

export const DAY_MS = 86_400_000;
/** Between sweeps: results may outlive the retention by up to this long. */
export const RETENTION_SWEEP_MS = 3_600_000;

export interface RetentionOptions {
  readonly results: Pick<ResultStore, 'deleteBefore'>;
  /** RESULTS_RETENTION_DAYS; at least 1. */
  readonly days: number;
  readonly log: Pick<FastifyBaseLogger, 'info' | 'warn'>;
  /** Default RETENTION_SWEEP_MS. */
  readonly intervalMs?: number;
  /** Epoch milliseconds. Default Date.now. */
  readonly now?: () => number;
}

export interface RetentionSweeper {
  /** Resolves after the sweep under way, if any, has finished; no sweep starts after. */
  stop(): Promise<void>;
}

export function startRetention(options: RetentionOptions): RetentionSweeper {
  const now = options.now ?? Date.now;
  let stopped = false;
  let running: Promise<void> = Promise.resolve();
  const sweep = (): void => {
    if (stopped) return;
    running = running.then(async () => {
      if (stopped) return;
      const beforeMs = Math.max(0, now() - options.days * DAY_MS);
      try {
        await options.results.deleteBefore(beforeMs);
        options.log.info({ before: new Date(beforeMs).toISOString() }, 'results past their retention deleted');
      } catch (err) {
        options.log.warn({ err }, 'could not delete results past their retention; retried at the next sweep');
      }
    });
  };
  sweep();
  const timer = setInterval(sweep, options.intervalMs ?? RETENTION_SWEEP_MS);
  timer.unref();
  return {
    async stop(): Promise<void> {
      stopped = true;
      clearInterval(timer);
      await running;
    },
  };
}
