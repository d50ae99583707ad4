// A machine model as text (a baseline keeps it as JSON) and back, checked: only the API writes it,
// so text that does not read back as a model means damaged storage, which is thrown.
import type { MachineModel } from './model.js';

export function encodeMachineModel(model: MachineModel): string {
  return JSON.stringify(model);
}

function isNumberList(value: unknown, length?: number): value is number[] {
  return Array.isArray(value) && (length === undefined || value.length === length) && value.every((x) => typeof x === 'number' && Number.isFinite(x));
}

function isSquare(value: unknown, d: number): value is number[][] {
  return Array.isArray(value) && value.length === d && value.every((row) => isNumberList(row, d));
}

/** The model the text holds, or null for none (null text). */
export function decodeMachineModel(text: string | null): MachineModel | null {
  if (text === null) return null;
  const parsed = JSON.parse(text) as Partial<MachineModel>;
  const channels = parsed.channels;
  const d = Array.isArray(channels) ? channels.length : 0;
  const valid =
    parsed.kind === 'gaussian-drift' &&
    d > 0 &&
    channels!.every((name) => typeof name === 'string') &&
    isNumberList(parsed.center, d) &&
    isNumberList(parsed.scale, d) &&
    isSquare(parsed.drift, d) &&
    isNumberList(parsed.driftPower, d) &&
    isSquare(parsed.correlation, d) &&
    isNumberList(parsed.calibration) &&
    typeof parsed.calibrationError === 'number' &&
    Number.isFinite(parsed.calibrationError) &&
    Number.isSafeInteger(parsed.smoothingPoints) &&
    Number.isSafeInteger(parsed.rows);
  if (!valid) throw new Error('the stored machine model does not read back as a model');
  return parsed as MachineModel;
}
