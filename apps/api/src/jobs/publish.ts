// Publishing a job's chunks on the jobs topic (the API's half of ./plugin.ts's acceptance).
import type { BusProducer, OutgoingMessage } from '@adp/streaming';

/**
 * Bytes of chunks one send carries at most: Kafka refuses a record batch over the broker's
 * message.max.bytes (1 MB by default), and a send's messages to one partition are one batch.
 */
const SEND_MAX_BYTES = 768 * 1024;
/** Sends in flight at once, each lane a share of the series. */
const PUBLISH_LANES = 4;

/**
 * Publishes a job's chunks. The series are dealt to a few lanes; each lane sends its series' chunks
 * in order, packed into sends of at most SEND_MAX_BYTES (many short series share a send), one send
 * after another: a send resolves only once the bus has it, so a series' chunks reach their
 * partition in sequence.
 */
export async function publishChunks(producer: BusProducer, topic: string, messages: readonly OutgoingMessage[]): Promise<void> {
  const bySeries = new Map<string | null, OutgoingMessage[]>();
  for (const message of messages) {
    const list = bySeries.get(message.key);
    if (list) list.push(message);
    else bySeries.set(message.key, [message]);
  }
  const lanes: OutgoingMessage[][] = Array.from({ length: Math.min(PUBLISH_LANES, bySeries.size) }, () => []);
  [...bySeries.values()].forEach((series, index) => lanes[index % lanes.length]!.push(...series));
  const publishLane = async (lane: readonly OutgoingMessage[]): Promise<void> => {
    let batch: OutgoingMessage[] = [];
    let bytes = 0;
    for (const message of lane) {
      if (batch.length > 0 && bytes + message.value.length > SEND_MAX_BYTES) {
        await producer.send(topic, batch);
        batch = [];
        bytes = 0;
      }
      batch.push(message);
      bytes += message.value.length;
    }
    if (batch.length > 0) await producer.send(topic, batch);
  };
  await Promise.all(lanes.map(publishLane));
}
