// Several points of one machine in one telemetry message (schemas/avro/telemetry-batch.avsc): what
// POST /v1/telemetry and the example producer send. A batch costs the broker, the consumer's fetch
// and the decoder one message instead of one per point; the worker judges its points exactly as
// it would judge them sent one by one.
import type { AvroCodec } from './codecs.js';
import type { TelemetryBatch } from './schemas.js';

/** Most points a TelemetryBatch may carry; the worker dead-letters a longer one (INVALID_BATCH). */
export const TELEMETRY_BATCH_MAX_POINTS = 10_000;
/**
 * Largest message the encoder writes when it can split (512 KiB): well under Kafka's default
 * `message.max.bytes` (1 MiB) and the consumers' per-partition fetch size. Points carrying many
 * channels make a batch this large long before TELEMETRY_BATCH_MAX_POINTS.
 */
export const TELEMETRY_BATCH_MAX_BYTES = 512 * 1024;

export interface TelemetryBatchLimits {
  /** Default TELEMETRY_BATCH_MAX_POINTS. */
  readonly maxPoints?: number;
  /** Default TELEMETRY_BATCH_MAX_BYTES. */
  readonly maxBytes?: number;
}

/**
 * Encodes one machine's points (ascending timestamps) as TelemetryBatch messages, in order: runs
 * of at most `maxPoints` points, a run halved until its message fits `maxBytes` (a single point
 * is written whatever its size). Every message repeats the organization, machine and tags.
 * Throws MESSAGE_INVALID (naming the field) when a value does not fit the schema; an empty batch
 * gives no message.
 */
export function encodeTelemetryBatches(
  codec: AvroCodec<TelemetryBatch>,
  batch: TelemetryBatch,
  limits: TelemetryBatchLimits = {},
): Buffer[] {
  const maxPoints = limits.maxPoints ?? TELEMETRY_BATCH_MAX_POINTS;
  const maxBytes = limits.maxBytes ?? TELEMETRY_BATCH_MAX_BYTES;
  if (!(Number.isSafeInteger(maxPoints) && maxPoints >= 1 && maxPoints <= TELEMETRY_BATCH_MAX_POINTS)) {
    throw new RangeError(`maxPoints must be an integer from 1 to ${TELEMETRY_BATCH_MAX_POINTS}; got ${maxPoints}`);
  }
  const out: Buffer[] = [];
  const write = (from: number, to: number): void => {
    const message = codec.encode({ ...batch, points: batch.points.slice(from, to) });
    if (message.length <= maxBytes || to - from === 1) {
      out.push(message);
      return;
    }
    const middle = from + Math.ceil((to - from) / 2);
    write(from, middle);
    write(middle, to);
  };
  for (let from = 0; from < batch.points.length; from += maxPoints) write(from, Math.min(batch.points.length, from + maxPoints));
  return out;
}
