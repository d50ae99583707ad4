// What the hand-written request parsers of the native, telemetry, job and vendor routes share:
// the JSON-object test and the coded errors of a refused field.
import { AppError, ERRORS } from './errors.js';

export type JsonObject = Record<string, unknown>;

export function isJsonObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export function invalidArgument(message: string): AppError {
  return new AppError(ERRORS.InvalidArgument, message);
}

export function invalidSeries(message: string): AppError {
  return new AppError(ERRORS.InvalidSeries, message);
}

export function invalidPoints(message: string): AppError {
  return new AppError(ERRORS.InvalidPoints, message);
}
