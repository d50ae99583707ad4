// Which stored series belong to a machine. A multi-channel machine's channel is stored as the
// series `<machine_id>:<channel>`; machine ids sent as telemetry cannot hold ':' (the API answers
// 400, the workers dead-letter), so the part before the first ':' names the machine and one
// device's series never merge with another's. Series ids that already held ':' before that rule
// stay readable under their own id.
import { StreamingError } from './errors.js';

export const CHANNEL_SEPARATOR = ':';

/** The series id of one channel of a machine. */
export function channelSeriesId(machineId: string, channel: string): string {
  return `${machineId}${CHANNEL_SEPARATOR}${channel}`;
}

/**
 * The prefix of the channel series of `machineId`, or null when the id itself names a channel (or
 * a series stored before machine ids lost ':'): deleting `pump:temp` must not take `pump:temp:max`,
 * a channel of `pump` named `temp:max`.
 */
export function channelPrefixOf(machineId: string): string | null {
  return machineId.includes(CHANNEL_SEPARATOR) ? null : `${machineId}${CHANNEL_SEPARATOR}`;
}

/** Whether series `seriesId` is machine `machineId`'s own series or one of its channels. */
export function isSeriesOfMachine(seriesId: string, machineId: string): boolean {
  if (seriesId === machineId) return true;
  const prefix = channelPrefixOf(machineId);
  return prefix !== null && seriesId.startsWith(prefix);
}

/** Throws VALUE_INVALID unless both ids are non-empty strings (what a deletion must name). */
export function checkMachineRef(orgId: string, machineId: string, what: string): void {
  if (typeof orgId !== 'string' || orgId.length === 0) throw new StreamingError('VALUE_INVALID', `${what}: orgId is empty`);
  if (typeof machineId !== 'string' || machineId.length === 0) {
    throw new StreamingError('VALUE_INVALID', `${what}: machineId is empty`);
  }
}

/**
 * A worker's checkpoint key: `<groupId>/<orgId>/<seriesId>`. Organization and series ids hold
 * no '/', so the last two segments are always the organization and the series.
 */
export function checkpointKey(groupId: string, orgId: string, seriesId: string): string {
  return `${groupId}/${orgId}/${seriesId}`;
}

/** Whether checkpoint `key` (any consumer group's) holds a series of the machine. */
export function isCheckpointOfMachine(key: string, orgId: string, machineId: string): boolean {
  const seriesAt = key.lastIndexOf('/');
  if (seriesAt < 0) return false;
  const orgAt = key.lastIndexOf('/', seriesAt - 1);
  if (orgAt < 0) return false;
  return key.slice(orgAt + 1, seriesAt) === orgId && isSeriesOfMachine(key.slice(seriesAt + 1), machineId);
}
