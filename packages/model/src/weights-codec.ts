// Byte encoding of PredictorWeights for storage (a database blob, the generic weights asset).
// Format "ADPW" v1, little-endian, written identically by pipelines/model-training/src/train.py:
//   "ADPW" | u32 version=1 | u32 tensorCount | per tensor: u16 nameBytes, name (UTF-8),
//   u8 rank, u32 dims[rank], float32 data[prod(dims)]
import { EMBEDDING_DIM, type PredictorWeights } from './contract.js';
import { ModelError } from './errors.js';

/** Hidden width of the predictor MLP (192 -> 1200 -> 192). */
export const PREDICTOR_HIDDEN = 1200;

/** The predictor's tensors, in the order the ONNX graphs declare them. */
export const PREDICTOR_TENSOR_SHAPES = {
  w1: [EMBEDDING_DIM, PREDICTOR_HIDDEN],
  b1: [PREDICTOR_HIDDEN],
  w2: [PREDICTOR_HIDDEN, EMBEDDING_DIM],
  b2: [EMBEDDING_DIM],
} as const;

export type PredictorTensorName = keyof typeof PREDICTOR_TENSOR_SHAPES;
export const PREDICTOR_TENSOR_NAMES = Object.keys(PREDICTOR_TENSOR_SHAPES) as PredictorTensorName[];

/** 192·1200 + 1200 + 1200·192 + 192 = 462,192. */
export const PREDICTOR_PARAMETERS = PREDICTOR_TENSOR_NAMES.reduce(
  (sum, name) => sum + PREDICTOR_TENSOR_SHAPES[name].reduce((a, b) => a * b, 1),
  0,
);

const MAGIC = [0x41, 0x44, 0x50, 0x57]; // "ADPW"
const VERSION = 1;
const littleEndianHost = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

function invalid(message: string, cause?: unknown): ModelError {
  return new ModelError('MODEL_WEIGHTS_INVALID', message, cause === undefined ? undefined : { cause });
}

/** Throws MODEL_WEIGHTS_INVALID unless `weights` has exactly the predictor's tensors and shapes. */
export function assertPredictorWeights(weights: PredictorWeights): void {
  for (const name of PREDICTOR_TENSOR_NAMES) {
    const tensor = weights.tensors[name];
    const shape = PREDICTOR_TENSOR_SHAPES[name];
    if (tensor === undefined) throw invalid(`predictor weights lack tensor ${name}`);
    if (tensor.dims.length !== shape.length || tensor.dims.some((d, i) => d !== shape[i])) {
      throw invalid(`predictor tensor ${name} has dims [${tensor.dims.join(',')}], expected [${shape.join(',')}]`);
    }
    const size = shape.reduce((a: number, b: number) => a * b, 1);
    if (tensor.data.length !== size) throw invalid(`predictor tensor ${name} has ${tensor.data.length} values, expected ${size}`);
  }
}

export function encodePredictorWeights(weights: PredictorWeights): Uint8Array {
  const encoder = new TextEncoder();
  const entries = Object.entries(weights.tensors);
  let size = 12;
  const names = entries.map(([name]) => encoder.encode(name));
  entries.forEach(([, t], i) => {
    size += 2 + (names[i]?.length ?? 0) + 1 + 4 * t.dims.length + 4 * t.data.length;
  });
  const out = new Uint8Array(size);
  const view = new DataView(out.buffer);
  out.set(MAGIC, 0);
  view.setUint32(4, VERSION, true);
  view.setUint32(8, entries.length, true);
  let off = 12;
  entries.forEach(([, t], i) => {
    const name = names[i] ?? new Uint8Array();
    view.setUint16(off, name.length, true);
    out.set(name, off + 2);
    off += 2 + name.length;
    view.setUint8(off, t.dims.length);
    off += 1;
    for (const d of t.dims) {
      view.setUint32(off, d, true);
      off += 4;
    }
    if (littleEndianHost) {
      out.set(new Uint8Array(t.data.buffer, t.data.byteOffset, t.data.byteLength), off);
    } else {
      for (let k = 0; k < t.data.length; k++) view.setFloat32(off + 4 * k, t.data[k] ?? 0, true);
    }
    off += 4 * t.data.length;
  });
  return out;
}

export function decodePredictorWeights(bytes: Uint8Array): PredictorWeights {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const need = (off: number, n: number): void => {
    if (off + n > bytes.byteLength) throw invalid('predictor weights bytes are truncated');
  };
  need(0, 12);
  if (MAGIC.some((b, i) => bytes[i] !== b)) throw invalid('predictor weights bytes do not start with ADPW');
  const version = view.getUint32(4, true);
  if (version !== VERSION) throw invalid(`predictor weights format version ${version} is not supported`);
  const count = view.getUint32(8, true);
  const decoder = new TextDecoder('utf-8', { fatal: true });
  const tensors: Record<string, { dims: number[]; data: Float32Array }> = {};
  let off = 12;
  for (let i = 0; i < count; i++) {
    need(off, 2);
    const nameLength = view.getUint16(off, true);
    need(off + 2, nameLength + 1);
    const name = decoder.decode(bytes.subarray(off + 2, off + 2 + nameLength));
    off += 2 + nameLength;
    const rank = view.getUint8(off);
    off += 1;
    need(off, 4 * rank);
    const dims: number[] = [];
    for (let k = 0; k < rank; k++) dims.push(view.getUint32(off + 4 * k, true));
    off += 4 * rank;
    const size = dims.reduce((a, b) => a * b, 1);
    need(off, 4 * size);
    let data: Float32Array;
    if (littleEndianHost) {
      // Copy so the tensor owns aligned memory whatever the source buffer's offset (and a Node
      // Buffer's slice() would be a view, not a copy).
      data = new Float32Array(size);
      new Uint8Array(data.buffer).set(bytes.subarray(off, off + 4 * size));
    } else {
      data = new Float32Array(size);
      for (let k = 0; k < size; k++) data[k] = view.getFloat32(off + 4 * k, true);
    }
    off += 4 * size;
    tensors[name] = { dims, data };
  }
  if (off !== bytes.byteLength) throw invalid('predictor weights bytes have trailing data');
  const weights: PredictorWeights = { tensors };
  assertPredictorWeights(weights);
  return weights;
}
