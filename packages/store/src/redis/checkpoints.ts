// The scale-out checkpoint store on Redis (npm `redis` v6). Checkpoints are plain binary values
// under `<prefix><key>`, written in one MULTI so a batch's checkpoints land together, with a TTL so
// machines that went quiet do not keep memory forever.
import { RESP_TYPES } from 'redis';
import type { CheckpointStore } from '@adp/streaming';
import { StreamingError } from '@adp/streaming/errors';
import { closeRedis, connectRedis, pingRedis, redisUnavailable as unavailable } from '@adp/streaming/redis';
import { channelPrefixOf, checkMachineRef, isCheckpointOfMachine } from '@adp/streaming/series-ids';

export interface RedisCheckpointOptions {
  /** Key prefix. Default `adp:checkpoint:`. */
  readonly prefix?: string;
  /** Expiry of a checkpoint, seconds; 0 = never. Default 604800 (7 days). */
  readonly ttlSeconds?: number;
}

/** `text` matched literally in a SCAN MATCH pattern. */
function globLiteral(text: string): string {
  return text.replace(/[\\*?[\]^-]/g, (ch) => `\\${ch}`);
}

export async function createRedisCheckpointStore(
  url: string,
  options: RedisCheckpointOptions = {},
): Promise<CheckpointStore> {
  const prefix = options.prefix ?? 'adp:checkpoint:';
  const ttlSeconds = options.ttlSeconds ?? 7 * 24 * 3600;
  if (!Number.isSafeInteger(ttlSeconds) || ttlSeconds < 0) {
    throw new StreamingError('VALUE_INVALID', 'checkpoint ttlSeconds must be a non-negative integer');
  }
  const client = await connectRedis(url, 'checkpoints');
  const binary = client.withTypeMapping({ [RESP_TYPES.BLOB_STRING]: Buffer });
  return {
    async load(keys: readonly string[]): Promise<Map<string, Buffer>> {
      const found = new Map<string, Buffer>();
      if (keys.length === 0) return found;
      let values: (Buffer | null)[];
      try {
        values = (await binary.mGet(keys.map((key) => prefix + key))) as unknown as (Buffer | null)[];
      } catch (cause) {
        throw unavailable('loading checkpoints', cause);
      }
      keys.forEach((key, index) => {
        const value = values[index];
        if (value) found.set(key, value);
      });
      return found;
    },
    async save(entries: ReadonlyMap<string, Buffer>): Promise<void> {
      if (entries.size === 0) return;
      const multi = client.multi();
      for (const [key, value] of entries) {
        if (ttlSeconds > 0) multi.set(prefix + key, value, { expiration: { type: 'EX', value: ttlSeconds } });
        else multi.set(prefix + key, value);
      }
      try {
        await multi.exec();
      } catch (cause) {
        throw unavailable('saving checkpoints', cause);
      }
    },
    ping: () => pingRedis(client, 'checkpoints'),
    async deleteMachine(orgId: string, machineId: string): Promise<number> {
      checkMachineRef(orgId, machineId, 'deleteMachine');
      // Every consumer group's: `<prefix><group>/<org>/<series>`, the series exact or a channel.
      const stem = `${globLiteral(prefix)}*/${globLiteral(orgId)}/`;
      const channelPrefix = channelPrefixOf(machineId);
      const patterns = [`${stem}${globLiteral(machineId)}`];
      if (channelPrefix !== null) patterns.push(`${stem}${globLiteral(channelPrefix)}*`);
      let removed = 0;
      try {
        for (const pattern of patterns) {
          for await (const keys of client.scanIterator({ MATCH: pattern, COUNT: 1000 })) {
            // The pattern's '*' also spans '/': the exact check keeps only this machine's series.
            const ours = keys.filter((key) => key.startsWith(prefix) && isCheckpointOfMachine(key.slice(prefix.length), orgId, machineId));
            if (ours.length > 0) removed += await client.del(ours);
          }
        }
      } catch (cause) {
        throw unavailable('deleting checkpoints', cause);
      }
      return removed;
    },
    async close(): Promise<void> {
      await closeRedis(client);
    },
  };
}
