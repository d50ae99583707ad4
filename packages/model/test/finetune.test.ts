import { join } from 'node:path';
import { InferenceSession, Tensor } from 'onnxruntime-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  computeEnergyStats,
  createModelRuntime,
  defaultAssetsDir,
  EMBEDDING_DIM,
  fineTuneInThread,
  isModelError,
  startFineTuneThread,
  type FineTuneResult,
  type LoadedModelRuntime,
  PREDICTOR_TENSOR_NAMES,
  WARMUP_POINTS,
} from '../src/index.js';
import { healthySeries, mean, seeded } from './helpers.js';

describe('training-step graph', () => {
  it('one Adam step lowers the loss on a fixed batch', async () => {
    const runtime = await createModelRuntime({ intraOpThreads: 1 });
    const dir = defaultAssetsDir();
    const step = await InferenceSession.create(join(dir, 'predictor_train_step.onnx'), { intraOpNumThreads: 1 });
    const evalLoss = await InferenceSession.create(join(dir, 'predictor_eval.onnx'), { intraOpNumThreads: 1 });
    const random = seeded(3);
    const rows = 32;
    const x = Float32Array.from({ length: rows * EMBEDDING_DIM }, () => random() * 2 - 1);
    const y = Float32Array.from({ length: rows * EMBEDDING_DIM }, () => random() * 2 - 1);
    const batch = { x: new Tensor('float32', x, [rows, EMBEDDING_DIM]), y: new Tensor('float32', y, [rows, EMBEDDING_DIM]) };
    const weights: Record<string, Tensor> = {};
    const moments: Record<string, Tensor> = {};
    for (const name of PREDICTOR_TENSOR_NAMES) {
      const t = runtime.genericWeights.tensors[name];
      if (t === undefined) throw new Error(`missing ${name}`);
      weights[name] = new Tensor('float32', t.data, t.dims);
      moments[`m_${name}`] = new Tensor('float32', new Float32Array(t.data.length), t.dims);
      moments[`v_${name}`] = new Tensor('float32', new Float32Array(t.data.length), t.dims);
    }
    const before = (await evalLoss.run({ ...batch, ...weights })).loss?.data[0] as number;
    const out = await step.run({
      ...batch,
      ...weights,
      ...moments,
      step: new Tensor('float32', new Float32Array([1]), []),
      lr: new Tensor('float32', new Float32Array([1e-3]), []),
    });
    expect(out.loss?.data[0]).toBeCloseTo(before, 5);
    const updated: Record<string, Tensor> = {};
    for (const name of PREDICTOR_TENSOR_NAMES) {
      const t = out[`${name}_new`];
      if (t === undefined) throw new Error(`missing output ${name}_new`);
      updated[name] = t as Tensor;
    }
    const after = (await evalLoss.run({ ...batch, ...updated })).loss?.data[0] as number;
    expect(after).toBeLessThan(before);
    await Promise.all([step.release(), evalLoss.release(), runtime.close()]);
  });
});

describe('fine-tuning', () => {
  let runtime: LoadedModelRuntime;
  let tuned: FineTuneResult;
  const train = healthySeries(400, 11);
  const heldOut = healthySeries(300, 12, 400);

  beforeAll(async () => {
    runtime = await createModelRuntime({ intraOpThreads: 2 });
    tuned = await runtime.fineTune(train);
  });
  afterAll(async () => {
    await runtime.close();
  });

  it('reports completed stats', () => {
    const s = tuned.stats;
    expect(s.status).toBe('completed');
    expect(s.windows).toBe(400 - WARMUP_POINTS);
    expect(s.epochsMax).toBe(1);
    expect(s.epochsRun).toBe(1);
    expect(s.earlyStopped).toBe(false);
    expect(Number.isFinite(s.finalLoss)).toBe(true);
    expect(s.durationSeconds).toBeGreaterThan(0);
  });

  it('reports where its held-out tail starts, in every mode and in a worker', async () => {
    // 368 pairs, 74 (20 %) held out: the last 74 points.
    expect(tuned.heldOutFrom).toBe(400 - 74);
    const head = await runtime.fineTune(train, { mode: 'head', maxEpochs: 1 });
    expect(head.heldOutFrom).toBe(400 - 74);
    const inWorker = await fineTuneInThread(healthySeries(160, 5), { maxEpochs: 1, intraOpThreads: 1 });
    // 128 pairs, 26 held out.
    expect(inWorker.heldOutFrom).toBe(160 - 26);
  });

  it('fits its training pairs closer than the held-out tail: only the tail calibrates energies', async () => {
    const { energies } = await runtime.energies(train, { normalisation: tuned.normalisation, weights: tuned.weights });
    const inSample = computeEnergyStats(energies.subarray(WARMUP_POINTS, tuned.heldOutFrom));
    const tail = computeEnergyStats(energies.subarray(tuned.heldOutFrom));
    const fresh = await runtime.energies(heldOut, { normalisation: tuned.normalisation, weights: tuned.weights });
    const freshMean = mean(fresh.energies, 64);
    // New healthy data of the machine sits near the tail's level, well above the in-sample level.
    expect(inSample.energy_mean).toBeLessThan(0.7 * tail.energy_mean);
    expect(Math.abs(freshMean - tail.energy_mean)).toBeLessThan(Math.abs(freshMean - inSample.energy_mean));
  });

  it('lowers the mean energy on held-out healthy data compared with the generic predictor', async () => {
    const normalisation = tuned.normalisation;
    const generic = await runtime.energies(heldOut, { normalisation });
    const fine = await runtime.energies(heldOut, { normalisation, weights: tuned.weights });
    expect(mean(fine.energies, WARMUP_POINTS)).toBeLessThan(0.8 * mean(generic.energies, WARMUP_POINTS));
  });

  it('gives injected spikes energies above the baseline p99', async () => {
    const baseline = await runtime.energies(train, { normalisation: tuned.normalisation, weights: tuned.weights });
    const stats = computeEnergyStats(baseline.energies.subarray(WARMUP_POINTS));
    const spiked = [...heldOut];
    const spikes = [100, 180, 260];
    for (const t of spikes) spiked[t] = (spiked[t] ?? 0) + 25;
    const result = await runtime.energies(spiked, { normalisation: tuned.normalisation, weights: tuned.weights });
    for (const t of spikes) expect(result.energies[t]).toBeGreaterThan(stats.energy_p99);
  });

  it('solves the ridge over its training pairs (dual) to the weights it finds over the features, within float32 rounding', async () => {
    const generic = await runtime.fineTune(train, { mode: 'head', maxEpochs: 0 });
    const dual = await runtime.fineTune(train, { ridgeForm: 'dual' });
    expect(dual.heldOutFrom).toBe(tuned.heldOutFrom);
    expect(dual.normalisation).toEqual(tuned.normalisation);
    expect(dual.stats).toMatchObject({ status: 'completed', epochsRun: 1, epochsMax: 1, windows: 400 - WARMUP_POINTS });
    // Far below the generic predictor's held-out loss, and within a hundredth of the primal solve's.
    expect(dual.stats.finalLoss).toBeLessThan(0.2 * generic.stats.finalLoss);
    expect(Math.abs(dual.stats.finalLoss - tuned.stats.finalLoss)).toBeLessThan(0.01 * tuned.stats.finalLoss);
    // The first layer stays the generic one; the energies of new data agree to rounding.
    expect(dual.weights.tensors.w1?.data).toEqual(runtime.genericWeights.tensors.w1?.data);
    const primalEnergies = (await runtime.energies(heldOut, { normalisation: tuned.normalisation, weights: tuned.weights })).energies;
    const dualEnergies = (await runtime.energies(heldOut, { normalisation: dual.normalisation, weights: dual.weights })).energies;
    const largest = Math.max(...primalEnergies);
    primalEnergies.forEach((energy, t) => expect(Math.abs((dualEnergies[t] ?? Number.NaN) - energy), `point ${t}`).toBeLessThan(0.02 * largest));
  });

  it("'auto' solves over the training pairs while they are fewer than the features, and over the features after", async () => {
    const short = await runtime.fineTune(train, { ridgeForm: 'auto' });
    const dual = await runtime.fineTune(train, { ridgeForm: 'dual' });
    expect(short.weights.tensors.w2?.data).toEqual(dual.weights.tensors.w2?.data);
    expect(short.weights.tensors.b2?.data).toEqual(dual.weights.tensors.b2?.data);
    // 1,600 points: 1,568 pairs, 1,254 of them trained on, more than the 1,200 features.
    const long = healthySeries(1600, 13);
    const auto = await runtime.fineTune(long, { ridgeForm: 'auto' });
    const primal = await runtime.fineTune(long);
    expect(auto.weights.tensors.w2?.data).toEqual(primal.weights.tensors.w2?.data);
    expect(auto.stats.finalLoss).toBe(primal.stats.finalLoss);
  });

  it('the Adam modes (head and full) also beat the generic held-out loss', async () => {
    const generic = await runtime.fineTune(train, { mode: 'head', maxEpochs: 0 });
    expect(generic.stats.epochsRun).toBe(0);
    for (const mode of ['head', 'full'] as const) {
      const result = await runtime.fineTune(train, { mode, maxEpochs: 6 });
      expect(result.stats.epochsMax).toBe(6);
      expect(result.stats.epochsRun).toBeGreaterThan(0);
      expect(result.stats.finalLoss).toBeLessThan(generic.stats.finalLoss);
    }
  });

  it('refuses fewer than 100 points with a typed error', async () => {
    const caught = await runtime.fineTune(healthySeries(99, 1)).catch((err: unknown) => err);
    expect(isModelError(caught) && caught.code === 'MODEL_SERIES_TOO_SHORT').toBe(true);
  });

  it('runs the same fine-tune in a worker thread with the same result shape', async () => {
    const series = healthySeries(160, 5);
    const [inWorker, inThread] = await Promise.all([
      fineTuneInThread(series, { maxEpochs: 3, intraOpThreads: 1 }),
      runtime.fineTune(series, { maxEpochs: 3 }),
    ]);
    expect(Object.keys(inWorker.weights.tensors).sort()).toEqual(Object.keys(inThread.weights.tensors).sort());
    for (const name of PREDICTOR_TENSOR_NAMES) {
      expect(inWorker.weights.tensors[name]?.dims).toEqual(inThread.weights.tensors[name]?.dims);
      expect(inWorker.weights.tensors[name]?.data).toBeInstanceOf(Float32Array);
    }
    expect(inWorker.normalisation).toEqual(inThread.normalisation);
    expect(Object.keys(inWorker.stats).sort()).toEqual(Object.keys(inThread.stats).sort());
    expect(inWorker.stats.windows).toBe(inThread.stats.windows);
    expect(inWorker.stats.finalLoss).toBeCloseTo(inThread.stats.finalLoss, 4);
  });

  it('a worker reports typed errors from the worker side', async () => {
    const caught = await fineTuneInThread([1, 2, 3], { intraOpThreads: 1 }).catch((err: unknown) => err);
    expect(isModelError(caught) && caught.code === 'MODEL_SERIES_TOO_SHORT').toBe(true);
  });

  it("computes a worker's energies, embeddings and chosen points as the runtime does, bit for bit", async () => {
    const thread = await startFineTuneThread({ intraOpThreads: 2 });
    try {
      const series = healthySeries(300, 13, 400);
      const options = { weights: tuned.weights, normalisation: tuned.normalisation };
      const [inWorker, here] = await Promise.all([
        thread.energies(series, { ...options, includeEmbeddings: true }),
        runtime.energies(series, { ...options, includeEmbeddings: true }),
      ]);
      expect(Array.from(inWorker.energies)).toEqual(Array.from(here.energies));
      expect(inWorker.normalisation).toEqual(here.normalisation);
      expect(inWorker.embeddings).toHaveLength(300);
      inWorker.embeddings?.forEach((embedding, t) => expect(Array.from(embedding)).toEqual(Array.from(here.embeddings?.[t] ?? [])));
      const points = [40, 41, 200, 299];
      const some = await thread.energies(series, { ...options, points });
      expect(some.embeddings).toBeNull();
      expect(Array.from(some.energies)).toEqual(Array.from((await runtime.energies(series, { ...options, points })).energies));
      const caught = await thread.energies(series, { points: [5, 3] }).catch((err: unknown) => err);
      expect(isModelError(caught) && caught.code === 'MODEL_OPTIONS_INVALID').toBe(true);
    } finally {
      await thread.close();
    }
  });
});
