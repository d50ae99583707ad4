// A baseline's shape reference as both backends keep it: one byte string of little-endian float64s,
// [length, center, spread, ...values]. Binary rather than text so that every double, the sign of
// zero included, reads back bit for bit; the embedded store keeps the bytes as a BLOB, ClickHouse as
// base64 text. Validation lives here too, so both adapters refuse the same shape references.
import { StoreError } from './errors.js';
import { MACHINE_MODEL_MAX_CHARS } from './constants.js';
import type { ShapeReference } from './types.js';

/** The most healthy values a shape reference may carry (a day of 10-second points). */
export const SHAPE_REFERENCE_MAX_VALUES = 8640;

const HEADER_DOUBLES = 3;
const BYTES_PER_DOUBLE = 8;

/** Refuses a shape reference that breaks ShapeReference's rules, as STORE_INVALID_ARGUMENT. */
export function validateShapeReference(operation: string, shape: ShapeReference | null | undefined): void {
  if (shape === null || shape === undefined) return;
  const fail = (problem: string): never => {
    throw new StoreError('STORE_INVALID_ARGUMENT', operation, `shape reference: ${problem}`);
  };
  if (typeof shape !== 'object') fail('must be an object or null');
  const { length, values, center, spread } = shape;
  if (!Array.isArray(values) || values.length < 1 || values.length > SHAPE_REFERENCE_MAX_VALUES) {
    fail(`values must be a list of 1 to ${SHAPE_REFERENCE_MAX_VALUES} numbers`);
  }
  if (!values.every((value) => typeof value === 'number' && Number.isFinite(value))) fail('values must be finite numbers');
  if (!Number.isSafeInteger(length) || length < 2) fail('length must be an integer of 2 or more');
  if (length * 3 > values.length) fail('length must be at most a third of the values');
  if (typeof center !== 'number' || !Number.isFinite(center) || center < 0) fail('center must be a finite number >= 0');
  if (typeof spread !== 'number' || !Number.isFinite(spread) || spread <= 0) fail('spread must be a finite number > 0');
}

/** Refuses a machine model that is not null, nor JSON text of an object within MACHINE_MODEL_MAX_CHARS. */
export function validateMachineModel(operation: string, model: string | null | undefined): void {
  if (model === null || model === undefined) return;
  const fail = (problem: string): never => {
    throw new StoreError('STORE_INVALID_ARGUMENT', operation, `machine model: ${problem}`);
  };
  if (typeof model !== 'string' || model.length === 0 || model.length > MACHINE_MODEL_MAX_CHARS) fail(`must be null or JSON text of 1 to ${MACHINE_MODEL_MAX_CHARS} characters`);
  let parsed: unknown;
  try {
    parsed = JSON.parse(model);
  } catch {
    fail('must be JSON text');
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) fail('must be a JSON object');
}

/** The bytes a valid shape reference is stored as (validate it first), or null for none. */
export function encodeShapeReference(shape: ShapeReference | null | undefined): Uint8Array | null {
  if (shape === null || shape === undefined) return null;
  const bytes = new Uint8Array((HEADER_DOUBLES + shape.values.length) * BYTES_PER_DOUBLE);
  const view = new DataView(bytes.buffer);
  view.setFloat64(0, shape.length, true);
  view.setFloat64(BYTES_PER_DOUBLE, shape.center, true);
  view.setFloat64(2 * BYTES_PER_DOUBLE, shape.spread, true);
  shape.values.forEach((value, i) => view.setFloat64((HEADER_DOUBLES + i) * BYTES_PER_DOUBLE, value, true));
  return bytes;
}

/** The shape reference stored as these bytes, or null for none. */
export function decodeShapeReference(bytes: Uint8Array | null): ShapeReference | null {
  if (bytes === null) return null;
  if (bytes.byteLength % BYTES_PER_DOUBLE !== 0 || bytes.byteLength <= HEADER_DOUBLES * BYTES_PER_DOUBLE) {
    // Only the store writes this column; a partial value means the database was damaged.
    throw new Error(`stored shape reference has ${bytes.byteLength} bytes, not a whole number of doubles past its header`);
  }
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const count = bytes.byteLength / BYTES_PER_DOUBLE - HEADER_DOUBLES;
  const values = new Array<number>(count);
  for (let i = 0; i < count; i += 1) values[i] = view.getFloat64((HEADER_DOUBLES + i) * BYTES_PER_DOUBLE, true);
  return {
    length: view.getFloat64(0, true),
    values,
    center: view.getFloat64(BYTES_PER_DOUBLE, true),
    spread: view.getFloat64(2 * BYTES_PER_DOUBLE, true),
  };
}

/** A shape reference as the stores return it: a plain copy, or null for none. */
export function copyShapeReference(shape: ShapeReference | null | undefined): ShapeReference | null {
  if (shape === null || shape === undefined) return null;
  return { length: shape.length, values: Array.from(shape.values), center: shape.center, spread: shape.spread };
}
