// The scale-out notifier on Redis (npm `redis` v6): publishes on `<channelPrefix><channel>` and
// subscribes on a second connection (a subscribed connection can issue no other commands).
import type { Notifier } from '../ports.js';
import { StreamingError } from '../errors.js';
import { closeRedis, connectRedis as connect, pingRedis, redisUnavailable as unavailable, type RedisConnection } from './client.js';

export interface RedisNotifierOptions {
  /** Prefix of every channel name (isolates test runs, or deployments sharing a Redis). Default none. */
  readonly channelPrefix?: string;
}

export async function createRedisNotifier(url: string, options: RedisNotifierOptions = {}): Promise<Notifier> {
  const channelPrefix = options.channelPrefix ?? '';
  const publisher = await connect(url, 'notifications');
  let subscriber: RedisConnection | undefined;
  let closed = false;

  async function subscriberConnection(): Promise<RedisConnection> {
    subscriber ??= await connect(url, 'subscriptions');
    return subscriber;
  }

  return {
    async publish(channel: string, message: string): Promise<void> {
      if (closed) throw new StreamingError('STREAMING_CLOSED', 'the notifier is closed');
      try {
        await publisher.publish(channelPrefix + channel, message);
      } catch (cause) {
        throw unavailable(`publishing on ${channel}`, cause);
      }
    },
    async subscribe(channel: string, listener: (message: string) => void): Promise<() => Promise<void>> {
      if (closed) throw new StreamingError('STREAMING_CLOSED', 'the notifier is closed');
      const connection = await subscriberConnection();
      const entry = (message: string) => {
        try {
          listener(message);
        } catch {
          // A listener's failure is its own; it must not break the subscription.
        }
      };
      try {
        await connection.subscribe(channelPrefix + channel, entry);
      } catch (cause) {
        throw unavailable(`subscribing to ${channel}`, cause);
      }
      return async () => {
        if (closed || !connection.isOpen) return;
        await connection.unsubscribe(channelPrefix + channel, entry);
      };
    },
    async ping(): Promise<void> {
      if (closed) throw new StreamingError('STREAMING_CLOSED', 'the notifier is closed');
      await pingRedis(publisher, 'notifications');
      if (subscriber) await pingRedis(subscriber, 'subscriptions');
    },
    async close(): Promise<void> {
      if (closed) return;
      closed = true;
      await Promise.all([closeRedis(publisher), subscriber ? closeRedis(subscriber) : Promise.resolve()]);
    },
  };
}
