// Avro for the Kafka topics: the `.avsc` files in schemas/avro/ loaded into avsc types, and
// messages in Avro single-object encoding (spec, "Single object encoding"):
//
//   C3 01 | 8-byte little-endian CRC-64-AVRO fingerprint of the writer's canonical schema | body
//
// so every message names the schema it was written with. A reader keeps a registry of the writer
// schemas it knows (the current `.avsc` files plus the retired versions in schemas/avro/history/)
// and resolves an older writer's body into its own schema with avsc's resolver, which is what lets
// a schema gain a field with a default while old messages stay readable.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import avro from 'avsc';
import { checkAvroBounds } from './bounds.js';
import { StreamingError } from '../errors.js';
import { crc64AvroLittleEndian } from './rabin.js';
import {
  ALERT_CANONICAL,
  DEAD_LETTER_CANONICAL,
  DETECTION_RESULT_CANONICAL,
  JOB_CHUNK_CANONICAL,
  TELEMETRY_BATCH_CANONICAL,
  TELEMETRY_POINT_CANONICAL,
  type Alert,
  type DeadLetter,
  type DetectionResult,
  type JobChunk,
  type TelemetryBatch,
  type TelemetryPoint,
} from './schemas.js';

type AvroType = avro.Type;
type AvroResolver = ReturnType<AvroType['createResolver']>;

/** schemas/avro/ of this repository. */
export const DEFAULT_AVRO_SCHEMA_DIR = fileURLToPath(new URL('../../../../schemas/avro/', import.meta.url));

/** The two marker bytes that open every single-object-encoded message. */
export const SINGLE_OBJECT_MARKER = Buffer.from([0xc3, 0x01]);
/** Marker plus fingerprint. */
export const SINGLE_OBJECT_HEADER_BYTES = 10;
/** A codec's encoding buffer at first, and the most it keeps (a larger message gets its own). */
const SCRATCH_START_BYTES = 4096;
const SCRATCH_KEPT_BYTES = 4 * 1024 * 1024;

/** The topics' records: the file each lives in and its canonical form as the TS side spells it. */
export const STREAMING_RECORDS = {
  telemetry: { file: 'telemetry.avsc', canonical: TELEMETRY_POINT_CANONICAL },
  telemetryBatch: { file: 'telemetry-batch.avsc', canonical: TELEMETRY_BATCH_CANONICAL },
  result: { file: 'result.avsc', canonical: DETECTION_RESULT_CANONICAL },
  deadLetter: { file: 'dead-letter.avsc', canonical: DEAD_LETTER_CANONICAL },
  jobChunk: { file: 'job-chunk.avsc', canonical: JOB_CHUNK_CANONICAL },
  alert: { file: 'alert.avsc', canonical: ALERT_CANONICAL },
} as const;

export type StreamingRecord = keyof typeof STREAMING_RECORDS;

interface StreamingRecordValues {
  telemetry: TelemetryPoint;
  telemetryBatch: TelemetryBatch;
  result: DetectionResult;
  deadLetter: DeadLetter;
  jobChunk: JobChunk;
  alert: Alert;
}

/** Builds an avsc type from a parsed schema; `source` names the file for the error. */
export function parseAvroSchema(schema: unknown, source: string): AvroType {
  try {
    return avro.Type.forSchema(schema as avro.Schema);
  } catch (cause) {
    throw new StreamingError('SCHEMA_INVALID', `${source} is not a valid Avro schema`, { schema: source }, { cause });
  }
}

/** Reads and parses one `.avsc` file. */
export function readAvroSchemaFile(path: string): AvroType {
  let json: unknown;
  try {
    json = JSON.parse(readFileSync(path, 'utf8'));
  } catch (cause) {
    throw new StreamingError('SCHEMA_INVALID', `${path} could not be read as JSON`, { schema: path }, { cause });
  }
  return parseAvroSchema(json, path);
}

/** The schema's Parsing Canonical Form (avsc's `schema()` without options produces it). */
export function canonicalSchema(type: AvroType): string {
  return JSON.stringify(type.schema());
}

/** CRC-64-AVRO of the canonical form: the 8 bytes a single-object message carries. */
export function schemaFingerprint(type: AvroType): Buffer {
  return crc64AvroLittleEndian(Buffer.from(canonicalSchema(type), 'utf8'));
}

/** Writer schemas by fingerprint (hex of the 8 bytes as they appear in the message). */
export class WriterSchemaRegistry {
  readonly #byFingerprint = new Map<string, AvroType>();

  /** Adds a writer schema; returns its fingerprint. Registering the same schema twice is a no-op. */
  register(type: AvroType): string {
    const fingerprint = schemaFingerprint(type).toString('hex');
    this.#byFingerprint.set(fingerprint, type);
    return fingerprint;
  }

  get(fingerprintHex: string): AvroType | undefined {
    return this.#byFingerprint.get(fingerprintHex);
  }

  fingerprints(): string[] {
    return [...this.#byFingerprint.keys()];
  }
}

/** Encodes and decodes one record type in single-object encoding. */
export interface AvroCodec<T> {
  /** The record's full name, e.g. `adp.streaming.TelemetryPoint`. */
  readonly schemaName: string;
  readonly type: AvroType;
  /** The fingerprint this codec writes, as in the message (8 bytes, little-endian). */
  readonly fingerprint: Buffer;
  readonly fingerprintHex: string;
  /** Header and body. Throws MESSAGE_INVALID (with the field path) when `value` does not fit. */
  encode(value: T): Buffer;
  /**
   * Reads a message written with any schema in the registry, resolved into this codec's schema.
   * Throws MESSAGE_NOT_SINGLE_OBJECT, UNKNOWN_SCHEMA_FINGERPRINT, SCHEMA_INCOMPATIBLE or
   * MESSAGE_BODY_CORRUPT; all of them mean the message goes to the dead-letter topic.
   */
  decode(message: Uint8Array): T;
  /** Whether the message opens with this codec's own header (marker and fingerprint). */
  writtenWithThis(message: Uint8Array): boolean;
}

/** The first field path at which `value` does not fit `type`, dotted (`channels.0.value`). */
function invalidPath(type: AvroType, value: unknown): string | undefined {
  let found: string | undefined;
  type.isValid(value, {
    errorHook: (path) => {
      found ??= path.join('.');
    },
  });
  return found;
}

function asBuffer(message: Uint8Array): Buffer {
  return Buffer.isBuffer(message) ? message : Buffer.from(message.buffer, message.byteOffset, message.byteLength);
}

/**
 * The writer fingerprint (hex) a single-object message names. Throws MESSAGE_NOT_SINGLE_OBJECT
 * when the bytes do not open with the marker and a whole fingerprint; `schemaName` is the record
 * being read, for the error.
 */
export function writerFingerprintOf(message: Uint8Array, schemaName: string): string {
  const bytes = asBuffer(message);
  if (bytes.length < SINGLE_OBJECT_HEADER_BYTES || bytes[0] !== 0xc3 || bytes[1] !== 0x01) {
    throw new StreamingError(
      'MESSAGE_NOT_SINGLE_OBJECT',
      `not an Avro single-object message (${bytes.length} bytes, starts ${bytes.subarray(0, 2).toString('hex')})`,
      { schema: schemaName },
    );
  }
  return bytes.subarray(2, SINGLE_OBJECT_HEADER_BYTES).toString('hex');
}

export function createAvroCodec<T>(reader: AvroType, writers: WriterSchemaRegistry): AvroCodec<T> {
  const schemaName = reader.name ?? reader.typeName;
  const fingerprint = schemaFingerprint(reader);
  const fingerprintHex = fingerprint.toString('hex');
  const header = Buffer.concat([SINGLE_OBJECT_MARKER, fingerprint]);
  // Messages are written here, header first, then copied out at their size: avsc's toBuffer
  // writes a value larger than its own small buffer twice (once to measure it).
  let scratch = Buffer.allocUnsafe(SCRATCH_START_BYTES);
  header.copy(scratch);
  // One resolver per older writer, built on first sight: building one walks both schemas.
  const resolvers = new Map<string, AvroResolver>();

  function resolverFor(writerHex: string): AvroResolver | undefined {
    if (writerHex === fingerprintHex) return undefined;
    const cached = resolvers.get(writerHex);
    if (cached) return cached;
    const writer = writers.get(writerHex);
    if (!writer) {
      throw new StreamingError(
        'UNKNOWN_SCHEMA_FINGERPRINT',
        `no known writer schema has fingerprint ${writerHex} (reading ${schemaName})`,
        { schema: schemaName, fingerprint: writerHex },
      );
    }
    let resolver: AvroResolver;
    try {
      resolver = reader.createResolver(writer);
    } catch (cause) {
      throw new StreamingError(
        'SCHEMA_INCOMPATIBLE',
        `${writer.name ?? writer.typeName} (${writerHex}) cannot be read as ${schemaName}`,
        { schema: schemaName, fingerprint: writerHex },
        { cause },
      );
    }
    resolvers.set(writerHex, resolver);
    return resolver;
  }

  function writtenWithThis(message: Uint8Array): boolean {
    if (message.length < SINGLE_OBJECT_HEADER_BYTES) return false;
    for (let i = 0; i < SINGLE_OBJECT_HEADER_BYTES; i++) if (message[i] !== header[i]) return false;
    return true;
  }

  return {
    schemaName,
    type: reader,
    fingerprint,
    fingerprintHex,
    encode(value: T): Buffer {
      try {
        let end = reader.encode(value, scratch, SINGLE_OBJECT_HEADER_BYTES);
        if (end < 0) {
          // Too small by -end bytes: a larger scratch kept for the messages to come, or an exact
          // buffer for a rare large one.
          const needed = scratch.length - end;
          if (needed > SCRATCH_KEPT_BYTES) {
            const out = Buffer.allocUnsafe(needed);
            header.copy(out);
            reader.encode(value, out, SINGLE_OBJECT_HEADER_BYTES);
            return out;
          }
          scratch = Buffer.allocUnsafe(Math.min(SCRATCH_KEPT_BYTES, Math.max(needed, 2 * scratch.length)));
          header.copy(scratch);
          end = reader.encode(value, scratch, SINGLE_OBJECT_HEADER_BYTES);
        }
        return Buffer.from(scratch.subarray(0, end));
      } catch (cause) {
        const path = invalidPath(reader, value);
        throw new StreamingError(
          'MESSAGE_INVALID',
          `value does not match ${schemaName}${path === undefined ? '' : ` at ${path || '(root)'}`}`,
          path === undefined ? { schema: schemaName } : { schema: schemaName, path },
          { cause },
        );
      }
    },
    writtenWithThis,
    decode(message: Uint8Array): T {
      const bytes = asBuffer(message);
      // The common case, a message of this very schema, without the fingerprint's hex string.
      const writerHex = writtenWithThis(bytes) ? fingerprintHex : writerFingerprintOf(bytes, schemaName);
      const resolver = resolverFor(writerHex);
      const body = bytes.subarray(SINGLE_OBJECT_HEADER_BYTES);
      try {
        // Counts and lengths checked against the bytes first: avsc would build whatever a block
        // count claims (./bounds.ts).
        checkAvroBounds(resolver ? writers.get(writerHex)! : reader, body);
        return (resolver ? reader.fromBuffer(body, resolver) : reader.fromBuffer(body)) as T;
      } catch (cause) {
        throw new StreamingError(
          'MESSAGE_BODY_CORRUPT',
          `body of a ${schemaName} message (writer ${writerHex}) does not decode: ${(cause as Error).message}`,
          { schema: schemaName, fingerprint: writerHex },
          { cause },
        );
      }
    },
  };
}

export interface StreamingCodecs {
  readonly telemetry: AvroCodec<TelemetryPoint>;
  /** Several points of one machine in one message, on the telemetry topic beside single points. */
  readonly telemetryBatch: AvroCodec<TelemetryBatch>;
  readonly result: AvroCodec<DetectionResult>;
  readonly deadLetter: AvroCodec<DeadLetter>;
  /** A run of points of one series of a detection job, on the jobs topic. */
  readonly jobChunk: AvroCodec<JobChunk>;
  /** Episodes opened and closed, on the alerts topic. */
  readonly alert: AvroCodec<Alert>;
  /** Every writer schema the codecs can read: the current ones and schemas/avro/history/. */
  readonly writers: WriterSchemaRegistry;
}

function avscFiles(dir: string): string[] {
  try {
    if (!statSync(dir).isDirectory()) return [];
  } catch {
    return [];
  }
  return readdirSync(dir)
    .filter((file) => file.endsWith('.avsc'))
    .sort()
    .map((file) => join(dir, file));
}

/**
 * Loads the topics' schemas from `schemaDir` (default: schemas/avro/) and builds their codecs.
 * Each current schema must have exactly the canonical form `src/avro/schemas.ts` derives the TS types
 * from, so the types cannot drift from the `.avsc` files. Every `.avsc` in `<schemaDir>/history/`
 * (retired versions, kept so messages written with them stay readable) is registered as a writer.
 */
export function loadStreamingCodecs(options: { schemaDir?: string } = {}): StreamingCodecs {
  const schemaDir = options.schemaDir ?? DEFAULT_AVRO_SCHEMA_DIR;
  const writers = new WriterSchemaRegistry();
  for (const path of avscFiles(join(schemaDir, 'history'))) writers.register(readAvroSchemaFile(path));

  function load<K extends StreamingRecord>(record: K): AvroCodec<StreamingRecordValues[K]> {
    const { file, canonical } = STREAMING_RECORDS[record];
    const path = join(schemaDir, file);
    const type = readAvroSchemaFile(path);
    if (canonicalSchema(type) !== JSON.stringify(canonical)) {
      throw new StreamingError(
        'SCHEMA_INVALID',
        `${path} does not match the canonical form in packages/streaming/src/avro/schemas.ts; update both together`,
        { schema: path },
      );
    }
    writers.register(type);
    return createAvroCodec<StreamingRecordValues[K]>(type, writers);
  }

  return {
    telemetry: load('telemetry'),
    telemetryBatch: load('telemetryBatch'),
    result: load('result'),
    deadLetter: load('deadLetter'),
    jobChunk: load('jobChunk'),
    alert: load('alert'),
    writers,
  };
}

/** A telemetry-topic message: one point, or several points of one machine. */
export type TelemetryMessage =
  | { readonly kind: 'point'; readonly point: TelemetryPoint }
  | { readonly kind: 'batch'; readonly batch: TelemetryBatch };

/**
 * Decodes a message of the telemetry topic, which carries TelemetryPoint and TelemetryBatch
 * messages side by side: the writer fingerprint says which record it is (any version of either
 * that the registry knows), and the body is read into that record's current schema. A message of
 * neither record, or of a fingerprint nobody knows, throws as the point codec does
 * (SCHEMA_INCOMPATIBLE, UNKNOWN_SCHEMA_FINGERPRINT, ...): the worker dead-letters it.
 */
export function decodeTelemetryMessage(
  codecs: Pick<StreamingCodecs, 'telemetry' | 'telemetryBatch' | 'writers'>,
  message: Uint8Array,
): TelemetryMessage {
  // Today's two schemas by their headers; any other writer by its fingerprint's registry entry.
  if (codecs.telemetryBatch.writtenWithThis(message)) return { kind: 'batch', batch: codecs.telemetryBatch.decode(message) };
  if (codecs.telemetry.writtenWithThis(message)) return { kind: 'point', point: codecs.telemetry.decode(message) };
  const writerHex = writerFingerprintOf(message, codecs.telemetry.schemaName);
  const writer = codecs.writers.get(writerHex);
  if (writer !== undefined && writer.name === codecs.telemetryBatch.schemaName) {
    return { kind: 'batch', batch: codecs.telemetryBatch.decode(message) };
  }
  return { kind: 'point', point: codecs.telemetry.decode(message) };
}
