// Publishing a job's chunks on the jobs topic (the API's half of ./plugin.ts's acceptance).
import type { BusProducer, OutgoingMessage } from '@adp/streaming';

/** Sends in flight at once, each lane a share of the series (a bus that limits a send's size). */
const PUBLISH_LANES = 4;

/**
 * Publishes a job's chunks; resolves once the bus has every one. A bus without a limit on a send's
 * size (the durable in-process bus) takes them in one send: one write and one sync of its log,
 * and a series' chunks visible to the worker together, so it judges the series without staging
 * them. On a bus with a limit (Kafka, BusProducer.maxSendBytes), the series are dealt to a few
 * lanes; each lane sends its series' chunks in order, packed into sends of at most that many
 * bytes (many short series share a send), one send after another: a send resolves only once the
 * bus has it, so a series' chunks reach their partition in sequence.
 */
export async function publishChunks(producer: BusProducer, topic: string, messages: readonly OutgoingMessage[]): Promise<void> {
  const maxSendBytes = producer.maxSendBytes;
  if (maxSendBytes === undefined) {
    if (messages.length > 0) await producer.send(topic, messages);
    return;
  }
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
      if (batch.length > 0 && bytes + message.value.length > maxSendBytes) {
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
