// Argument checks of the ClickHouse store. Stricter than the database would be on its own: every
// number that is written must be finite (JSON has no NaN or Infinity, and a NaN would arrive as
// NULL), every count a non-negative safe integer.
import { StoreError } from '../errors.js';
import { validateMachineModel, validateShapeReference } from '../shape-reference.js';
import { REGIME_NAMES, type MachineDetection, type NewApiKey, type NewBaseline, type NewOrganization, type Plan } from '../types.js';

function invalid(operation: string, problem: string): never {
  throw new StoreError('STORE_INVALID_ARGUMENT', operation, problem);
}

const isCount = (value: number): boolean => Number.isSafeInteger(value) && value >= 0;

export function requireNonEmpty(operation: string, values: Readonly<Record<string, string>>): void {
  for (const [name, value] of Object.entries(values)) {
    if (typeof value !== 'string' || value.length === 0) invalid(operation, `${name} must be a non-empty string`);
  }
}

export function validateNewKey(operation: string, key: NewApiKey): void {
  if (key.kind !== 'live' && key.kind !== 'test') invalid(operation, 'kind must be live or test');
  if (typeof key.keyHash !== 'string' || !/^[0-9a-f]{64}$/.test(key.keyHash)) {
    invalid(operation, 'keyHash must be a lower-case hex SHA-256 digest');
  }
  if (typeof key.prefix !== 'string' || key.prefix.length === 0) invalid(operation, 'prefix must be non-empty');
  if (key.name !== undefined && (typeof key.name !== 'string' || key.name.length > 200)) {
    invalid(operation, 'name must be at most 200 characters');
  }
}

export function validateNewOrganization(
  operation: string,
  options: NewOrganization,
): { readonly plan: Plan; readonly externalId: string | null } {
  const plan = options.plan ?? 'paid';
  if (plan !== 'free' && plan !== 'paid') invalid(operation, 'plan must be free or paid');
  const externalId = options.externalId ?? null;
  if (externalId !== null && (typeof externalId !== 'string' || externalId.length === 0)) {
    invalid(operation, 'externalId must be non-empty when given');
  }
  return { plan, externalId };
}

/** Epoch milliseconds of a valid, non-negative Date (the key tables keep UInt64 times). */
export function epochMs(operation: string, at: Date): number {
  const ms = at instanceof Date ? at.getTime() : Number.NaN;
  if (!Number.isSafeInteger(ms) || ms < 0) invalid(operation, 'the time must be a valid date after 1970');
  return ms;
}

export function validateBaseline(orgId: string, baseline: NewBaseline): void {
  const operation = 'upsertBaseline';
  requireNonEmpty(operation, { orgId, machineId: baseline.machineId, baselineId: baseline.baselineId });
  const { stats, fineTuneStats } = baseline;
  const finite = [stats.energyMean, stats.energyStd, stats.energyP99, fineTuneStats.durationSeconds];
  const optionalFinite = [
    baseline.sensitivity,
    fineTuneStats.finalLoss,
    baseline.normalisation?.center ?? null,
    baseline.normalisation?.scale ?? null,
  ];
  if (finite.some((value) => !Number.isFinite(value)) || optionalFinite.some((value) => value !== null && !Number.isFinite(value))) {
    invalid(operation, 'energy statistics, durations, sensitivity, loss and normalisation must be finite numbers');
  }
  const counts = [stats.numWindows, stats.seriesLength, fineTuneStats.epochsRun, fineTuneStats.epochsMax, fineTuneStats.windows];
  if (!counts.every(isCount)) invalid(operation, 'counts must be non-negative integers');
  if (fineTuneStats.epochsRun > 0xffffffff || fineTuneStats.epochsMax > 0xffffffff) invalid(operation, 'epochs must fit 32 bits');
  if (fineTuneStats.status !== 'completed' && fineTuneStats.status !== 'skipped') {
    invalid(operation, 'fine-tune status must be completed or skipped');
  }
  if ((baseline.predictorWeights === null) !== (baseline.normalisation === null)) {
    invalid(operation, 'predictor weights and normalisation come together');
  }
  if (baseline.predictorWeights !== null && !(baseline.predictorWeights instanceof Uint8Array)) {
    invalid(operation, 'predictor weights must be bytes');
  }
  for (const [name, value] of [['label', baseline.label], ['granularity', baseline.granularity]] as const) {
    if (value !== null && typeof value !== 'string') invalid(operation, `${name} must be a string or null`);
  }
  const channels = baseline.channels;
  if (channels != null && (!Array.isArray(channels) || channels.length === 0 || !channels.every((name) => typeof name === 'string' && name !== ''))) {
    invalid(operation, 'channels must be null or a non-empty list of non-empty names');
  }
  validateShapeReference(operation, baseline.shapeReference);
  validateMachineModel(operation, baseline.machineModel);
}

export function validateDetection(orgId: string, machineId: string, detection: MachineDetection): void {
  const operation = 'recordDetection';
  if (!orgId || !machineId || !isCount(detection.points)) {
    invalid(operation, 'orgId and machineId must be non-empty and points a non-negative integer');
  }
  if (!REGIME_NAMES.every((name) => isCount(detection.regimeCounts[name]))) {
    invalid(operation, 'regime counts must be non-negative integers');
  }
}
