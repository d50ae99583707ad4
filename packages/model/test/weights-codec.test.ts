import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  decodePredictorWeights,
  defaultAssetsDir,
  encodePredictorWeights,
  isModelError,
  PREDICTOR_PARAMETERS,
  PREDICTOR_TENSOR_NAMES,
  PREDICTOR_TENSOR_SHAPES,
  type PredictorWeights,
} from '../src/index.js';

function weightsFilledWith(f: (i: number) => number): PredictorWeights {
  const tensors: Record<string, { dims: number[]; data: Float32Array }> = {};
  for (const name of PREDICTOR_TENSOR_NAMES) {
    const dims = [...PREDICTOR_TENSOR_SHAPES[name]];
    const data = new Float32Array(dims.reduce((a, b) => a * b, 1));
    for (let i = 0; i < data.length; i++) data[i] = f(i);
    tensors[name] = { dims, data };
  }
  return { tensors };
}

describe('predictor weights bytes (ADPW v1)', () => {
  it('has 462,192 parameters', () => {
    expect(PREDICTOR_PARAMETERS).toBe(462_192);
  });

  it('round-trips through bytes', () => {
    const weights = weightsFilledWith((i) => Math.sin(i) * 0.1);
    const bytes = encodePredictorWeights(weights);
    expect(bytes.byteLength).toBe(12 + 4 * PREDICTOR_PARAMETERS + (2 + 2 + 1 + 8) * 2 + (2 + 2 + 1 + 4) * 2);
    const back = decodePredictorWeights(bytes);
    for (const name of PREDICTOR_TENSOR_NAMES) {
      const original = weights.tensors[name];
      const decoded = back.tensors[name];
      expect(decoded?.dims).toEqual(original?.dims);
      // Byte-wise comparison: toEqual over 230,400 floats takes seconds.
      const a = Buffer.from(decoded?.data.buffer ?? new ArrayBuffer(0));
      const b = Buffer.from(original?.data.buffer ?? new ArrayBuffer(1));
      expect(a.equals(b)).toBe(true);
    }
  });

  it('decodes from an unaligned offset in a larger buffer', () => {
    const bytes = encodePredictorWeights(weightsFilledWith((i) => i % 7));
    const padded = new Uint8Array(bytes.byteLength + 3);
    padded.set(bytes, 1);
    expect(decodePredictorWeights(padded.subarray(1, 1 + bytes.byteLength)).tensors.b2?.data[6]).toBe(6);
  });

  it('pins the wire format (golden header of the first tensor)', () => {
    const bytes = encodePredictorWeights(weightsFilledWith(() => 1));
    const header = Buffer.from(bytes.subarray(0, 12 + 2 + 2 + 1 + 8 + 4)).toString('hex');
    // "ADPW", version 1, 4 tensors, name "w1", rank 2, dims 192 x 1200, first value 1.0f
    expect(header).toBe('41445057' + '01000000' + '04000000' + '0200' + '7731' + '02' + 'c0000000' + 'b0040000' + '0000803f');
  });

  it('decodes the generic weights asset written by the Python pipeline', () => {
    const weights = decodePredictorWeights(readFileSync(join(defaultAssetsDir(), 'predictor_generic.bin')));
    expect(weights.tensors.w1?.dims).toEqual([192, 1200]);
    expect(Number.isFinite(weights.tensors.w2?.data[0])).toBe(true);
  });

  it('refuses truncated or foreign bytes with a typed error', () => {
    const bytes = encodePredictorWeights(weightsFilledWith(() => 0));
    for (const bad of [bytes.subarray(0, 100), new Uint8Array([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12])]) {
      let caught: unknown;
      try {
        decodePredictorWeights(bad);
      } catch (err) {
        caught = err;
      }
      expect(isModelError(caught) && caught.code === 'MODEL_WEIGHTS_INVALID').toBe(true);
    }
  });
});
