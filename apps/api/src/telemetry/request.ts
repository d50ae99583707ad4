// The streaming routes' input after Fastify has validated it against ./schemas.ts: the POST
// /v1/telemetry body becomes a TelemetryBatch, the results query a time range and a page. Here are
// the rules a schema cannot state: timestamps parsed once, from 1970 and strictly ascending; at
// most TELEMETRY_MAX_POINTS points (configuration); a channel's series id within a machine id's
// length; the time range and the cursor. Failures are AppErrors: InvalidPoints for points, else
// InvalidArgument. Pure functions; the organization is never read from the body.
import { MACHINE_ID_MAX_LENGTH, CHANNEL_NAME_PATTERN, MAX_TELEMETRY_CHANNELS as MAX_CHANNELS } from '@adp/domain';
import type { TelemetryBatch, TelemetryReading } from '@adp/streaming';
import type { Static } from 'typebox';
import type { ParseTimestamp } from '../native/request.js';
import { invalidArgument, invalidPoints } from '../request-checks.js';
import type { ResultsQuery as ResultsQuerySchema, TelemetryRequest as TelemetryRequestSchema } from './schemas.js';

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

/** `POST /v1/telemetry`. `orgId` comes from the caller's key. */
export function parseTelemetryRequest(body: Static<typeof TelemetryRequestSchema>, orgId: string, maxPoints: number, parseTimestamp: ParseTimestamp): TelemetryRequest {
  const machineId = body.machine_id;
  const raw = body.points;
  if (raw.length > maxPoints) throw invalidPoints(`points must have 1 to ${maxPoints} items; it has ${raw.length}.`);
  const points = new Array<TelemetryReading>(raw.length);
  let previousMs = Number.NEGATIVE_INFINITY;
  for (let index = 0; index < raw.length; index++) {
    const point = raw[index]!;
    const timestampMs = parseTimestamp(point.timestamp);
    if (timestampMs === null || !Number.isSafeInteger(timestampMs)) {
      throw invalidPoints(`points[${index}].timestamp must be an ISO 8601 date-time such as 2024-01-01T00:00:00Z.`);
    }
    // Results are keyed by epoch milliseconds >= 0; the workers refuse earlier points.
    if (timestampMs < 0) throw invalidPoints(`points[${index}].timestamp must be 1970-01-01T00:00:00Z or later.`);
    if (!(timestampMs > previousMs)) {
      throw invalidPoints(`points[${index}].timestamp must be later than the point before it (ascending, no duplicates).`);
    }
    previousMs = timestampMs;
    if ('channels' in point) {
      const channels = Object.entries(point.channels).map(([name, value]) => {
        // Each channel is judged as the series `<machine_id>:<channel>`, itself a machine id (so it can have a baseline).
        if (machineId.length + 1 + name.length > MACHINE_ID_MAX_LENGTH) {
          throw invalidPoints(
            `points[${index}].channels.${name}: '<machine_id>:<channel>' must be at most ${MACHINE_ID_MAX_LENGTH} characters (each channel is judged as that series).`,
          );
        }
        return { name, value };
      });
      points[index] = { timestamp: timestampMs, value: null, channels };
    } else {
      points[index] = { timestamp: timestampMs, value: point.value, channels: null };
    }
  }
  return { machineId, batch: { organization: orgId, machine_id: machineId, points, tags: { ...body.tags } } };
}

export interface ResultsQuery {
  readonly fromMs: number | undefined;
  readonly toMs: number | undefined;
  readonly limit: number;
  readonly afterTsMs: number | undefined;
}

function timeBound(text: string | undefined, name: 'from' | 'to', parseTimestamp: ParseTimestamp): number | undefined {
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

/** `GET /v1/machines/{machine_id}/results?from=&to=&limit=&cursor=`, as its schema admits it. */
export function parseResultsQuery(
  query: Static<typeof ResultsQuerySchema>,
  parseTimestamp: ParseTimestamp,
): ResultsQuery {
  const fromMs = timeBound(query.from, 'from', parseTimestamp);
  const toMs = timeBound(query.to, 'to', parseTimestamp);
  // from == to is an empty range (from inclusive, to exclusive): an empty page, not an error.
  if (fromMs !== undefined && toMs !== undefined && fromMs > toMs) {
    throw invalidArgument("The 'from' query parameter must not be later than 'to' (from is inclusive, to exclusive).");
  }
  let afterTsMs: number | undefined;
  // Empty counts as absent, as for from and to: `cursor=${next ?? ''}` asks for the first page.
  if (query.cursor !== undefined && query.cursor !== '') {
    const decoded = decodeCursor(query.cursor);
    if (decoded === null) throw invalidArgument("The 'cursor' query parameter is not a cursor this API returned.");
    afterTsMs = decoded;
  }
  return { fromMs, toMs, limit: query.limit ?? RESULTS_DEFAULT_LIMIT, afterTsMs };
}
