// The record format of the durable in-process bus's segment files (./bus-log.ts): how one
// message is framed on disk and read back, apart from the files that hold the records.
//
// A record is framed as [u32 payload length][u32 CRC-32 of the payload][payload], big-endian; the
// payload is [u8 version=1][u64 offset][f64 append time ms][i32 key length, -1 = null][key]
// [u32 headers length][headers as JSON][value]. Decoding stops at the first short or damaged
// record and says where, so that the caller can tell a torn tail from damage before it.
import { crc32 } from 'node:zlib';

const FRAME_BYTES = 8;
const RECORD_VERSION = 1;
/** Larger than any message the bus takes; a length beyond it is damage, not a record. */
const MAX_RECORD_BYTES = 1 << 30;

/** One record as it is on disk. */
export interface LogRecord {
  readonly offset: number;
  readonly timestampMs: number;
  readonly key: Buffer | null;
  readonly headers: Readonly<Record<string, string>>;
  readonly value: Buffer;
}

export function encodeRecord(record: LogRecord): Buffer {
  const headers = Buffer.from(JSON.stringify(record.headers), 'utf8');
  const keyLength = record.key === null ? 0 : record.key.length;
  const payloadLength = 1 + 8 + 8 + 4 + keyLength + 4 + headers.length + record.value.length;
  const out = Buffer.allocUnsafe(FRAME_BYTES + payloadLength);
  let at = FRAME_BYTES;
  at = out.writeUInt8(RECORD_VERSION, at);
  at = out.writeBigUInt64BE(BigInt(record.offset), at);
  at = out.writeDoubleBE(record.timestampMs, at);
  at = out.writeInt32BE(record.key === null ? -1 : keyLength, at);
  if (record.key !== null) at += record.key.copy(out, at);
  at = out.writeUInt32BE(headers.length, at);
  at += headers.copy(out, at);
  record.value.copy(out, at);
  out.writeUInt32BE(payloadLength, 0);
  out.writeUInt32BE(crc32(out.subarray(FRAME_BYTES)), 4);
  return out;
}

export interface DecodedRecords {
  readonly records: LogRecord[];
  /** Bytes up to the end of the last whole record. */
  readonly validBytes: number;
  /** Why decoding stopped before the end of the buffer; null when it reached the end. */
  readonly damage: string | null;
}

/** Reads whole records from the start of `buffer`, stopping at the first short or damaged one. */
export function decodeRecords(buffer: Buffer): DecodedRecords {
  const records: LogRecord[] = [];
  let at = 0;
  const stop = (damage: string): DecodedRecords => ({ records, validBytes: at, damage });
  while (at < buffer.length) {
    if (buffer.length - at < FRAME_BYTES) return stop('a record frame is cut short');
    const length = buffer.readUInt32BE(at);
    if (length < 1 + 8 + 8 + 4 + 4 || length > MAX_RECORD_BYTES) return stop(`a record length of ${length} bytes is impossible`);
    if (buffer.length - at - FRAME_BYTES < length) return stop('a record is cut short');
    const payload = buffer.subarray(at + FRAME_BYTES, at + FRAME_BYTES + length);
    if (crc32(payload) !== buffer.readUInt32BE(at + 4)) return stop('a record does not match its checksum');
    const record = parsePayload(payload);
    if (record === null) return stop('a record that matches its checksum does not parse');
    records.push(record);
    at += FRAME_BYTES + length;
  }
  return { records, validBytes: at, damage: null };
}

function parsePayload(payload: Buffer): LogRecord | null {
  try {
    let at = 0;
    if (payload.readUInt8(at) !== RECORD_VERSION) return null;
    at += 1;
    const offset = Number(payload.readBigUInt64BE(at));
    at += 8;
    const timestampMs = payload.readDoubleBE(at);
    at += 8;
    const keyLength = payload.readInt32BE(at);
    at += 4;
    if (keyLength < -1 || at + Math.max(keyLength, 0) > payload.length) return null;
    const key = keyLength === -1 ? null : payload.subarray(at, at + keyLength);
    at += Math.max(keyLength, 0);
    const headersLength = payload.readUInt32BE(at);
    at += 4;
    if (at + headersLength > payload.length) return null;
    const headers = JSON.parse(payload.toString('utf8', at, at + headersLength)) as unknown;
    if (headers === null || typeof headers !== 'object' || Array.isArray(headers)) return null;
    at += headersLength;
    return { offset, timestampMs, key, headers: headers as Record<string, string>, value: payload.subarray(at) };
  } catch {
    return null;
  }
}
