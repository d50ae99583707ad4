// Decoding and checking one telemetry message: a TelemetryPoint or a TelemetryBatch (several
// points of one machine). Pure: bytes in, points or a dead-letter reason out. A message that fails
// here is poison (retrying cannot fix it): the worker parks it, whole, on the dead-letter topic
// with the reason and goes on with the partition. A batch is checked point by point with the same
// rules as single points, so it is judged exactly as its points sent one per message would be.
import {
  TELEMETRY_BATCH_MAX_POINTS,
  channelSeriesId as seriesOfChannel,
  decodeTelemetryMessage,
  isStreamingError,
  type ChannelValue,
  type IncomingMessage,
  type StreamingCodecs,
  type TelemetryBatch,
  type TelemetryPoint,
} from '@adp/streaming';
import {
  CHANNEL_NAME_PATTERN,
  MACHINE_ID_PATTERN,
  MAX_TELEMETRY_CHANNELS as MAX_CHANNELS,
  MAX_VALUE_MAGNITUDE,
  TELEMETRY_MACHINE_ID_PATTERN,
} from '@adp/domain';

// Series ids (MACHINE_ID_PATTERN: a machine id or `<machine_id>:<channel>`), the machine id of a
// telemetry message (TELEMETRY_MACHINE_ID_PATTERN: no ':'), channel names and limits are the
// API's, from @adp/domain. Organization ids (the store's `org_default` and UUIDs) follow the
// machine-id rule too: nothing that could break the `<org>/<machine>` key.
const ORGANIZATION_ID_PATTERN = MACHINE_ID_PATTERN;
/** Most points in one TelemetryBatch message (schemas/avro/telemetry-batch.avsc). */
export const MAX_BATCH_POINTS = TELEMETRY_BATCH_MAX_POINTS;

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
  'INVALID_BATCH',
  'POINTS_OUT_OF_ORDER',
] as const;
export type DeadLetterReason = (typeof DEAD_LETTER_REASONS)[number];

/** One reading of one series: a single-value machine's, or one channel of a multi-channel machine. */
export interface Reading {
  /** The machine id, or `<machine_id>:<channel>` for a channel (each channel is its own series). */
  readonly seriesId: string;
  readonly value: number;
}

/** One point of a message: its time and the readings of its series. */
export interface ParsedPoint {
  readonly tsMs: number;
  readonly readings: readonly Reading[];
}

export interface Rejection {
  readonly ok: false;
  readonly reason: DeadLetterReason;
  readonly detail: string;
}

export type ParsedTelemetry =
  | {
      readonly ok: true;
      readonly orgId: string;
      readonly machineId: string;
      /** One for a TelemetryPoint; a batch's, in ascending timestamp order. */
      readonly points: readonly ParsedPoint[];
    }
  | Rejection;

function reject(reason: DeadLetterReason, detail: string): Rejection {
  return { ok: false, reason, detail };
}

function isReading(value: unknown): value is number {
  return typeof value === 'number' && Number.isFinite(value) && Math.abs(value) <= MAX_VALUE_MAGNITUDE;
}

/** The series id of a channel: `<machine_id>:<channel>`, itself a valid series id (so it can have a baseline). */
export function channelSeriesId(machineId: string, channel: string): string {
  return seriesOfChannel(machineId, channel);
}

/** The organization, the machine and the key they must be sent with; null when all is well. */
function checkIdentity(orgId: string, machineId: string, key: Buffer | null): Rejection | null {
  if (!ORGANIZATION_ID_PATTERN.test(orgId)) {
    return reject('INVALID_ORGANIZATION', `organization ${JSON.stringify(orgId.slice(0, 140))} is not a valid id`);
  }
  if (!TELEMETRY_MACHINE_ID_PATTERN.test(machineId)) {
    const colon = MACHINE_ID_PATTERN.test(machineId) ? " (':' separates a machine from its channels)" : '';
    return reject('INVALID_MACHINE_ID', `machine_id ${JSON.stringify(machineId.slice(0, 140))} is not a valid id${colon}`);
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
  return null;
}

/**
 * One point's timestamp and readings. `at` prefixes the field names in the detail (`points[3].`
 * in a batch, nothing for a single point).
 */
function checkPoint(
  machineId: string,
  point: { readonly timestamp: number; readonly value: number | null; readonly channels: readonly ChannelValue[] | null },
  at: string,
): ParsedPoint | Rejection {
  if (!Number.isSafeInteger(point.timestamp) || point.timestamp < 0) {
    return reject('INVALID_TIMESTAMP', `${at}timestamp ${String(point.timestamp)} is not epoch milliseconds >= 0`);
  }
  const hasValue = point.value !== null;
  const hasChannels = point.channels !== null;
  if (hasValue && hasChannels) return reject('VALUE_AND_CHANNELS', `${at}value and ${at}channels are both set; exactly one must be`);
  if (!hasValue && !hasChannels) return reject('NO_READING', `neither ${at}value nor ${at}channels is set`);
  if (point.value !== null) {
    if (!isReading(point.value)) {
      return reject('INVALID_VALUE', `${at}value ${String(point.value)} is not a finite number with |v| <= 1e100`);
    }
    return { tsMs: point.timestamp, readings: [{ seriesId: machineId, value: point.value }] };
  }
  const channels = point.channels ?? [];
  if (channels.length === 0 || channels.length > MAX_CHANNELS) {
    return reject('INVALID_CHANNEL', `${at}channels must hold 1..${MAX_CHANNELS} readings; got ${channels.length}`);
  }
  const seen = new Set<string>();
  const readings: Reading[] = [];
  for (const [index, channel] of channels.entries()) {
    if (!CHANNEL_NAME_PATTERN.test(channel.name)) {
      return reject('INVALID_CHANNEL', `${at}channels[${index}].name ${JSON.stringify(channel.name.slice(0, 80))} is not a valid channel name`);
    }
    if (seen.has(channel.name)) return reject('INVALID_CHANNEL', `${at}channels: channel ${channel.name} appears twice`);
    seen.add(channel.name);
    if (!isReading(channel.value)) {
      return reject('INVALID_VALUE', `${at}channels[${index}].value ${String(channel.value)} is not a finite number with |v| <= 1e100`);
    }
    const seriesId = channelSeriesId(machineId, channel.name);
    if (!MACHINE_ID_PATTERN.test(seriesId)) {
      return reject('INVALID_CHANNEL', `${seriesId.slice(0, 140)}: machine_id:channel is longer than a machine id may be`);
    }
    readings.push({ seriesId, value: channel.value });
  }
  return { tsMs: point.timestamp, readings };
}

/** Checks a decoded point and the message key; returns its readings or why it is poison. */
export function validateTelemetryPoint(point: TelemetryPoint, key: Buffer | null): ParsedTelemetry {
  const identity = checkIdentity(point.organization, point.machine_id, key);
  if (identity) return identity;
  const parsed = checkPoint(point.machine_id, point, '');
  if ('ok' in parsed) return parsed;
  return { ok: true, orgId: point.organization, machineId: point.machine_id, points: [parsed] };
}

/**
 * Checks a decoded batch and the message key: 1 to MAX_BATCH_POINTS points in strictly ascending
 * timestamp order, each valid as a single point would be. Any fault rejects the whole message
 * (the dead letter keeps all of it; nothing of a bad batch is judged).
 */
export function validateTelemetryBatch(batch: TelemetryBatch, key: Buffer | null): ParsedTelemetry {
  const identity = checkIdentity(batch.organization, batch.machine_id, key);
  if (identity) return identity;
  const count = batch.points.length;
  if (count === 0 || count > MAX_BATCH_POINTS) {
    return reject('INVALID_BATCH', `a batch holds 1..${MAX_BATCH_POINTS} points; got ${count}`);
  }
  const points: ParsedPoint[] = [];
  let previous = -1;
  for (const [index, point] of batch.points.entries()) {
    const parsed = checkPoint(batch.machine_id, point, `points[${index}].`);
    if ('ok' in parsed) return parsed;
    if (parsed.tsMs <= previous) {
      return reject(
        'POINTS_OUT_OF_ORDER',
        `points[${index}].timestamp ${parsed.tsMs} is not after points[${index - 1}].timestamp ${previous}; a batch's timestamps must increase`,
      );
    }
    previous = parsed.tsMs;
    points.push(parsed);
  }
  return { ok: true, orgId: batch.organization, machineId: batch.machine_id, points };
}

/**
 * Decodes (a TelemetryPoint or a TelemetryBatch, any registered writer schema) and validates one
 * message. Never throws for bad input.
 */
export function parseTelemetryMessage(
  codecs: Pick<StreamingCodecs, 'telemetry' | 'telemetryBatch' | 'writers'>,
  message: IncomingMessage,
): ParsedTelemetry {
  let decoded: ReturnType<typeof decodeTelemetryMessage>;
  try {
    decoded = decodeTelemetryMessage(codecs, message.value);
  } catch (error) {
    if (isStreamingError(error) && (DEAD_LETTER_REASONS as readonly string[]).includes(error.code)) {
      return reject(error.code as DeadLetterReason, error.message);
    }
    return reject('MESSAGE_BODY_CORRUPT', error instanceof Error ? error.message : String(error));
  }
  return decoded.kind === 'batch'
    ? validateTelemetryBatch(decoded.batch, message.key)
    : validateTelemetryPoint(decoded.point, message.key);
}
