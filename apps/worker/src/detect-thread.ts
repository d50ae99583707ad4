// A detection thread (see detect-pool.ts): judges the tasks it is sent and answers with the results.
import { parentPort } from 'node:worker_threads';
import { judgeNewPoints, type JudgeResult, type JudgeSettings, type JudgeTask } from './stream-judge.js';

export interface JudgeRequest {
  readonly id: number;
  readonly tasks: readonly JudgeTask[];
  readonly settings: JudgeSettings;
}

export type JudgeReply =
  | { readonly id: number; readonly results: JudgeResult[] }
  | { readonly id: number; readonly error: string };

parentPort?.on('message', (request: JudgeRequest) => {
  let reply: JudgeReply;
  try {
    reply = { id: request.id, results: request.tasks.map((task) => judgeNewPoints(task, request.settings)) };
  } catch (error) {
    reply = { id: request.id, error: error instanceof Error ? (error.stack ?? error.message) : String(error) };
  }
  parentPort?.postMessage(reply);
});
