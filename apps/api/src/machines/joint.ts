// A multivariate machine's joint model as the baseline keeps it (JSON text in the store) and as
// detection uses it (@adp/machine's MachineModel).
import type { MachineModel } from '@adp/machine';

export function encodeMachineModel(model: MachineModel): string {
  return JSON.stringify(model);
}

function isNumberList(value: unknown, length?: number): value is number[] {
  return Array.isArray(value) && (length === undefined || value.length === length) && value.every((x) => typeof x === 'number' && Number.isFinite(x));
}

/**
 * The stored model, or null for none. Only the API writes this text; one that does not read back as
 * a model means the store was damaged, which is not the caller's fault: it is thrown.
 */
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
    Array.isArray(parsed.drift) &&
    parsed.drift.length === d &&
    parsed.drift.every((row) => isNumberList(row, d)) &&
    isNumberList(parsed.driftPower, d) &&
    Array.isArray(parsed.correlation) &&
    parsed.correlation.length === d &&
    parsed.correlation.every((row) => isNumberList(row, d)) &&
    isNumberList(parsed.calibration) &&
    Number.isSafeInteger(parsed.smoothingPoints) &&
    typeof parsed.calibrationError === 'number' &&
    Number.isFinite(parsed.calibrationError) &&
    Number.isSafeInteger(parsed.rows);
  if (!valid) throw new Error('the stored machine model does not read back as a model');
  return parsed as MachineModel;
}
