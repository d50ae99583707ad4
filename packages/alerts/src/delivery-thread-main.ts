// The delivery thread itself (./delivery-thread.ts starts it): runs each attempt it is sent with
// its own kept-alive connections, and answers its outcome; an abort message abandons one.
import { parentPort, workerData } from 'node:worker_threads';
import { DeliveryConnections, attemptDelivery } from './deliver.js';
import type { ThreadMessage, ThreadReply } from './delivery-thread.js';

const port = parentPort!;
const connections = new DeliveryConnections(workerData as { maxSocketsPerAddress: number; idleMs: number });
const running = new Map<number, AbortController>();

port.on('message', (message: ThreadMessage) => {
  if (message.type === 'close') {
    for (const controller of running.values()) controller.abort();
    connections.close();
    port.close();
    return;
  }
  if (message.type === 'abort') {
    running.get(message.id)?.abort();
    return;
  }
  const controller = new AbortController();
  running.set(message.id, controller);
  void attemptDelivery({ ...message.request, signal: controller.signal, connections }).then((outcome) => {
    running.delete(message.id);
    const reply: ThreadReply = { id: message.id, outcome };
    port.postMessage(reply);
  });
});
