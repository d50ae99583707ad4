// A vendor detection thread (see ./threads.ts): answers one request from its body text. Bad
// requests come back as plain data (an Error's class does not survive the thread boundary);
// anything else is thrown and becomes the route's 500.
import { answerVendorRequest, parseJsonText, refusalOf, type VendorAnswer, type VendorRefusal } from './answer.js';
import { detectionEngine } from './engine.js';
import type { MessageStyle, Operation } from './request.js';

export interface VendorTask {
  readonly text: string;
  readonly operation: Operation;
  readonly style: MessageStyle;
}

export type VendorTaskReply = { readonly answer: VendorAnswer } | { readonly refusal: VendorRefusal };

export default function answerInThread(task: VendorTask): VendorTaskReply {
  try {
    return { answer: answerVendorRequest(detectionEngine, task.operation, parseJsonText(task.text), task.style) };
  } catch (error) {
    const refusal = refusalOf(error);
    if (refusal === null) throw error;
    return { refusal };
  }
}
