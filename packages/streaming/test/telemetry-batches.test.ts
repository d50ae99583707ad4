// encodeTelemetryBatches: one machine's points as TelemetryBatch messages, split by count and by
// encoded size, in order, each decoding back to its share of the points.
import { describe, expect, it } from 'vitest';
import {
  StreamingError,
  TELEMETRY_BATCH_MAX_BYTES,
  TELEMETRY_BATCH_MAX_POINTS,
  encodeTelemetryBatches,
  loadStreamingCodecs,
  type TelemetryBatch,
} from '../src/index.js';

const codecs = loadStreamingCodecs();

function batchOf(count: number, channels = 0): TelemetryBatch {
  return {
    organization: 'org_a',
    machine_id: 'pump-7',
    tags: { site: 'north' },
    points: Array.from({ length: count }, (_, i) => ({
      timestamp: 1_717_200_000_000 + i * 60_000,
      value: channels === 0 ? i / 4 : null,
      channels: channels === 0 ? null : Array.from({ length: channels }, (_, c) => ({ name: `channel_${c}`, value: i + c })),
    })),
  };
}

function decodeAll(messages: readonly Buffer[]): TelemetryBatch[] {
  return messages.map((message) => codecs.telemetryBatch.decode(message));
}

describe('encodeTelemetryBatches', () => {
  it('writes one message for a batch within the limits', () => {
    const batch = batchOf(3);
    const messages = encodeTelemetryBatches(codecs.telemetryBatch, batch);
    expect(messages).toHaveLength(1);
    expect(decodeAll(messages)).toEqual([batch]);
  });

  it('splits by count into runs of maxPoints, in order, each with the machine and tags', () => {
    const batch = batchOf(7);
    const decoded = decodeAll(encodeTelemetryBatches(codecs.telemetryBatch, batch, { maxPoints: 3 }));
    expect(decoded.map((part) => part.points.length)).toEqual([3, 3, 1]);
    expect(decoded.flatMap((part) => part.points)).toEqual(batch.points);
    for (const part of decoded) expect(part).toMatchObject({ organization: 'org_a', machine_id: 'pump-7', tags: { site: 'north' } });
    const full = decodeAll(encodeTelemetryBatches(codecs.telemetryBatch, batchOf(TELEMETRY_BATCH_MAX_POINTS + 1)));
    expect(full.map((part) => part.points.length)).toEqual([TELEMETRY_BATCH_MAX_POINTS, 1]);
  });

  it('halves a run until its message fits maxBytes', () => {
    // 64 channels a point: about 1.2 KB each, so 1,000 points are over 1 MB.
    const batch = batchOf(1000, 64);
    const single = codecs.telemetryBatch.encode(batch).length;
    expect(single).toBeGreaterThan(2 * TELEMETRY_BATCH_MAX_BYTES);
    const messages = encodeTelemetryBatches(codecs.telemetryBatch, batch);
    expect(messages.length).toBeGreaterThan(2);
    for (const message of messages) expect(message.length).toBeLessThanOrEqual(TELEMETRY_BATCH_MAX_BYTES);
    expect(decodeAll(messages).flatMap((part) => part.points)).toEqual(batch.points);
    // A tiny limit: one point a message, even where one point alone is larger.
    const tiny = encodeTelemetryBatches(codecs.telemetryBatch, batchOf(3, 2), { maxBytes: 10 });
    expect(decodeAll(tiny).map((part) => part.points.length)).toEqual([1, 1, 1]);
  });

  it('writes nothing for no points and refuses a maxPoints the worker would not read', () => {
    expect(encodeTelemetryBatches(codecs.telemetryBatch, batchOf(0))).toEqual([]);
    expect(() => encodeTelemetryBatches(codecs.telemetryBatch, batchOf(2), { maxPoints: 0 })).toThrow(RangeError);
    expect(() => encodeTelemetryBatches(codecs.telemetryBatch, batchOf(2), { maxPoints: TELEMETRY_BATCH_MAX_POINTS + 1 })).toThrow(
      RangeError,
    );
  });

  it('names the field of a value that does not fit the schema', () => {
    const batch = batchOf(2);
    const bad = { ...batch, points: [batch.points[0]!, { ...batch.points[1]!, value: 'x' }] } as unknown as TelemetryBatch;
    try {
      encodeTelemetryBatches(codecs.telemetryBatch, bad);
      expect.unreachable();
    } catch (error) {
      expect(error).toBeInstanceOf(StreamingError);
      expect((error as StreamingError).code).toBe('MESSAGE_INVALID');
      expect((error as StreamingError).context.path).toBe('points.1.value');
    }
  });
});
