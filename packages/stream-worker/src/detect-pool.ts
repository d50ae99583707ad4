// Where a batch's series are judged: in the worker's own thread, or spread over detection threads.
// The engine costs about 0.04 ms per point (window 720) and is pure CPU, so on a machine with
// spare cores the threads multiply a worker's throughput while its main thread keeps fetching,
// decoding and writing. Each series' task goes to the least loaded thread, or back to the thread
// that judged it last (its live judge) while that is not much busier; a batch waits for all of
// its tasks.
// A thread that dies fails the calls it had (their batches are retried) and is replaced.
import { Worker } from 'node:worker_threads';
import type { JudgeReply, JudgeRequest } from './detect-thread.js';
import { judgeNewPoints, type JudgeResult, type JudgeSettings, type JudgeTask } from './new-points-judge.js';
import { threadExecArgv } from '@adp/model';

export interface Detector {
  /** Results in task order. */
  judge(tasks: readonly JudgeTask[], settings: JudgeSettings): Promise<JudgeResult[]>;
  close(): Promise<void>;
}

/** Judges in the calling thread. */
export function inlineDetector(): Detector {
  return {
    async judge(tasks, settings) {
      return tasks.map((task) => judgeNewPoints(task, settings));
    },
    async close() {},
  };
}

interface Pending {
  resolve(results: JudgeResult[]): void;
  reject(error: Error): void;
}

interface Thread {
  worker: Worker;
  /** Points queued on it, for balancing. */
  load: number;
  readonly pending: Map<number, Pending & { readonly load: number }>;
}

export class DetectionThreadError extends Error {
  override readonly name = 'DetectionThreadError';
}

/** Series whose last thread the pool remembers; beyond this it forgets them all and starts over. */
const MAX_HOMES = 200_000;

/** `threads` detection threads (>= 1). */
export function startDetectorPool(threads: number): Detector {
  let nextId = 1;
  let closed = false;
  const pool: Thread[] = [];

  function spawn(): Thread {
    const thread: Thread = {
      worker: new Worker(new URL('./detect-thread-bootstrap.mjs', import.meta.url), { execArgv: threadExecArgv() }),
      load: 0,
      pending: new Map(),
    };
    const fail = (error: Error) => {
      for (const pending of thread.pending.values()) pending.reject(error);
      thread.pending.clear();
      thread.load = 0;
      const index = pool.indexOf(thread);
      if (index >= 0 && !closed) pool[index] = spawn();
    };
    thread.worker.on('message', (reply: JudgeReply) => {
      const pending = thread.pending.get(reply.id);
      if (!pending) return;
      thread.pending.delete(reply.id);
      thread.load -= pending.load;
      if ('error' in reply) pending.reject(new DetectionThreadError(`detection failed in a thread: ${reply.error}`));
      else pending.resolve(reply.results);
    });
    thread.worker.on('error', (error) => fail(new DetectionThreadError(`a detection thread failed: ${error.message}`)));
    thread.worker.on('exit', (code) => {
      if (!closed) fail(new DetectionThreadError(`a detection thread exited (${code})`));
    });
    // Idle threads do not keep the process alive.
    thread.worker.unref();
    return thread;
  }

  for (let i = 0; i < Math.max(1, threads); i++) pool.push(spawn());
  /** The thread that judged each series last. */
  const homes = new Map<string, Thread>();

  function send(thread: Thread, tasks: JudgeTask[], settings: JudgeSettings, load: number): Promise<JudgeResult[]> {
    return new Promise((resolve, reject) => {
      const id = nextId++;
      thread.pending.set(id, { resolve, reject, load });
      thread.load += load;
      const request: JudgeRequest = { id, tasks, settings };
      thread.worker.postMessage(request);
    });
  }

  return {
    async judge(tasks, settings) {
      if (closed) throw new DetectionThreadError('the detection threads are closed');
      if (tasks.length === 0) return [];
      // Largest tasks first, each to the thread with the least queued work, or to the thread that
      // judged the series last (whose live judge continues it) while that one is not more than a
      // quarter of a fair share busier.
      const order = tasks.map((task, index) => ({ index, cost: task.newValues.length + 20 })).sort((a, b) => b.cost - a.cost);
      const slack = order.reduce((sum, { cost }) => sum + cost, 0) / pool.length / 4;
      const assigned = new Map<Thread, { indices: number[]; load: number }>();
      const planned = new Map(pool.map((thread) => [thread, thread.load] as const));
      if (homes.size > MAX_HOMES) homes.clear();
      for (const { index, cost } of order) {
        let best = pool[0]!;
        for (const thread of pool) if (planned.get(thread)! < planned.get(best)!) best = thread;
        const series = tasks[index]!.series;
        const home = series === undefined ? undefined : homes.get(series);
        if (home !== undefined && pool.includes(home) && planned.get(home)! <= planned.get(best)! + slack) best = home;
        if (series !== undefined) homes.set(series, best);
        planned.set(best, planned.get(best)! + cost);
        const entry = assigned.get(best) ?? { indices: [], load: 0 };
        entry.indices.push(index);
        entry.load += cost;
        assigned.set(best, entry);
      }
      const results = new Array<JudgeResult>(tasks.length);
      await Promise.all(
        [...assigned].map(async ([thread, { indices, load }]) => {
          const answers = await send(thread, indices.map((index) => tasks[index]!), settings, load);
          indices.forEach((index, k) => (results[index] = answers[k]!));
        }),
      );
      return results;
    },
    async close() {
      closed = true;
      await Promise.all(pool.map((thread) => thread.worker.terminate()));
      for (const thread of pool) {
        for (const pending of thread.pending.values()) pending.reject(new DetectionThreadError('the detection threads are closed'));
      }
    },
  };
}
