// A detection thread (see detect-pool.ts): judges the tasks it is sent and answers with the results.
import { parentPort } from 'node:worker_threads';
import { judgeNewPoints, LiveJudges, type JudgeResult, type JudgeSettings, type JudgeTask } from './new-points-judge.js';

export interface JudgeRequest {
  readonly id: number;
  readonly tasks: readonly JudgeTask[];
  readonly settings: JudgeSettings;
}

export type JudgeReply =
  | { readonly id: number; readonly results: JudgeResult[] }
  | { readonly id: number; readonly error: string };

/** This thread's live judges (the pool sends a series to the same thread while it can). */
let live: LiveJudges | undefined;

parentPort?.on('message', (request: JudgeRequest) => {
  let reply: JudgeReply;
  try {
    const capacity = request.settings.liveJudges ?? 0;
    if (capacity > 0 && live === undefined) live = new LiveJudges(capacity);
    reply = { id: request.id, results: request.tasks.map((task) => judgeNewPoints(task, request.settings, live)) };
  } catch (error) {
    reply = { id: request.id, error: error instanceof Error ? (error.stack ?? error.message) : String(error) };
  }
  parentPort?.postMessage(reply);
});
