// The streaming routes: POST /v1/telemetry queues a machine's points on the telemetry topic (the
// workers judge them), GET /v1/machines/{machine_id}/results reads the stored judgements. Errors
// use the app's coded shape `{"error":{"code","message"}}`. README.md in ../native documents both.
//
// A call's points travel as TelemetryBatch messages (schemas/avro/telemetry-batch.avsc): one per
// TELEMETRY_BATCH_MAX_POINTS points or 512 KiB, keyed by organization and machine like single
// points, so the broker and the workers handle one message where they would handle thousands.
//
// Acceptance and usage: a call's points are published first (a 202 needs them on the bus: with
// the embedded default, fsync'd to the log under DATA_DIR/bus; with Kafka, acknowledged by every
// in-sync replica), then its usage is recorded. A publish that fails answers 503 and leaves
// nothing published and nothing metered. A usage write that fails after the publish answers 503
// too, and the call's batch id (a SHA-256 of the organization and the encoded batch, so the same
// body gives the same id) is remembered: the client's retry of that body records the usage
// without publishing the points again (PendingUsage below). A retry that reaches another replica,
// or this one after a restart, publishes them again; the worker then skips them as replays
// (points at or before a series' newest judged timestamp) and the result store keeps one row per
// (organization, machine, timestamp), so a point still has one result. Usage therefore never
// counts points that were not accepted, and a 503 never leaves points behind that its retry
// duplicates.
//
// Tracing: an accepted POST /v1/telemetry is a SERVER span with a PRODUCER span under it, whose
// W3C context rides in every message's headers, so the worker's consume and insert spans join the
// same trace. Without the OpenTelemetry SDK (apps/api/src/instrumentation.ts) these are no-ops and
// the headers stay empty.
import { createHash } from 'node:crypto';
import { SpanKind } from '@opentelemetry/api';
import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { parseIsoTimestamp } from '@adp/detection';
import type { Store } from '@adp/store';
import {
  TOPICS,
  encodeTelemetryBatches,
  inSpan,
  loadStreamingCodecs,
  traceHeaders,
  type Bus,
  type OutgoingMessage,
  type ResultRow,
  type ResultStore,
} from '@adp/streaming';
import { lazyProducer } from '../bus-producer.js';
import { AppError, ERRORS } from '../errors.js';
import { pointVerdictBody } from '../point-verdict.js';
import { NativeError } from '../native/schemas.js';
import { parseMachineId } from '../native/request.js';
import { usageMeter } from '../tenancy/metering.js';
import { encodeCursor, parseResultsQuery, parseTelemetryRequest } from './request.js';
import {
  ResultsParams,
  ResultsQuery,
  ResultsResponse,
  TelemetryAccepted,
  TelemetryRequest,
  type ResultRowBody,
} from './schemas.js';

/** Usage label of POST /v1/telemetry (GET /v1/usage lists it). */
export const TELEMETRY_ENDPOINT = 'telemetry';

export interface TelemetryRoutesOptions {
  readonly store: Store;
  /** Where telemetry goes; absent: POST /v1/telemetry answers 503 (ingestion not configured). */
  readonly bus?: Pick<Bus, 'producer'>;
  /** Where results are read; absent: the results route answers 503. */
  readonly results?: ResultStore;
  /** TELEMETRY_MAX_POINTS. */
  readonly maxPoints: number;
  /** TELEMETRY_TOPIC. Default TOPICS.telemetry. */
  readonly topic?: string;
}

const TAGS = ['streaming'];

/** Batch ids published whose usage is still to be recorded, kept this long and at most this many. */
const PENDING_USAGE_TTL_MS = 60 * 60 * 1000;
const PENDING_USAGE_MAX = 10_000;

/**
 * The calls whose points are published but whose usage write failed, by batch id: their retry
 * records the usage only. Bounded (oldest dropped first) and per process; a dropped or unknown id
 * only means the retry publishes again, which the worker's replay rule absorbs.
 */
export class PendingUsage {
  private readonly entries = new Map<string, number>();

  constructor(
    private readonly now: () => number = Date.now,
    private readonly max = PENDING_USAGE_MAX,
    private readonly ttlMs = PENDING_USAGE_TTL_MS,
  ) {}

  add(batchId: string): void {
    this.entries.delete(batchId);
    this.entries.set(batchId, this.now() + this.ttlMs);
    while (this.entries.size > this.max) this.entries.delete(this.entries.keys().next().value!);
  }

  /** Whether `batchId` was pending (and not expired); it is pending no more (a failed usage write adds it again). */
  take(batchId: string): boolean {
    const expires = this.entries.get(batchId);
    this.entries.delete(batchId);
    return expires !== undefined && expires > this.now();
  }

  get size(): number {
    return this.entries.size;
  }
}

/** The id of a call's batch: the same organization and body give the same id. */
export function telemetryBatchId(orgId: string, values: readonly Buffer[]): string {
  const hash = createHash('sha256').update(orgId).update('\u0000');
  for (const value of values) hash.update(String(value.length)).update(':').update(value);
  return hash.digest('hex');
}
const ERROR_RESPONSES = { 400: NativeError, 404: NativeError, 413: NativeError, 415: NativeError, 503: NativeError } as const;

function orgOf(request: FastifyRequest): string {
  // `auth` is null only if a route forgot to require a key: a bug, not a client error.
  const orgId = (request.auth as typeof request.auth | null)?.orgId;
  if (!orgId) throw new AppError(ERRORS.InternalError, 'Streaming route ran without an authenticated caller');
  return orgId;
}

function rowBody(row: ResultRow): ResultRowBody {
  return {
    timestamp: new Date(row.tsMs).toISOString(),
    ...pointVerdictBody(row),
    energy: row.energy,
    z_score: row.zScore,
    regime: row.regime,
    model_version: row.modelVersion,
  };
}

export const telemetryRoutes: FastifyPluginAsync<TelemetryRoutesOptions> = async (fastify, options) => {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const { store, bus, results } = options;
  const usage = usageMeter(store);
  const codecs = loadStreamingCodecs();
  // Bodies and queries are checked by ./request.ts (coded errors, fixed order).
  app.setValidatorCompiler(() => () => true);

  const pendingUsage = new PendingUsage();
  const producerOf = lazyProducer(app);

  app.post(
    '/v1/telemetry',
    {
      schema: {
        tags: TAGS,
        operationId: 'sendTelemetry',
        summary: "Queue a machine's points for streaming detection; results appear under /v1/machines/{machine_id}/results.",
        body: TelemetryRequest,
        response: { 202: TelemetryAccepted, ...ERROR_RESPONSES },
      },
    },
    async (request, reply) => {
      const orgId = orgOf(request);
      const parsed = parseTelemetryRequest(request.body, orgId, options.maxPoints, parseIsoTimestamp);
      if (!bus) throw new AppError(ERRORS.ServiceUnavailable, 'Telemetry ingestion is not configured on this server.');
      const topic = options.topic ?? TOPICS.telemetry;
      const key = `${orgId}/${parsed.machineId}`;
      const pointCount = parsed.batch.points.length;
      const values = encodeTelemetryBatches(codecs.telemetryBatch, parsed.batch);
      const batchId = telemetryBatchId(orgId, values);
      // Publishes the call's messages; a failure is a 503 that leaves nothing published.
      const publish = async (): Promise<void> => {
        try {
          const opened = await producerOf(bus);
          await inSpan(
            `${topic} publish`,
            {
              'messaging.operation.type': 'send',
              'messaging.destination.name': topic,
              'messaging.batch.message_count': values.length,
              'adp.points': pointCount,
            },
            async () => {
              // Inside the PRODUCER span: its context is what the headers carry.
              const headers = traceHeaders();
              const messages: OutgoingMessage[] = values.map((value) => ({ key, value, headers }));
              await opened.send(topic, messages);
            },
            undefined,
            SpanKind.PRODUCER,
          );
        } catch (cause) {
          request.log.error({ err: cause, orgId, machineId: parsed.machineId, points: pointCount }, 'telemetry could not be queued');
          throw new AppError(
            ERRORS.ServiceUnavailable,
            'The telemetry could not be queued; retry the request (points are stored once per timestamp, so a retry is safe).',
            { cause },
          );
        }
      };
      const accepted = await inSpan(
        'POST /v1/telemetry',
        { 'http.request.method': 'POST', 'http.route': '/v1/telemetry', 'adp.points': pointCount },
        async () => {
          // A retry of a call whose points were published but whose usage was not recorded
          // publishes nothing again. Taken, not just read: of two identical retries at once, the
          // second publishes (the worker's replay rule absorbs it) rather than meter twice.
          if (!pendingUsage.take(batchId)) await publish();
          try {
            await usage.count(orgId, request.auth.keyKind, TELEMETRY_ENDPOINT, pointCount);
          } catch (cause) {
            pendingUsage.add(batchId);
            request.log.error(
              { err: cause, orgId, machineId: parsed.machineId, points: pointCount, batchId },
              'telemetry queued but its usage could not be recorded; a retry of the same body records it without queuing again',
            );
            throw new AppError(
              ERRORS.ServiceUnavailable,
              'The points were queued but their usage could not be recorded; retry the same request (it records the usage without queuing the points again).',
              { cause },
            );
          }
          return pointCount;
        },
        undefined,
        SpanKind.SERVER,
      );
      return reply.code(202).send({ accepted, machine_id: parsed.machineId });
    },
  );

  app.get(
    '/v1/machines/:machine_id/results',
    {
      schema: {
        tags: TAGS,
        operationId: 'machineResults',
        summary: "A machine's stored per-point results, ascending by timestamp, paged.",
        params: ResultsParams,
        querystring: ResultsQuery,
        response: { 200: ResultsResponse, ...ERROR_RESPONSES },
      },
    },
    async (request) => {
      const orgId = orgOf(request);
      const machineId = parseMachineId((request.params as { machine_id?: unknown }).machine_id, 'machine id in the path');
      const query = parseResultsQuery(request.query, parseIsoTimestamp);
      if (!results) throw new AppError(ERRORS.ServiceUnavailable, 'The results store is not configured on this server.');
      // One row more than the page tells whether another page follows.
      const rows = await results
        .query({
          orgId,
          machineId,
          limit: query.limit + 1,
          ...(query.fromMs !== undefined ? { fromMs: query.fromMs } : {}),
          ...(query.toMs !== undefined ? { toMs: query.toMs } : {}),
          ...(query.afterTsMs !== undefined ? { afterTsMs: query.afterTsMs } : {}),
        })
        .catch((cause: unknown) => {
          throw new AppError(ERRORS.ServiceUnavailable, 'The results store cannot be reached right now. Retry shortly.', { cause });
        });
      if (rows.length === 0 && !(await machineExists(orgId, machineId))) {
        throw new AppError(ERRORS.MachineNotFound, `Machine '${machineId}' not found.`);
      }
      const page = rows.slice(0, query.limit);
      const last = page[page.length - 1];
      return {
        machine_id: machineId,
        results: page.map(rowBody),
        next_cursor: rows.length > query.limit && last ? encodeCursor(last.tsMs) : null,
      };
    },
  );

  /** Known to the platform store (baseline, detections) or with stored results. */
  async function machineExists(orgId: string, machineId: string): Promise<boolean> {
    if ((await store.machineStatus(orgId, machineId)) !== null) return true;
    if (!results) return false;
    const stored = await results.machines(orgId).catch((cause: unknown) => {
      throw new AppError(ERRORS.ServiceUnavailable, 'The results store cannot be reached right now. Retry shortly.', { cause });
    });
    return stored.some((machine) => machine.machineId === machineId);
  }
};
