// The admission gate in front of the learned model (MODEL_CALLS_MAX_RUNNING, MODEL_CALLS_MAX_QUEUED):
// with a fake model that holds every call until the test releases it, the call beyond the running
// and queued ones is refused with 503 ServerBusy and Retry-After, and the queued ones complete
// once the running ones are released.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { AdmissionGate } from '../src/machines/admission.js';
import type { NativeModelFactory } from '../src/machines/model.js';
import { AppError } from '../src/errors.js';
import { eventually, post, streamingEnvironment, type StreamingEnvironment } from './streaming-helpers.js';

/** A fake model whose energies and fine-tuning wait until `release()`. */
function heldModel(): { factory: NativeModelFactory; started: () => number; release: () => void } {
  let started = 0;
  let release!: () => void;
  const released = new Promise<void>((resolve) => {
    release = resolve;
  });
  const energies = async (values: ArrayLike<number>) => {
    started += 1;
    await released;
    return { energies: new Float64Array(values.length).fill(1), embeddings: null, normalisation: { center: 0, scale: 1 } };
  };
  return {
    factory: () =>
      Promise.resolve({
        modelVersion: 'fake-held',
        energies,
        fineTune: async () => {
          started += 1;
          await released;
          throw new Error('the fake model does not fine-tune');
        },
        close: () => Promise.resolve(),
      }),
    started: () => started,
    release,
  };
}

const DETECT = {
  series: Array.from({ length: 48 }, (_, index) => ({ value: 10 + Math.sin(index / 3) })),
};
const BUSY = {
  error: {
    code: 'ServerBusy',
    message: 'The service is running as many learned-model calls as it allows (2 running, 1 waiting). Retry shortly.',
  },
};

describe('admission of learned-model calls', () => {
  let env: StreamingEnvironment;
  beforeEach(async () => {
    env = await streamingEnvironment();
  });
  afterEach(async () => {
    await env.cleanup();
  });

  it('refuses the call beyond the running and queued ones with 503, Retry-After and the native error; the queued ones complete after release', async () => {
    const model = heldModel();
    const gate = new AdmissionGate({ maxRunning: 2, maxQueued: 1 });
    const app = await env.start({}, { model: model.factory, modelCalls: gate });
    const accepted = [post(app, '/v1/detect', DETECT), post(app, '/v1/detect', DETECT), post(app, '/v1/detect', DETECT)];
    await eventually(async () => model.started() === 2 && gate.queuedCount === 1);

    const refused = await post(app, '/v1/detect', DETECT);
    expect(refused.statusCode).toBe(503);
    expect(refused.headers['retry-after']).toBe('1');
    expect(refused.headers['content-type']).toMatch(/^application\/json/);
    expect(refused.json()).toEqual(BUSY);
    // A fine-tuning baseline takes a slot from the same gate.
    const baseline = await post(app, '/v1/baseline', { machine_id: 'm1', series: Array.from({ length: 100 }, () => ({ value: 1 })) });
    expect(baseline.statusCode).toBe(503);
    expect(baseline.json()).toEqual(BUSY);

    model.release();
    const answers = await Promise.all(accepted);
    for (const answer of answers) expect(answer.statusCode).toBe(200);
    expect(model.started()).toBe(3);
    expect(gate.runningCount).toBe(0);
    expect((await post(app, '/v1/detect', DETECT)).statusCode).toBe(200);
  });

  it('builds the gate from MODEL_CALLS_MAX_RUNNING and MODEL_CALLS_MAX_QUEUED', async () => {
    const model = heldModel();
    const app: FastifyInstance = await env.start({ MODEL_CALLS_MAX_RUNNING: '1', MODEL_CALLS_MAX_QUEUED: '0' }, { model: model.factory });
    const running = post(app, '/v1/detect', DETECT);
    await eventually(async () => model.started() === 1);
    const refused = await post(app, '/v1/detect', DETECT);
    expect(refused.statusCode).toBe(503);
    expect(refused.json()).toMatchObject({ error: { code: 'ServerBusy' } });
    model.release();
    expect((await running).statusCode).toBe(200);
  });

  it('refuses a series the engine rejects with its 400 without waiting for a slot', async () => {
    const model = heldModel();
    const gate = new AdmissionGate({ maxRunning: 1, maxQueued: 0 });
    const app = await env.start({}, { model: model.factory, modelCalls: gate });
    const running = post(app, '/v1/detect', DETECT);
    await eventually(async () => model.started() === 1);
    const invalid = await post(app, '/v1/detect', { series: [{ value: 1 }] });
    expect(invalid.statusCode).toBe(400);
    model.release();
    expect((await running).statusCode).toBe(200);
  });
});

describe('AdmissionGate', () => {
  it('runs queued calls in arrival order as slots free, and frees the slot of a call that fails', async () => {
    const gate = new AdmissionGate({ maxRunning: 1, maxQueued: 2 });
    const order: string[] = [];
    let releaseFirst!: () => void;
    const first = gate.run(
      () =>
        new Promise<void>((resolve) => {
          releaseFirst = resolve;
        }),
    );
    const second = gate.run(async () => {
      order.push('second');
      throw new Error('failed work');
    });
    const third = gate.run(async () => {
      order.push('third');
    });
    expect(gate.queuedCount).toBe(2);
    await expect(gate.run(async () => undefined)).rejects.toBeInstanceOf(AppError);
    releaseFirst();
    await first;
    await expect(second).rejects.toThrow('failed work');
    await third;
    expect(order).toEqual(['second', 'third']);
    expect(gate.runningCount).toBe(0);
    expect(gate.queuedCount).toBe(0);
  });
});
