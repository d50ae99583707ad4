// The pieces of the baseline service that need no model: the per-machine serialisation of
// baseline writes and the fine-tuning pool. (The predictor cache: packages/streaming's
// generational-cache test.)
import { describe, expect, it } from 'vitest';
import { ModelError, type FineTuneResult, type FineTuneThread } from '@adp/model';
import { KeyedSerialiser } from '../src/machines/keyed-serialiser.js';
import { FineTunePool, THREAD_RETRY_MS, ThreadStartError } from '../src/machines/model.js';

describe('KeyedSerialiser', () => {
  const tick = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

  it('runs tasks of one key one at a time, in order, and other keys in parallel', async () => {
    const serialiser = new KeyedSerialiser();
    const log: string[] = [];
    const task = (name: string, ms: number) => async () => {
      log.push(`start ${name}`);
      await tick(ms);
      log.push(`end ${name}`);
      return name;
    };
    const results = await Promise.all([
      serialiser.run('m1', task('a', 30)),
      serialiser.run('m1', task('b', 1)),
      serialiser.run('m2', task('c', 5)),
    ]);
    expect(results).toEqual(['a', 'b', 'c']);
    expect(log.indexOf('end a')).toBeLessThan(log.indexOf('start b'));
    expect(log.indexOf('start c')).toBeLessThan(log.indexOf('end a'));
    expect(serialiser.has('m1')).toBe(false);
  });

  it('keeps going after a failed task', async () => {
    const serialiser = new KeyedSerialiser();
    const failed = serialiser.run('m', () => Promise.reject(new Error('boom')));
    const next = serialiser.run('m', async () => 'ok');
    await expect(failed).rejects.toThrow('boom');
    await expect(next).resolves.toBe('ok');
  });
});

describe('FineTunePool', () => {
  // Test-only stand-ins for worker threads: they record calls and answer with a marker.
  function fakeWorker(name: string, behaviour: (values: ArrayLike<number>) => Promise<FineTuneResult>) {
    const calls: number[] = [];
    const energyCalls: number[] = [];
    let closed = false;
    const thread: FineTuneThread = {
      fineTune: (values) => {
        calls.push(values.length);
        return behaviour(values);
      },
      energies: async (values) => {
        energyCalls.push(values.length);
        await new Promise((resolve) => setTimeout(resolve, 20));
        return { energies: new Float64Array(values.length), embeddings: null, normalisation: { center: 0, scale: 1 } };
      },
      close: async () => {
        closed = true;
      },
    };
    return { name, thread, calls, energyCalls, isClosed: () => closed };
  }
  const result = (marker: number) => ({ stats: { finalLoss: marker } }) as unknown as FineTuneResult;
  const slow = (marker: number) => () => new Promise<FineTuneResult>((resolve) => setTimeout(() => resolve(result(marker)), 20));

  it('starts threads on demand, up to its size, and spreads concurrent calls over them', async () => {
    const fakes = [fakeWorker('a', slow(1)), fakeWorker('b', slow(2))];
    let started = 0;
    const pool = new FineTunePool(2, async () => fakes[started++]!.thread);
    await Promise.all([pool.fineTune([1]), pool.fineTune([1, 2]), pool.fineTune([1, 2, 3])]);
    expect(started).toBe(2);
    expect(fakes[0]!.calls.length + fakes[1]!.calls.length).toBe(3);
    expect(fakes[1]!.calls.length).toBeGreaterThan(0);
    await pool.close();
    expect(fakes.every((fake) => fake.isClosed())).toBe(true);
  });

  it('spreads energies over the same threads as fine-tunes', async () => {
    const fakes = [fakeWorker('a', slow(1)), fakeWorker('b', slow(2))];
    let started = 0;
    const pool = new FineTunePool(2, async () => fakes[started++]!.thread);
    const [tuned, energies] = await Promise.all([pool.fineTune([1, 2]), pool.energies([1, 2, 3])]);
    expect(tuned.stats.finalLoss).toBe(1);
    expect(energies.energies).toHaveLength(3);
    expect(started).toBe(2);
    expect(fakes[0]!.calls).toEqual([2]);
    expect(fakes[1]!.energyCalls).toEqual([3]);
    await pool.close();
  });

  it('reports a thread that cannot start as ThreadStartError and waits before trying again', async () => {
    let now = 0;
    let attempts = 0;
    const pool = new FineTunePool(
      2,
      async () => {
        attempts += 1;
        throw new ModelError('MODEL_WORKER_FAILED', 'no loader in the worker');
      },
      () => now,
    );
    await expect(pool.fineTune([1])).rejects.toBeInstanceOf(ThreadStartError);
    await expect(pool.fineTune([1])).rejects.toBeInstanceOf(ThreadStartError);
    expect(attempts).toBe(1);
    now = THREAD_RETRY_MS + 1;
    await expect(pool.fineTune([1])).rejects.toBeInstanceOf(ThreadStartError);
    expect(attempts).toBe(2);
  });

  it('replaces a worker that died, and keeps one whose call failed on its input', async () => {
    const dying = fakeWorker('dying', () => Promise.reject(new ModelError('MODEL_WORKER_FAILED', 'exited')));
    const picky = fakeWorker('picky', () => Promise.reject(new ModelError('MODEL_SERIES_INVALID', 'NaN at 3')));
    const healthy = fakeWorker('healthy', async () => result(7));
    const queue = [dying, picky, healthy];
    const pool = new FineTunePool(1, async () => queue.shift()!.thread);
    await expect(pool.fineTune([1])).rejects.toMatchObject({ code: 'MODEL_WORKER_FAILED' });
    expect(pool.threadCount).toBe(0);
    await expect(pool.fineTune([1])).rejects.toMatchObject({ code: 'MODEL_SERIES_INVALID' });
    expect(pool.threadCount).toBe(1);
    await expect(pool.fineTune([1])).rejects.toMatchObject({ code: 'MODEL_SERIES_INVALID' });
    expect(healthy.calls).toEqual([]);
    await pool.close();
    await expect(pool.fineTune([1])).rejects.toMatchObject({ code: 'ServiceUnavailable' });
  });
});
