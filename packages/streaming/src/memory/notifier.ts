// The embedded notifier: pub/sub in memory, for `npm start` (one process) and for unit tests.
import type { Notifier } from '../ports.js';
import { StreamingError } from '../errors.js';

/**
 * Pub/sub in one process. Delivery is asynchronous (after `publish` resolves, on a later tick), as
 * with Redis, so a listener never runs inside the publisher's call stack; a throwing listener does
 * not stop the others.
 */
export function createMemoryNotifier(): Notifier {
  const listeners = new Map<string, Set<(message: string) => void>>();
  let closed = false;
  return {
    async publish(channel: string, message: string): Promise<void> {
      if (closed) throw new StreamingError('STREAMING_CLOSED', 'the notifier is closed');
      const subscribed = [...(listeners.get(channel) ?? [])];
      setImmediate(() => {
        for (const listener of subscribed) {
          try {
            listener(message);
          } catch {
            // A listener's failure is its own; pub/sub has no one to report it to.
          }
        }
      });
    },
    async subscribe(channel: string, listener: (message: string) => void): Promise<() => Promise<void>> {
      if (closed) throw new StreamingError('STREAMING_CLOSED', 'the notifier is closed');
      let set = listeners.get(channel);
      if (!set) listeners.set(channel, (set = new Set()));
      const entry = (message: string) => listener(message);
      set.add(entry);
      return async () => {
        set.delete(entry);
      };
    },
    async ping(): Promise<void> {},

    async close(): Promise<void> {
      closed = true;
      listeners.clear();
    },
  };
}
