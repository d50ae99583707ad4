// Decoding and checking one telemetry message. Pure: bytes in, readings or a dead-letter reason
// out. A message that fails here is poison (retrying cannot fix it): the worker parks it on the
// dead-letter topic with the reason and goes on with the partition.
import { isStreamingError, type AvroCodec, type IncomingMessage, type TelemetryPoint } from '@adp/streaming';

/** Machine ids as the native API accepts them (apps/api/src/native/request.ts). */
export const MACHINE_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/;
/** Organization ids: the store's ids (`org_default`, UUIDs) and nothing that could break the `<org>/<machine>` key. */
export const ORGANIZATION_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/;
/** Channel names as the telemetry route accepts them (apps/api/src/telemetry/request.ts). */
export const CHANNEL_NAME_PATTERN = /^[A-Za-z_][A-Za-z0-9_.:-]{0,63}$/;
/** Largest |value| the detection engine takes (the vendor API's limit). */
export const MAX_VALUE_MAGNITUDE = 1e100;
/** Most channels in one point. */
export const MAX_CHANNELS = 64;

/**
 * Why a message went to the dead-letter topic (the DeadLetter's `reason`). The decoder's codes
 * come first, then the checks on a decoded point.
 */
export const DEAD_LETTER_REASONS = [
  'MESSAGE_NOT_SINGLE_OBJECT',
  'UNKNOWN_SCHEMA_FINGERPRINT',
  'SCHEMA_INCOMPATIBLE',
  'MESSAGE_BODY_CORRUPT',
  'INVALID_ORGANIZATION',
  'INVALID_MACHINE_ID',
  'KEY_MISMATCH',
  'INVALID_TIMESTAMP',
  'NO_READING',
  'VALUE_AND_CHANNELS',
  'INVALID_VALUE',
  'INVALID_CHANNEL',
] as const;
export type DeadLetterReason = (typeof DEAD_LETTER_REASONS)[number];

/** One reading of one series: a single-value machine's, or one channel of a multi-channel machine. */
export interface Reading {
  /** The machine id, or `<machine_id>:<channel>` for a channel (each channel is its own series). */
  readonly seriesId: string;
  readonly value: number;
}

export type ParsedTelemetry =
  | {
      readonly ok: true;
      readonly orgId: string;
      readonly machineId: string;
      readonly tsMs: number;
      readonly readings: readonly Reading[];
    }
  | { readonly ok: false; readonly reason: DeadLetterReason; readonly detail: string };

function reject(reason: DeadLetterReason, detail: string): ParsedTelemetry {
  return { ok: false, reason, detail };
}

function isReading(value: unknown): value is number {
  return typeof value === 'number' && Number.isFinite(value) && Math.abs(value) <= MAX_VALUE_MAGNITUDE;
}

/** The series id of a channel: `<machine_id>:<channel>`, itself a valid machine id (so it can have a baseline). */
export function channelSeriesId(machineId: string, channel: string): string {
  return `${machineId}:${channel}`;
}

/** Checks a decoded point and the message key; returns its readings or why it is poison. */
export function validateTelemetryPoint(point: TelemetryPoint, key: Buffer | null): ParsedTelemetry {
  const orgId = point.organization;
  const machineId = point.machine_id;
  if (!ORGANIZATION_ID_PATTERN.test(orgId)) {
    return reject('INVALID_ORGANIZATION', `organization ${JSON.stringify(orgId.slice(0, 140))} is not a valid id`);
  }
  if (!MACHINE_ID_PATTERN.test(machineId)) {
    return reject('INVALID_MACHINE_ID', `machine_id ${JSON.stringify(machineId.slice(0, 140))} is not a valid id`);
  }
  // The key decides the partition: a point keyed otherwise could overtake its machine's others.
  const expectedKey = `${orgId}/${machineId}`;
  const actualKey = key?.toString('utf8') ?? null;
  if (actualKey !== expectedKey) {
    return reject(
      'KEY_MISMATCH',
      `message key ${actualKey === null ? 'is missing' : JSON.stringify(actualKey.slice(0, 300))}; expected ${JSON.stringify(expectedKey)}`,
    );
  }
  if (!Number.isSafeInteger(point.timestamp) || point.timestamp < 0) {
    return reject('INVALID_TIMESTAMP', `timestamp ${String(point.timestamp)} is not epoch milliseconds >= 0`);
  }
  const hasValue = point.value !== null;
  const hasChannels = point.channels !== null;
  if (hasValue && hasChannels) return reject('VALUE_AND_CHANNELS', 'both value and channels are set; exactly one must be');
  if (!hasValue && !hasChannels) return reject('NO_READING', 'neither value nor channels is set');
  if (point.value !== null) {
    if (!isReading(point.value)) {
      return reject('INVALID_VALUE', `value ${String(point.value)} is not a finite number with |v| <= 1e100`);
    }
    return { ok: true, orgId, machineId, tsMs: point.timestamp, readings: [{ seriesId: machineId, value: point.value }] };
  }
  const channels = point.channels ?? [];
  if (channels.length === 0 || channels.length > MAX_CHANNELS) {
    return reject('INVALID_CHANNEL', `channels must hold 1..${MAX_CHANNELS} readings; got ${channels.length}`);
  }
  const seen = new Set<string>();
  const readings: Reading[] = [];
  for (const [index, channel] of channels.entries()) {
    if (!CHANNEL_NAME_PATTERN.test(channel.name)) {
      return reject('INVALID_CHANNEL', `channels[${index}].name ${JSON.stringify(channel.name.slice(0, 80))} is not a valid channel name`);
    }
    if (seen.has(channel.name)) return reject('INVALID_CHANNEL', `channel ${channel.name} appears twice`);
    seen.add(channel.name);
    if (!isReading(channel.value)) {
      return reject('INVALID_VALUE', `channels[${index}].value ${String(channel.value)} is not a finite number with |v| <= 1e100`);
    }
    const seriesId = channelSeriesId(machineId, channel.name);
    if (!MACHINE_ID_PATTERN.test(seriesId)) {
      return reject('INVALID_CHANNEL', `${seriesId.slice(0, 140)}: machine_id:channel is longer than a machine id may be`);
    }
    readings.push({ seriesId, value: channel.value });
  }
  return { ok: true, orgId, machineId, tsMs: point.timestamp, readings };
}

/** Decodes (any registered writer schema) and validates one message. Never throws for bad input. */
export function parseTelemetryMessage(codec: AvroCodec<TelemetryPoint>, message: IncomingMessage): ParsedTelemetry {
  let point: TelemetryPoint;
  try {
    point = codec.decode(message.value);
  } catch (error) {
    if (isStreamingError(error) && (DEAD_LETTER_REASONS as readonly string[]).includes(error.code)) {
      return reject(error.code as DeadLetterReason, error.message);
    }
    return reject('MESSAGE_BODY_CORRUPT', error instanceof Error ? error.message : String(error));
  }
  return validateTelemetryPoint(point, message.key);
}
