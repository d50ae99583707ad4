// API_WORKERS > 1: this process is the cluster's primary. It serves nothing itself: it starts the
// worker processes (this same entry point, under node:cluster, so each opens the whole platform
// as a replica and listens on the shared port; the primary hands connections out in turn), the
// first alone, so that its start creates the default organization and keys before others look
// for them, then the rest. A worker that dies is replaced; SIGINT/SIGTERM ask every worker to
// shut down gracefully, and the primary exits once they have.
import cluster, { type Worker } from 'node:cluster';

/** The message a worker gets instead of (or besides) a signal: shut down as on that signal. */
export const SHUTDOWN_MESSAGE = 'adp:shutdown';
export interface ShutdownMessage {
  readonly type: typeof SHUTDOWN_MESSAGE;
  readonly signal: NodeJS.Signals;
}

export function isShutdownMessage(message: unknown): message is ShutdownMessage {
  return typeof message === 'object' && message !== null && (message as { type?: unknown }).type === SHUTDOWN_MESSAGE;
}

export interface PrimaryOptions {
  readonly workers: number;
  /** Each worker's SHUTDOWN_GRACE_MS: how long the primary waits for them before killing them. */
  readonly shutdownGraceMs: number;
  readonly log: (line: string) => void;
}

/** Wait before replacing a worker that died, ms: a worker that cannot start does not spin. */
const REPLACE_AFTER_MS = 1_000;

/** Starts the workers; resolves once all listen, rejects if the first exits before it listens. */
export async function runPrimary(options: PrimaryOptions): Promise<void> {
  let stopping = false;
  const listening = (worker: Worker): Promise<void> =>
    new Promise((resolve, reject) => {
      const onExit = (code: number | null, signal: string | null): void =>
        reject(new Error(`API worker ${worker.process.pid ?? '?'} exited before it listened (${signal ?? `code ${code ?? '?'}`})`));
      worker.once('exit', onExit);
      worker.once('listening', () => {
        worker.off('exit', onExit);
        resolve();
      });
    });
  const start = (): Worker => {
    const worker = cluster.fork();
    worker.on('exit', (code, signal) => {
      if (stopping) return;
      options.log(`API worker ${worker.process.pid ?? '?'} exited (${signal ?? `code ${code}`}); starting another`);
      setTimeout(() => {
        if (!stopping) start();
      }, REPLACE_AFTER_MS).unref();
    });
    return worker;
  };

  const stop = (signal: NodeJS.Signals): void => {
    if (stopping) return;
    stopping = true;
    const workers = Object.values(cluster.workers ?? {}).filter((w): w is Worker => w !== undefined);
    for (const worker of workers) worker.send({ type: SHUTDOWN_MESSAGE, signal } satisfies ShutdownMessage, () => undefined);
    const deadline = setTimeout(() => {
      options.log('API workers took too long to shut down: killing them');
      for (const worker of workers) worker.process.kill('SIGKILL');
    }, options.shutdownGraceMs + 2_000);
    deadline.unref();
    void Promise.all(workers.map((worker) => (worker.isDead() ? null : new Promise((resolve) => worker.once('exit', resolve))))).then(() => {
      clearTimeout(deadline);
      process.exit(workers.some((worker) => worker.process.exitCode !== 0) ? 1 : 0);
    });
  };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);

  const first = start();
  try {
    await listening(first);
  } catch (err) {
    stopping = true;
    throw err;
  }
  await Promise.all(Array.from({ length: options.workers - 1 }, () => listening(start())));
  options.log(`API: ${options.workers} worker processes listening (primary ${process.pid})`);
}
