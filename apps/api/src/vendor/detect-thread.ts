// A vendor detection thread (see ./threads.ts): answers one request from its body bytes. Bad
// requests come back as plain data (an Error's class does not survive the thread boundary);
// anything else is thrown and becomes the route's 500.
import { answerVendorRequest, readJsonBody, refusalOf, type VendorAnswer, type VendorRefusal } from './answer.js';
import { detectionEngine } from './engine.js';
import type { MessageStyle, Operation } from './request.js';

export interface VendorTask {
  /** The request body (a Buffer on the way in; a thread receives its bytes as a Uint8Array). */
  readonly body: Uint8Array;
  readonly operation: Operation;
  readonly style: MessageStyle;
}

/** An answer as it crosses back: a body written as bytes arrives as a Uint8Array. */
export type VendorTaskReply =
  | { readonly answer: { readonly body: Uint8Array | string; readonly points: number } }
  | { readonly refusal: VendorRefusal };

export default function answerInThread(task: VendorTask): VendorTaskReply {
  try {
    const raw = Buffer.from(task.body.buffer, task.body.byteOffset, task.body.byteLength);
    const answer: VendorAnswer = answerVendorRequest(detectionEngine, task.operation, readJsonBody(raw, detectionEngine), task.style);
    // A copy of just the body's bytes: a view would carry its whole (larger) buffer across.
    return { answer: { body: typeof answer.body === 'string' ? answer.body : new Uint8Array(answer.body), points: answer.points } };
  } catch (error) {
    const refusal = refusalOf(error);
    if (refusal === null) throw error;
    return { refusal };
  }
}
