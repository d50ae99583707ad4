// How a job's chunks go onto the bus (publishChunks): in one send where the bus takes any size
// (the durable in-process bus: one write and one sync of its log), in sends of at most the bus's
// limit otherwise (Kafka), each series' chunks in order.
import { describe, expect, it } from 'vitest';
import type { BusProducer, OutgoingMessage } from '@adp/streaming';
import { publishChunks } from '../src/jobs/publish.js';

/** A producer that records its sends, with or without a limit on a send's bytes. */
function recordingProducer(maxSendBytes?: number): BusProducer & { sends: OutgoingMessage[][] } {
  const sends: OutgoingMessage[][] = [];
  return {
    sends,
    ...(maxSendBytes !== undefined ? { maxSendBytes } : {}),
    async send(_topic, messages) {
      if (maxSendBytes !== undefined) expect(messages.reduce((sum, message) => sum + message.value.length, 0)).toBeLessThanOrEqual(maxSendBytes);
      sends.push([...messages]);
    },
    async close() {},
  };
}

/** `chunks` chunks of `bytes` bytes for each series, in series then chunk order. */
function chunks(series: number, perSeries: number, bytes: number): OutgoingMessage[] {
  const messages: OutgoingMessage[] = [];
  for (let s = 0; s < series; s++) for (let c = 0; c < perSeries; c++) messages.push({ key: `org_a/job_1/${s}`, value: Buffer.alloc(bytes, c) });
  return messages;
}

describe('publishChunks', () => {
  it('sends every chunk at once to a bus without a size limit', async () => {
    const producer = recordingProducer();
    const messages = chunks(3, 50, 1000);
    await publishChunks(producer, 'jobs', messages);
    expect(producer.sends).toEqual([messages]);
  });

  it('packs sends within the limit of a bus that has one, each series in chunk order', async () => {
    const producer = recordingProducer(2500);
    const messages = chunks(3, 7, 1000);
    await publishChunks(producer, 'jobs', messages);
    expect(producer.sends.length).toBe(12);
    expect(producer.sends.flat().length).toBe(messages.length);
    for (let s = 0; s < 3; s++) {
      const sent = producer.sends.flat().filter((message) => message.key === `org_a/job_1/${s}`);
      expect(sent.map((message) => message.value[0])).toEqual([0, 1, 2, 3, 4, 5, 6]);
    }
  });

  it('sends nothing for no chunks', async () => {
    const producer = recordingProducer();
    await publishChunks(producer, 'jobs', []);
    expect(producer.sends).toEqual([]);
  });
});
