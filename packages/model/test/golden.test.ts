// Golden fixtures written by pipelines/model-training (Python onnxruntime): a changed model,
// runtime, windowing or normalisation shows up here.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { InferenceSession, Tensor } from 'onnxruntime-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createModelRuntime, defaultAssetsDir, EMBEDDING_DIM, type LoadedModelRuntime, WINDOW_POINTS } from '../src/index.js';

interface Golden {
  modelVersion: string;
  windows: number[][];
  embeddings: number[][];
  predictions: number[][];
  series: number[];
  normalisation: { center: number; scale: number };
  energies: number[];
}

const golden = JSON.parse(readFileSync(new URL('./fixtures/golden.json', import.meta.url), 'utf8')) as Golden;
const assets = defaultAssetsDir();

function maxAbsDiff(actual: ArrayLike<number>, expected: ArrayLike<number>): number {
  expect(actual.length).toBe(expected.length);
  let max = 0;
  for (let i = 0; i < expected.length; i++) max = Math.max(max, Math.abs((actual[i] ?? NaN) - (expected[i] ?? NaN)));
  return max;
}

describe('golden fixtures', () => {
  let runtime: LoadedModelRuntime;
  beforeAll(async () => {
    runtime = await createModelRuntime({ intraOpThreads: 1 });
  });
  afterAll(async () => {
    await runtime.close();
  });

  it('reports the pinned model version', () => {
    expect(runtime.modelVersion).toBe(golden.modelVersion);
  });

  it('encoder and predictor graphs reproduce the pinned outputs', async () => {
    const session = await InferenceSession.create(join(assets, 'encoder.onnx'), { intraOpNumThreads: 1 });
    const rows = golden.windows.length;
    const input = Float32Array.from(golden.windows.flat());
    const out = await session.run({ window: new Tensor('float32', input, [rows, WINDOW_POINTS]) });
    const embedding = out.embedding?.data as Float32Array;
    expect(maxAbsDiff(embedding, golden.embeddings.flat())).toBeLessThan(1e-4);
    await session.release();

    const predictor = await InferenceSession.create(join(assets, 'predictor.onnx'), { intraOpNumThreads: 1 });
    const feeds: Record<string, Tensor> = { x: new Tensor('float32', embedding, [rows, EMBEDDING_DIM]) };
    for (const [name, t] of Object.entries(runtime.genericWeights.tensors)) feeds[name] = new Tensor('float32', t.data, t.dims);
    const pred = (await predictor.run(feeds)).pred?.data as Float32Array;
    expect(maxAbsDiff(pred, golden.predictions.flat())).toBeLessThan(1e-4);
    await predictor.release();
  });

  it('energies of the pinned series match (windowing, normalisation, energy rule)', async () => {
    const result = await runtime.energies(golden.series);
    // The fixture's series is rounded to 9 decimals, so the centre and scale agree to ~1e-8 relative.
    expect(Math.abs(result.normalisation.center / golden.normalisation.center - 1)).toBeLessThan(1e-7);
    expect(Math.abs(result.normalisation.scale / golden.normalisation.scale - 1)).toBeLessThan(1e-7);
    expect(maxAbsDiff(result.energies, golden.energies)).toBeLessThan(1e-4);
    expect(result.energies[0]).toBe(0);
  });

  it('energies of chosen points only (points) equal the whole series\' at those points, 0 elsewhere', async () => {
    const whole = await runtime.energies(golden.series);
    const n = golden.series.length;
    // Single points, a run, the first point past the warm-up and the last; some inside the warm-up.
    const points = [3, 31, 32, 33, 40, 41, 42, 43, 44, 70, n - 2, n - 1].filter((t) => t < n);
    const some = await runtime.energies(golden.series, { points });
    expect(some.energies).toHaveLength(n);
    expect(some.embeddings).toBeNull();
    expect(some.normalisation).toEqual(whole.normalisation);
    for (let t = 0; t < n; t++) {
      if (points.includes(t)) expect(Math.abs(some.energies[t]! - whole.energies[t]!), `point ${t}`).toBeLessThan(1e-5);
      else expect(some.energies[t], `point ${t}`).toBe(0);
    }
    expect(some.energies[3]).toBe(0);
    expect(some.energies[31]).toBe(0);
    expect(some.energies[32]).toBeGreaterThan(0);
    // Nothing past the warm-up: no model call, all zeros.
    expect(Array.from((await runtime.energies(golden.series, { points: [0, 5] })).energies).every((e) => e === 0)).toBe(true);
  });

  it('refuses points out of order, outside the series or with embeddings (MODEL_OPTIONS_INVALID)', async () => {
    const n = golden.series.length;
    for (const points of [[40, 39], [40, 40], [-1], [n], [40.5]]) {
      await expect(runtime.energies(golden.series, { points }), JSON.stringify(points)).rejects.toMatchObject({ code: 'MODEL_OPTIONS_INVALID' });
    }
    await expect(runtime.energies(golden.series, { points: [40], includeEmbeddings: true })).rejects.toMatchObject({
      code: 'MODEL_OPTIONS_INVALID',
      retriable: false,
    });
  });

  it('returns 192-number embeddings per point when asked', async () => {
    const result = await runtime.energies(golden.series.slice(0, 40), { includeEmbeddings: true });
    expect(result.embeddings).toHaveLength(40);
    expect(result.embeddings?.[39]).toHaveLength(EMBEDDING_DIM);
    expect((await runtime.energies(golden.series.slice(0, 40))).embeddings).toBeNull();
  });

  it('the manifest and the model card carry the checksum of every asset', () => {
    const manifest = JSON.parse(readFileSync(join(assets, 'manifest.json'), 'utf8')) as {
      assets: Record<string, { sha256: string }>;
    };
    const card = readFileSync(new URL('../MODEL_CARD.md', import.meta.url), 'utf8');
    for (const [file, { sha256 }] of Object.entries(manifest.assets)) {
      expect(createHash('sha256').update(readFileSync(join(assets, file))).digest('hex')).toBe(sha256);
      expect(card).toContain(sha256);
    }
    expect(card).toContain(golden.modelVersion);
  });
});
