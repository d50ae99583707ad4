// Decode and dead letters: a bus batch's messages become the readings of each series (and the
// points of each multi-channel machine), in arrival order; a message that fails its checks
// (telemetry.ts) becomes, whole, an Avro DeadLetter keyed like the original, and the batch goes on.
import type { IncomingMessage, OutgoingMessage, StreamingCodecs } from '@adp/streaming';
import type { ChannelPoint } from './machine-verdicts.js';
import { parseTelemetryMessage, type DeadLetterReason } from './telemetry.js';

/** The dead letter's `detail` is cut here: it explains, the original bytes travel beside it. */
const DETAIL_MAX_CHARS = 1000;

/** One series' readings of a batch, oldest first as they arrived. */
export interface PendingSeries {
  readonly orgId: string;
  readonly seriesId: string;
  readonly tsMs: number[];
  readonly values: number[];
}

/** A multi-channel machine's points of a batch, for its machine verdict (machine-verdicts.ts). */
export interface MachinePoints {
  readonly orgId: string;
  readonly machineId: string;
  readonly points: ChannelPoint[];
}

export interface DecodedBatch {
  /** Per `<org>/<series>`, in the order the series first appear. */
  readonly series: Map<string, PendingSeries>;
  /** Per `<org>/<machine>`, the machines whose points carry channels. */
  readonly machines: Map<string, MachinePoints>;
  readonly deadLetters: OutgoingMessage[];
  /** Dead letters per reason, for the log line. */
  readonly reasons: Map<DeadLetterReason, number>;
}

/** The dead letter of `message`: the original bytes, key and headers, why, and where it came from. */
export function deadLetterOf(
  codecs: Pick<StreamingCodecs, 'deadLetter'>,
  message: IncomingMessage,
  reason: DeadLetterReason,
  detail: string,
  failedAtMs: number,
): OutgoingMessage {
  return {
    key: message.key === null ? null : message.key.toString('utf8'),
    value: codecs.deadLetter.encode({
      original_value: message.value,
      original_key: message.key,
      reason,
      detail: detail.slice(0, DETAIL_MAX_CHARS),
      source_topic: message.topic,
      source_partition: message.partition,
      source_offset: Number(message.offset),
      failed_at: failedAtMs,
    }),
    headers: { ...message.headers },
  };
}

/** Decodes and checks each message; `now` stamps the dead letters. */
export function decodeBatch(codecs: StreamingCodecs, messages: readonly IncomingMessage[], now: () => number): DecodedBatch {
  const decoded: DecodedBatch = { series: new Map(), machines: new Map(), deadLetters: [], reasons: new Map() };
  for (const message of messages) {
    const parsed = parseTelemetryMessage(codecs, message);
    if (!parsed.ok) {
      decoded.deadLetters.push(deadLetterOf(codecs, message, parsed.reason, parsed.detail, now()));
      decoded.reasons.set(parsed.reason, (decoded.reasons.get(parsed.reason) ?? 0) + 1);
      continue;
    }
    for (const point of parsed.points) {
      const channelPrefix = `${parsed.machineId}:`;
      if (point.readings.some((reading) => reading.seriesId.startsWith(channelPrefix))) {
        const machineKey = `${parsed.orgId}/${parsed.machineId}`;
        let machine = decoded.machines.get(machineKey);
        if (!machine) {
          machine = { orgId: parsed.orgId, machineId: parsed.machineId, points: [] };
          decoded.machines.set(machineKey, machine);
        }
        machine.points.push({
          tsMs: point.tsMs,
          readings: new Map(point.readings.map((reading) => [reading.seriesId.slice(channelPrefix.length), reading.value])),
        });
      }
      for (const reading of point.readings) {
        const key = `${parsed.orgId}/${reading.seriesId}`;
        let pending = decoded.series.get(key);
        if (!pending) {
          pending = { orgId: parsed.orgId, seriesId: reading.seriesId, tsMs: [], values: [] };
          decoded.series.set(key, pending);
        }
        pending.tsMs.push(point.tsMs);
        pending.values.push(reading.value);
      }
    }
  }
  return decoded;
}
