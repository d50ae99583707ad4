// Validation of the streaming routes' input: the POST /v1/telemetry body and the results query.
// Every failure is an AppError with a registry code, checked in a fixed order: the body's shape,
// machine_id (InvalidMachineId), tags (InvalidArgument), then points (InvalidPoints), first bad
// point wins. Pure functions; the organization is never read from the body.
import { CHANNEL_NAME_PATTERN, CHANNEL_NAME_RULE, MACHINE_ID_MAX_LENGTH, MAX_TELEMETRY_CHANNELS as MAX_CHANNELS } from '@adp/domain';
import type { ChannelValue, TelemetryBatch, TelemetryReading } from '@adp/streaming';
import { AppError, ERRORS } from '../errors.js';
import { parseMachineId, type ParseTimestamp } from '../native/request.js';
import { MAX_VALUE_MAGNITUDE } from '../vendor/request.js';
import { type JsonObject, invalidArgument, invalidPoints, isJsonObject } from '../request-checks.js';

export const MAX_TAGS = 32;
export const MAX_TAG_KEY_LENGTH = 64;
export const MAX_TAG_VALUE_LENGTH = 256;
export { CHANNEL_NAME_PATTERN, MAX_CHANNELS };

export const RESULTS_DEFAULT_LIMIT = 1000;
export const RESULTS_MAX_LIMIT = 10_000;

export interface TelemetryRequest {
  readonly machineId: string;
  /** Ready for the Avro codec: the caller's organization, the tags, the points in ascending order. */
  readonly batch: TelemetryBatch;
}

function isReading(value: unknown): value is number {
  return typeof value === 'number' && Number.isFinite(value) && Math.abs(value) <= MAX_VALUE_MAGNITUDE;
}

function parseTags(value: unknown): Record<string, string> {
  if (value === undefined || value === null) return {};
  if (!isJsonObject(value)) throw invalidArgument("The 'tags' field must be an object of string values.");
  const entries = Object.entries(value);
  if (entries.length > MAX_TAGS) throw invalidArgument(`The 'tags' field takes at most ${MAX_TAGS} tags; got ${entries.length}.`);
  const tags: Record<string, string> = {};
  for (const [key, tag] of entries) {
    if (key.length === 0 || key.length > MAX_TAG_KEY_LENGTH) {
      throw invalidArgument(`Tag names must be 1 to ${MAX_TAG_KEY_LENGTH} characters.`);
    }
    if (typeof tag !== 'string' || tag.length > MAX_TAG_VALUE_LENGTH) {
      throw invalidArgument(`The tag '${key.slice(0, MAX_TAG_KEY_LENGTH)}' must be a string of at most ${MAX_TAG_VALUE_LENGTH} characters.`);
    }
    tags[key] = tag;
  }
  return tags;
}

function parseChannels(value: unknown, index: number, machineId: string): ChannelValue[] {
  if (!isJsonObject(value)) throw invalidPoints(`points[${index}].channels must be an object of channel names to numbers.`);
  const entries = Object.entries(value);
  if (entries.length === 0 || entries.length > MAX_CHANNELS) {
    throw invalidPoints(`points[${index}].channels must have 1 to ${MAX_CHANNELS} channels; got ${entries.length}.`);
  }
  return entries.map(([name, reading]) => {
    if (!CHANNEL_NAME_PATTERN.test(name)) {
      throw invalidPoints(`points[${index}].channels has a channel name that is not ${CHANNEL_NAME_RULE}.`);
    }
    // Each channel is judged as the series `<machine_id>:<channel>`, itself a machine id (so it can have a baseline).
    if (machineId.length + 1 + name.length > MACHINE_ID_MAX_LENGTH) {
      throw invalidPoints(
        `points[${index}].channels.${name}: '<machine_id>:<channel>' must be at most ${MACHINE_ID_MAX_LENGTH} characters (each channel is judged as that series).`,
      );
    }
    if (!isReading(reading)) {
      throw invalidPoints(`points[${index}].channels.${name} must be a finite number with |value| <= 1e100.`);
    }
    return { name, value: reading };
  });
}

/**
 * `POST /v1/telemetry`. `orgId` comes from the caller's key. Unknown fields are ignored, at the
 * top level and in points, like the rest of the API.
 */
export function parseTelemetryRequest(
  body: unknown,
  orgId: string,
  maxPoints: number,
  parseTimestamp: ParseTimestamp,
): TelemetryRequest {
  if (!isJsonObject(body)) throw invalidArgument('The request body must be a JSON object.');
  const machineId = parseMachineId(body['machine_id'], "'machine_id' field");
  // ':' joins a machine to its channel in series ids: machine `a:b` would be machine `a`'s channel `b`.
  if (machineId.includes(':')) {
    throw new AppError(
      ERRORS.InvalidMachineId,
      "The 'machine_id' field of telemetry must not contain ':' (it separates a machine from its channels: '<machine_id>:<channel>').",
    );
  }
  const tags = parseTags(body['tags']);
  const raw = body['points'];
  if (!Array.isArray(raw)) throw invalidPoints(`The 'points' field is required: an array of 1 to ${maxPoints} points.`);
  if (raw.length === 0 || raw.length > maxPoints) {
    throw invalidPoints(`The 'points' field must have 1 to ${maxPoints} points; got ${raw.length}.`);
  }
  const points = new Array<TelemetryReading>(raw.length);
  let previousMs = Number.NEGATIVE_INFINITY;
  for (let index = 0; index < raw.length; index++) {
    const point: unknown = raw[index];
    if (!isJsonObject(point)) throw invalidPoints(`points[${index}] must be an object with 'timestamp' and 'value' or 'channels'.`);
    const timestamp = point['timestamp'];
    const timestampMs = typeof timestamp === 'string' ? parseTimestamp(timestamp) : null;
    if (timestampMs === null || !Number.isSafeInteger(timestampMs)) {
      throw invalidPoints(`points[${index}].timestamp must be an ISO 8601 date-time such as 2024-01-01T00:00:00Z.`);
    }
    // Results are keyed by epoch milliseconds >= 0; the workers refuse earlier points.
    if (timestampMs < 0) throw invalidPoints(`points[${index}].timestamp must be 1970-01-01T00:00:00Z or later.`);
    if (!(timestampMs > previousMs)) {
      throw invalidPoints(`points[${index}].timestamp must be later than the point before it (ascending, no duplicates).`);
    }
    previousMs = timestampMs;
    const value = point['value'] ?? undefined;
    const channels = point['channels'] ?? undefined;
    if ((value === undefined) === (channels === undefined)) {
      throw invalidPoints(`points[${index}] must have exactly one of 'value' (a number) and 'channels' (an object).`);
    }
    if (value !== undefined && !isReading(value)) {
      throw invalidPoints(`points[${index}].value must be a finite number with |value| <= 1e100.`);
    }
    points[index] = {
      timestamp: timestampMs,
      value: value === undefined ? null : (value as number),
      channels: channels === undefined ? null : parseChannels(channels, index, machineId),
    };
  }
  return { machineId, batch: { organization: orgId, machine_id: machineId, points, tags } };
}

export interface ResultsQuery {
  readonly fromMs: number | undefined;
  readonly toMs: number | undefined;
  readonly limit: number;
  readonly afterTsMs: number | undefined;
}

function single(query: JsonObject, name: string): string | undefined {
  const value = query[name];
  if (value === undefined) return undefined;
  if (typeof value !== 'string') throw invalidArgument(`The '${name}' query parameter must be given once.`);
  return value;
}

function timeBound(query: JsonObject, name: 'from' | 'to', parseTimestamp: ParseTimestamp): number | undefined {
  const text = single(query, name);
  if (text === undefined || text === '') return undefined;
  const ms = parseTimestamp(text);
  if (ms === null || !Number.isSafeInteger(ms)) {
    throw invalidArgument(`The '${name}' query parameter must be an ISO 8601 date-time such as 2024-01-01T00:00:00Z.`);
  }
  // Stored results start at 1970 (epoch milliseconds >= 0), like the points they judge.
  if (ms < 0) throw invalidArgument(`The '${name}' query parameter must be 1970-01-01T00:00:00Z or later.`);
  return ms;
}

/** Cursor tokens: opaque to clients; inside, the version and the last row's timestamp. */
const CURSOR_PREFIX = 'r1.';

export function encodeCursor(lastTsMs: number): string {
  return Buffer.from(`${CURSOR_PREFIX}${lastTsMs}`, 'utf8').toString('base64url');
}

export function decodeCursor(token: string): number | null {
  if (!/^[A-Za-z0-9_-]{1,64}$/.test(token)) return null;
  const text = Buffer.from(token, 'base64url').toString('utf8');
  // Only timestamps a page can end on: stored results start at epoch 0.
  const match = /^r1\.(\d{1,16})$/.exec(text);
  if (!match) return null;
  const value = Number(match[1]);
  return Number.isSafeInteger(value) ? value : null;
}

/** `GET /v1/machines/{machine_id}/results?from=&to=&limit=&cursor=`. */
export function parseResultsQuery(query: unknown, parseTimestamp: ParseTimestamp): ResultsQuery {
  const object = isJsonObject(query) ? query : {};
  const fromMs = timeBound(object, 'from', parseTimestamp);
  const toMs = timeBound(object, 'to', parseTimestamp);
  // from == to is an empty range (from inclusive, to exclusive): an empty page, not an error.
  if (fromMs !== undefined && toMs !== undefined && fromMs > toMs) {
    throw invalidArgument("The 'from' query parameter must not be later than 'to' (from is inclusive, to exclusive).");
  }
  const limitText = single(object, 'limit');
  let limit = RESULTS_DEFAULT_LIMIT;
  if (limitText !== undefined) {
    limit = /^\d{1,6}$/.test(limitText) ? Number(limitText) : Number.NaN;
    if (!(limit >= 1 && limit <= RESULTS_MAX_LIMIT)) {
      throw invalidArgument(`The 'limit' query parameter must be an integer from 1 to ${RESULTS_MAX_LIMIT}.`);
    }
  }
  const cursorText = single(object, 'cursor');
  let afterTsMs: number | undefined;
  // Empty counts as absent, as for from and to: `cursor=${next ?? ''}` asks for the first page.
  if (cursorText !== undefined && cursorText !== '') {
    const decoded = decodeCursor(cursorText);
    if (decoded === null) throw invalidArgument("The 'cursor' query parameter is not a cursor this API returned.");
    afterTsMs = decoded;
  }
  return { fromMs, toMs, limit, afterTsMs };
}
