// The runner's steps on their own: decoding a batch (series, machines, dead letters), where a
// partition resumes, and the windows held between batches (kept only once stored, never put back
// for a machine deleted meanwhile).
import { NO_EPISODE } from '@adp/alerts';
import type { IncomingMessage } from '@adp/streaming';
import { createMemoryCheckpointStore } from '@adp/store';
import { describe, expect, it } from 'vitest';
import { decodeBatch } from '../src/decode.js';
import { CheckpointKeys, PartitionOffsets } from '../src/offsets.js';
import { appendToWindow, emptyWindow, encodeWindow, windowCapacity } from '../src/series-window.js';
import { WindowState } from '../src/window-state.js';
import { noopLogger } from '../src/worker-types.js';
import { batchMessage, codecs, ORG, telemetryMessage } from './helpers.js';

function incoming(messages: readonly { key: string | null; value: Buffer }[], topic = 't', partition = 0): IncomingMessage[] {
  return messages.map((message, index) => ({
    topic,
    partition,
    offset: String(100 + index),
    key: message.key === null ? null : Buffer.from(message.key),
    value: message.value,
    headers: { trace: 'x' },
    timestampMs: 1,
  }));
}

describe('decodeBatch', () => {
  it('gathers each series in arrival order, multi-channel machines apart, and dead-letters a bad message whole', () => {
    const messages = incoming([
      telemetryMessage({ machine_id: 'm1', timestamp: 1000, value: 1 }),
      telemetryMessage({ machine_id: 'm2', timestamp: 1000, channels: [{ name: 'a', value: 5 }, { name: 'b', value: 6 }] }),
      batchMessage('m1', [
        { timestamp: 2000, value: 2 },
        { timestamp: 3000, value: 3 },
      ]),
      telemetryMessage({ machine_id: 'm3', timestamp: 1000, value: Number.NaN }),
    ]);
    const decoded = decodeBatch(codecs, messages, () => 42);
    expect([...decoded.series.keys()]).toEqual([`${ORG}/m1`, `${ORG}/m2:a`, `${ORG}/m2:b`]);
    expect(decoded.series.get(`${ORG}/m1`)).toEqual({ orgId: ORG, seriesId: 'm1', tsMs: [1000, 2000, 3000], values: [1, 2, 3] });
    expect([...decoded.machines.keys()]).toEqual([`${ORG}/m2`]);
    expect(decoded.machines.get(`${ORG}/m2`)!.points).toEqual([{ tsMs: 1000, readings: new Map([['a', 5], ['b', 6]]) }]);
    expect(decoded.reasons).toEqual(new Map([['INVALID_VALUE', 1]]));
    expect(decoded.deadLetters).toHaveLength(1);
    const letter = decoded.deadLetters[0]!;
    expect(letter.key).toBe(`${ORG}/m3`);
    expect(letter.headers).toEqual({ trace: 'x' });
    const body = codecs.deadLetter.decode(letter.value);
    expect(body).toMatchObject({ reason: 'INVALID_VALUE', source_topic: 't', source_partition: 0, source_offset: 103, failed_at: 42 });
    expect(Buffer.from(body.original_value).equals(messages[3]!.value)).toBe(true);
  });
});

describe('PartitionOffsets', () => {
  it('a batch continues a partition only where its last stored batch ended', () => {
    const offsets = new PartitionOffsets();
    expect(offsets.continues('t:0', '0')).toBe(false);
    offsets.stored('t:0', '41');
    expect(offsets.continues('t:0', '42')).toBe(true);
    expect(offsets.continues('t:0', '43')).toBe(false);
    expect(offsets.continues('t:1', '42')).toBe(false);
  });
});

describe('WindowState', () => {
  const capacity = windowCapacity(720);
  const keys = new CheckpointKeys('g');
  const windowOf = (values: number[]) => {
    const window = emptyWindow();
    appendToWindow(window, { values, timestampsMs: values.map((_, i) => i + 1), zScores: values.map(() => Number.NaN) }, capacity);
    return window;
  };

  it('reads from checkpoints, holds what a stored batch kept, and rereads a dropped partition', async () => {
    const checkpoints = createMemoryCheckpointStore();
    await checkpoints.save(new Map([[keys.window(`${ORG}/m1`), encodeWindow(windowOf([1, 2, 3]))]]));
    const state = new WindowState({ checkpoints, keys, capacity, maxSeries: 10, episodes: false, logger: noopLogger });
    const first = await state.load([`${ORG}/m1`, `${ORG}/m2`], 't:0');
    expect(first.windows.get(`${ORG}/m1`)!.values).toEqual([1, 2, 3]);
    expect(first.windows.get(`${ORG}/m2`)!.values).toEqual([]);
    expect(first.episodes.get(`${ORG}/m1`)).toBe(NO_EPISODE);

    // Kept in memory, not read again: the checkpoint may change underneath without being seen.
    await state.keep(state.mark(), 't:0', [`${ORG}/m1`, `${ORG}/m2`], first, new Map([[`${ORG}/m1`, windowOf([1, 2, 3, 4])]]), new Map());
    await checkpoints.save(new Map([[keys.window(`${ORG}/m1`), encodeWindow(windowOf([9]))]]));
    expect((await state.load([`${ORG}/m1`], 't:0')).windows.get(`${ORG}/m1`)!.values).toEqual([1, 2, 3, 4]);
    // A copy: the batch's changes do not touch what is held.
    (await state.load([`${ORG}/m1`], 't:0')).windows.get(`${ORG}/m1`)!.values.push(99);
    expect((await state.load([`${ORG}/m1`], 't:0')).windows.get(`${ORG}/m1`)!.values).toEqual([1, 2, 3, 4]);

    state.dropPartition('t:0');
    expect((await state.load([`${ORG}/m1`], 't:0')).windows.get(`${ORG}/m1`)!.values).toEqual([9]);
  });

  it('a machine deleted while a batch ran is not put back, and its checkpoints go again', async () => {
    const checkpoints = createMemoryCheckpointStore();
    const state = new WindowState({ checkpoints, keys, capacity, maxSeries: 10, episodes: false, logger: noopLogger });
    const mark = state.mark();
    const loaded = await state.load([`${ORG}/m1`, `${ORG}/m1:a`, `${ORG}/m2`], 't:0');
    expect(state.forgetMachine(ORG, 'm1')).toBe(0);
    // The batch stores its checkpoints after the deletion's.
    await checkpoints.save(new Map([[keys.window(`${ORG}/m1`), encodeWindow(windowOf([1]))], [keys.window(`${ORG}/m2`), encodeWindow(windowOf([2]))]]));
    const updated = new Map([[`${ORG}/m1`, windowOf([1])], [`${ORG}/m2`, windowOf([2])]]);
    await state.keep(mark, 't:0', [`${ORG}/m1`, `${ORG}/m1:a`, `${ORG}/m2`], loaded, updated, new Map());
    const stored = await checkpoints.load([keys.window(`${ORG}/m1`), keys.window(`${ORG}/m2`)]);
    expect([...stored.keys()]).toEqual([keys.window(`${ORG}/m2`)]);
    const after = await state.load([`${ORG}/m1`, `${ORG}/m2`], 't:0');
    expect(after.windows.get(`${ORG}/m1`)!.values).toEqual([]);
    expect(after.windows.get(`${ORG}/m2`)!.values).toEqual([2]);
  });

  it('holds at most maxSeries windows, the least recently stored going first', async () => {
    const checkpoints = createMemoryCheckpointStore();
    const state = new WindowState({ checkpoints, keys, capacity, maxSeries: 2, episodes: false, logger: noopLogger });
    for (const [index, series] of ['a', 'b', 'c'].entries()) {
      const key = `${ORG}/${series}`;
      const loaded = await state.load([key], 't:0');
      await state.keep(state.mark(), 't:0', [key], loaded, new Map([[key, windowOf([index])]]), new Map());
    }
    const after = await state.load([`${ORG}/a`, `${ORG}/b`, `${ORG}/c`], 't:0');
    expect([`${ORG}/a`, `${ORG}/b`, `${ORG}/c`].map((key) => after.windows.get(key)!.values)).toEqual([[], [1], [2]]);
  });
});
