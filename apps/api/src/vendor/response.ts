// The success bodies of the vendor routes, written as JSON bytes field by field. Each writer checks
// the engine's result against the wire contract in the same pass (array lengths, finite numbers,
// real booleans: JSON.stringify would quietly write NaN as null or pass a wrong type through) and
// copies only the documented fields, so nothing the engine adds can leak onto the wire.
// The bytes are byte for byte what JSON.stringify writes for the same body (a test holds it to
// that). They go to the socket as they are: a body written as text was first flattened and then
// encoded again on its way out, which cost about as much as writing it; and a repeated number (the
// margins repeat from point to point) is formatted once.
import type { ChangePointResult, EntireResult, LastResult } from '@adp/detection';

/** Thrown when the engine breaks its result contract; the client sees a generic 500. */
function engineContractError(problem: string): Error {
  return new Error(`detection engine broke its result contract: ${problem}`);
}

function checkLength(field: string, values: { readonly length: number }, pointCount: number): void {
  if (values.length !== pointCount) throw engineContractError(`${values.length} ${field} for ${pointCount} points`);
}

/**
 * The most bytes a number takes in JSON with the comma before it: String() of a double is at most
 * 25 characters (`-0.0000012345678901234567`, `-1.7976931348623157e+308` is 24).
 */
const NUMBER_BYTES = 26;
/** `,false` */
const BOOLEAN_BYTES = 6;
/** Room for the keys, braces and the scalar fields of a body. */
const FRAME_BYTES = 512;

const COMMA = 0x2c;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;

/** A body's bytes, written into one buffer sized for the worst case up front. */
class JsonBytes {
  private readonly bytes: Buffer;
  private at = 0;

  constructor(capacity: number) {
    this.bytes = Buffer.allocUnsafe(capacity);
  }

  /** ASCII text: the keys, punctuation and scalars. */
  text(text: string): void {
    const bytes = this.bytes;
    let at = this.at;
    for (let i = 0; i < text.length; i++) bytes[at++] = text.charCodeAt(i);
    this.at = at;
  }

  /** A JSON array of finite numbers; a value equal to the one before reuses its text. */
  numberArray(field: string, values: readonly number[], pointCount: number): void {
    checkLength(field, values, pointCount);
    const bytes = this.bytes;
    let at = this.at;
    bytes[at++] = OPEN_BRACKET;
    let previous = Number.NaN;
    let previousText = '';
    for (let index = 0; index < pointCount; index++) {
      const value = values[index];
      if (value !== previous) {
        if (typeof value !== 'number' || !Number.isFinite(value)) throw engineContractError(`non-finite ${field}`);
        previous = value;
        // JSON writes -0 as 0, as String does.
        previousText = String(value);
      }
      if (index > 0) bytes[at++] = COMMA;
      for (let i = 0; i < previousText.length; i++) bytes[at++] = previousText.charCodeAt(i);
    }
    bytes[at++] = CLOSE_BRACKET;
    this.at = at;
  }

  booleanArray(field: string, values: readonly boolean[], pointCount: number): void {
    checkLength(field, values, pointCount);
    const bytes = this.bytes;
    let at = this.at;
    bytes[at++] = OPEN_BRACKET;
    for (let index = 0; index < pointCount; index++) {
      const value = values[index];
      if (typeof value !== 'boolean') throw engineContractError(`non-boolean ${field}`);
      if (index > 0) bytes[at++] = COMMA;
      if (value) {
        bytes[at] = 0x74; // t
        bytes[at + 1] = 0x72; // r
        bytes[at + 2] = 0x75; // u
        bytes[at + 3] = 0x65; // e
        at += 4;
      } else {
        bytes[at] = 0x66; // f
        bytes[at + 1] = 0x61; // a
        bytes[at + 2] = 0x6c; // l
        bytes[at + 3] = 0x73; // s
        bytes[at + 4] = 0x65; // e
        at += 5;
      }
    }
    bytes[at++] = CLOSE_BRACKET;
    this.at = at;
  }

  /** The bytes written (a view of the buffer). */
  done(): Buffer {
    return this.bytes.subarray(0, this.at);
  }
}

function integer(field: string, value: unknown): string {
  if (typeof value !== 'number' || !Number.isSafeInteger(value)) throw engineContractError(`${field} is not a finite integer`);
  return String(value);
}

function finite(field: string, value: unknown): string {
  if (typeof value !== 'number' || !Number.isFinite(value)) throw engineContractError(`${field} is not a finite number`);
  return String(value);
}

function boolean(field: string, value: unknown): string {
  if (typeof value !== 'boolean') throw engineContractError(`${field} is not a finite boolean`);
  return value ? 'true' : 'false';
}

/** `EntireDetectResponse` as JSON bytes. */
export function writeEntireBody(result: EntireResult, pointCount: number): Buffer {
  const json = new JsonBytes(FRAME_BYTES + pointCount * (4 * NUMBER_BYTES + 3 * BOOLEAN_BYTES));
  json.text(`{"period":${integer('period', result.period)},"expectedValues":`);
  json.numberArray('expectedValues', result.expectedValues, pointCount);
  json.text(',"upperMargins":');
  json.numberArray('upperMargins', result.upperMargins, pointCount);
  json.text(',"lowerMargins":');
  json.numberArray('lowerMargins', result.lowerMargins, pointCount);
  json.text(',"isAnomaly":');
  json.booleanArray('isAnomaly', result.isAnomaly, pointCount);
  json.text(',"isNegativeAnomaly":');
  json.booleanArray('isNegativeAnomaly', result.isNegativeAnomaly, pointCount);
  json.text(',"isPositiveAnomaly":');
  json.booleanArray('isPositiveAnomaly', result.isPositiveAnomaly, pointCount);
  json.text(',"severity":');
  json.numberArray('severity', result.severity, pointCount);
  json.text('}');
  return json.done();
}

/**
 * `LastDetectResponse` as JSON text: a body this small goes out in one write with the headers as
 * text, where bytes would be a second one.
 */
export function writeLastBody(result: LastResult): string {
  return (
    `{"period":${integer('period', result.period)}` +
      `,"suggestedWindow":${integer('suggestedWindow', result.suggestedWindow)}` +
      `,"expectedValue":${finite('expectedValue', result.expectedValue)}` +
      `,"upperMargin":${finite('upperMargin', result.upperMargin)}` +
      `,"lowerMargin":${finite('lowerMargin', result.lowerMargin)}` +
      `,"isAnomaly":${boolean('isAnomaly', result.isAnomaly)}` +
      `,"isNegativeAnomaly":${boolean('isNegativeAnomaly', result.isNegativeAnomaly)}` +
      `,"isPositiveAnomaly":${boolean('isPositiveAnomaly', result.isPositiveAnomaly)}` +
      `,"severity":${finite('severity', result.severity)}}`
  );
}

/** `ChangePointDetectResponse` as JSON bytes. */
export function writeChangePointBody(result: ChangePointResult, pointCount: number): Buffer {
  const json = new JsonBytes(FRAME_BYTES + pointCount * (NUMBER_BYTES + BOOLEAN_BYTES));
  json.text(`{"period":${integer('period', result.period)},"isChangePoint":`);
  json.booleanArray('isChangePoint', result.isChangePoint, pointCount);
  json.text(',"confidenceScores":');
  json.numberArray('confidenceScores', result.confidenceScores, pointCount);
  json.text('}');
  return json.done();
}
