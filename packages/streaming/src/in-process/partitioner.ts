// Key -> partition, the same function Kafka's Java client and kafkajs's default partitioner use
// (murmur2 of the key's bytes, made positive, modulo the partition count). The in-process bus uses
// it too, so a machine's points land on the same partition number in both configurations.

const SEED = 0x9747b28c;
const M = 0x5bd1e995;
const R = 24;

/** Kafka's murmur2 (32-bit, signed result as the Java client computes it). */
export function murmur2(data: Uint8Array): number {
  const length = data.length;
  let h = SEED ^ length;
  const length4 = length >>> 2;
  for (let i = 0; i < length4; i++) {
    const i4 = i * 4;
    let k =
      (data[i4]! & 0xff) + ((data[i4 + 1]! & 0xff) << 8) + ((data[i4 + 2]! & 0xff) << 16) + ((data[i4 + 3]! & 0xff) << 24);
    k = Math.imul(k, M);
    k ^= k >>> R;
    k = Math.imul(k, M);
    h = Math.imul(h, M);
    h ^= k;
  }
  const tail = length4 * 4;
  const rest = length % 4;
  if (rest === 3) h ^= (data[tail + 2]! & 0xff) << 16;
  if (rest >= 2) h ^= (data[tail + 1]! & 0xff) << 8;
  if (rest >= 1) {
    h ^= data[tail]! & 0xff;
    h = Math.imul(h, M);
  }
  h ^= h >>> 13;
  h = Math.imul(h, M);
  h ^= h >>> 15;
  return h | 0;
}

/** The partition of `key` among `partitions` (Kafka's `toPositive(murmur2(key)) % n`). */
export function partitionForKey(key: string | Uint8Array, partitions: number): number {
  const bytes = typeof key === 'string' ? Buffer.from(key, 'utf8') : key;
  return (murmur2(bytes) & 0x7fffffff) % partitions;
}
