// The success bodies of the vendor routes, written as JSON text field by field. Each writer checks
// the engine's result against the wire contract in the same pass (array lengths, finite numbers,
// real booleans: JSON.stringify would quietly write NaN as null or pass a wrong type through) and
// copies only the documented fields, so nothing the engine adds can leak onto the wire.
// The text is byte for byte what JSON.stringify writes for the same body (a test holds it to that).
// It is about twice as fast for the 8,640-point bodies: the margins repeat from point to point,
// and a repeated number is formatted once.
import type { ChangePointResult, EntireResult, LastResult } from '@adp/detection';

/** Thrown when the engine breaks its result contract; the client sees a generic 500. */
function engineContractError(problem: string): Error {
  return new Error(`detection engine broke its result contract: ${problem}`);
}

function checkLength(field: string, values: { readonly length: number }, pointCount: number): void {
  if (values.length !== pointCount) throw engineContractError(`${values.length} ${field} for ${pointCount} points`);
}

/** A JSON array of finite numbers; a value equal to the one before reuses its text. */
function numberArray(field: string, values: readonly number[], pointCount: number): string {
  checkLength(field, values, pointCount);
  let text = '[';
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
    text += index === 0 ? previousText : `,${previousText}`;
  }
  return `${text}]`;
}

function booleanArray(field: string, values: readonly boolean[], pointCount: number): string {
  checkLength(field, values, pointCount);
  let text = '[';
  for (let index = 0; index < pointCount; index++) {
    const value = values[index];
    if (typeof value !== 'boolean') throw engineContractError(`non-boolean ${field}`);
    if (index > 0) text += ',';
    text += value ? 'true' : 'false';
  }
  return `${text}]`;
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

/** `EntireDetectResponse` as JSON text. */
export function writeEntireBody(result: EntireResult, pointCount: number): string {
  return (
    `{"period":${integer('period', result.period)}` +
    `,"expectedValues":${numberArray('expectedValues', result.expectedValues, pointCount)}` +
    `,"upperMargins":${numberArray('upperMargins', result.upperMargins, pointCount)}` +
    `,"lowerMargins":${numberArray('lowerMargins', result.lowerMargins, pointCount)}` +
    `,"isAnomaly":${booleanArray('isAnomaly', result.isAnomaly, pointCount)}` +
    `,"isNegativeAnomaly":${booleanArray('isNegativeAnomaly', result.isNegativeAnomaly, pointCount)}` +
    `,"isPositiveAnomaly":${booleanArray('isPositiveAnomaly', result.isPositiveAnomaly, pointCount)}` +
    `,"severity":${numberArray('severity', result.severity, pointCount)}}`
  );
}

/** `LastDetectResponse` as JSON text. */
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

/** `ChangePointDetectResponse` as JSON text. */
export function writeChangePointBody(result: ChangePointResult, pointCount: number): string {
  return (
    `{"period":${integer('period', result.period)}` +
    `,"isChangePoint":${booleanArray('isChangePoint', result.isChangePoint, pointCount)}` +
    `,"confidenceScores":${numberArray('confidenceScores', result.confidenceScores, pointCount)}}`
  );
}
