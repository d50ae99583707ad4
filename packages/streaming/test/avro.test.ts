// Single-object encoding of the topics' records: golden messages committed under fixtures/, schema
// evolution through the writer registry, and the typed errors a worker turns into dead letters.
//
// A golden fixture is written once and never regenerated: `hex` is the exact message, `value` what
// it decodes to (bytes as {"$bytes": hex}). When a schema changes, its old fixtures must still
// decode (keep the old schema in schemas/avro/history/) and a new fixture is added for the new one.
import { cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { StreamingError, decodeTelemetryMessage, loadStreamingCodecs, type TelemetryBatch, type TelemetryPoint } from '../src/index.js';
import { DEFAULT_AVRO_SCHEMA_DIR, WriterSchemaRegistry, createAvroCodec, parseAvroSchema, readAvroSchemaFile, type StreamingRecord } from '../src/avro/codecs.js';

interface GoldenFixture {
  file: string;
  record: StreamingRecord;
  schema: string;
  fingerprint: string;
  value: unknown;
  hex: string;
}

const FIXTURES_DIR = new URL('./fixtures/', import.meta.url);

function reviveBytes(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(reviveBytes);
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value);
    const [only] = entries;
    if (entries.length === 1 && only?.[0] === '$bytes' && typeof only[1] === 'string') return Buffer.from(only[1], 'hex');
    return Object.fromEntries(entries.map(([key, inner]) => [key, reviveBytes(inner)]));
  }
  return value;
}

const golden: GoldenFixture[] = readdirSync(FIXTURES_DIR)
  .filter((file) => file.endsWith('.json') && !file.startsWith('avro-spec'))
  .sort()
  .map((file) => ({ file, ...(JSON.parse(readFileSync(new URL(file, FIXTURES_DIR), 'utf8')) as Omit<GoldenFixture, 'file'>) }));

const codecs = loadStreamingCodecs();

function thrown(run: () => unknown): StreamingError {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(StreamingError);
    return error as StreamingError;
  }
  throw new Error('expected a StreamingError, nothing was thrown');
}

function fixture(file: string): GoldenFixture {
  const found = golden.find((candidate) => candidate.file === file);
  if (!found) throw new Error(`missing fixture ${file}`);
  return found;
}

describe('golden messages', () => {
  it.each(golden)('$file decodes to its value', ({ record, hex, value, schema }) => {
    const codec = codecs[record];
    expect(codec.schemaName).toBe(schema);
    expect(codec.decode(Buffer.from(hex, 'hex'))).toEqual(reviveBytes(value));
  });

  it.each(golden.filter((entry) => entry.fingerprint === codecs[entry.record].fingerprintHex))(
    '$file is exactly what the current schema writes',
    ({ record, hex, value }) => {
      const codec = codecs[record] as { encode(value: unknown): Buffer };
      expect(codec.encode(reviveBytes(value)).toString('hex')).toBe(hex);
    },
  );

  it('every record has a golden message for its current schema', () => {
    for (const record of ['telemetry', 'telemetryBatch', 'result', 'deadLetter', 'jobChunk', 'alert'] as const) {
      expect(golden.some((entry) => entry.record === record && entry.fingerprint === codecs[record].fingerprintHex)).toBe(true);
    }
  });

  it('a message is marker C3 01, the little-endian fingerprint, then the Avro body', () => {
    const { hex, fingerprint } = fixture('telemetry-single-value.json');
    expect(hex.slice(0, 4)).toBe('c301');
    expect(hex.slice(4, 20)).toBe(fingerprint);
    // Body by hand: "org_a" (zigzag length 5 = 0a), "pump-7" (0c), the timestamp varint, union
    // branch 1 (02) with 42.5 as a little-endian double, channels null (00), one map entry.
    expect(hex.slice(20)).toMatch(/^0a6f72675f610c70756d702d37[0-9a-f]+020000000000404540000208736974650[0-9a-f]+00$/);
  });
});

describe('schema evolution', () => {
  const telemetryV1 = readAvroSchemaFile(join(DEFAULT_AVRO_SCHEMA_DIR, 'telemetry.avsc'));
  const telemetryV2Schema = JSON.parse(readFileSync(join(DEFAULT_AVRO_SCHEMA_DIR, 'telemetry.avsc'), 'utf8')) as {
    fields: unknown[];
  };
  telemetryV2Schema.fields.push({ name: 'unit', type: 'string', default: 'unitless', doc: 'Added in v2.' });
  const telemetryV2 = parseAvroSchema(telemetryV2Schema, 'telemetry v2');

  it('a reader of a schema with an added field reads messages written with the old one', () => {
    const writers = new WriterSchemaRegistry();
    writers.register(telemetryV1);
    const v2 = createAvroCodec<TelemetryPoint & { unit: string }>(telemetryV2, writers);
    writers.register(telemetryV2);
    expect(v2.fingerprintHex).not.toBe(codecs.telemetry.fingerprintHex);

    const old = fixture('telemetry-channels.json');
    expect(old.fingerprint).toBe(codecs.telemetry.fingerprintHex);
    expect(v2.decode(Buffer.from(old.hex, 'hex'))).toEqual({ ...(old.value as object), unit: 'unitless' });

    // And the other way: today's reader skips the field it does not know.
    const newer = v2.encode({ ...(old.value as TelemetryPoint), unit: 'degC' });
    const oldReader = createAvroCodec<TelemetryPoint>(telemetryV1, writers);
    expect(oldReader.decode(newer)).toEqual(old.value);
  });

  it('a retired schema in history/ is registered as a writer', () => {
    const dir = mkdtempSync(join(tmpdir(), 'adp-avro-'));
    try {
      cpSync(DEFAULT_AVRO_SCHEMA_DIR, dir, { recursive: true });
      // An imagined v0 without tags: today's reader fills in the default {}.
      const v0Schema = JSON.parse(readFileSync(join(dir, 'telemetry.avsc'), 'utf8')) as { fields: { name: string }[] };
      v0Schema.fields = v0Schema.fields.filter((field) => field.name !== 'tags');
      mkdirSync(join(dir, 'history'), { recursive: true });
      writeFileSync(join(dir, 'history', 'README.txt'), 'not a schema: ignored');
      writeFileSync(join(dir, 'history', 'telemetry-v0.avsc'), JSON.stringify(v0Schema));
      const v0 = createAvroCodec<Omit<TelemetryPoint, 'tags'>>(parseAvroSchema(v0Schema, 'v0'), new WriterSchemaRegistry());
      const point = { organization: 'o', machine_id: 'm', timestamp: 1, value: 2, channels: null };
      const message = v0.encode(point);

      expect(thrown(() => codecs.telemetry.decode(message)).code).toBe('UNKNOWN_SCHEMA_FINGERPRINT');
      const withHistory = loadStreamingCodecs({ schemaDir: dir });
      expect(withHistory.writers.fingerprints()).toContain(v0.fingerprintHex);
      expect(withHistory.telemetry.decode(message)).toEqual({ ...point, tags: {} });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('a batch reader with a field added to its points reads batches written without it', () => {
    const schema = JSON.parse(readFileSync(join(DEFAULT_AVRO_SCHEMA_DIR, 'telemetry-batch.avsc'), 'utf8')) as {
      fields: { name: string; type: { items?: { fields: unknown[] } } }[];
    };
    schema.fields.find((field) => field.name === 'points')?.type.items?.fields.push({ name: 'quality', type: 'int', default: 100, doc: 'v2' });
    const writers = new WriterSchemaRegistry();
    writers.register(codecs.telemetryBatch.type);
    const v2 = createAvroCodec<Record<string, unknown>>(parseAvroSchema(schema, 'batch v2'), writers);
    const old = fixture('telemetry-batch-values.json');
    const decoded = v2.decode(Buffer.from(old.hex, 'hex')) as { points: { quality: number; value: number }[] };
    expect(decoded.points.map((point) => [point.value, point.quality])).toEqual([
      [42.5, 100],
      [43.25, 100],
      [-1.5, 100],
    ]);
  });

  it('a regime added later reads as UNKNOWN through the enum default', () => {
    const schema = JSON.parse(readFileSync(join(DEFAULT_AVRO_SCHEMA_DIR, 'result.avsc'), 'utf8')) as {
      fields: { name: string; type: { symbols?: string[] } }[];
    };
    schema.fields.find((field) => field.name === 'regime')?.type.symbols?.push('OFFLINE');
    const writers = new WriterSchemaRegistry();
    const future = createAvroCodec<Record<string, unknown>>(parseAvroSchema(schema, 'result v2'), writers);
    writers.register(future.type);
    const reader = createAvroCodec(codecs.result.type, writers);
    const value = { ...(fixture('result-anomaly.json').value as object), regime: 'OFFLINE' };
    expect(reader.decode(future.encode(value))).toMatchObject({ regime: 'UNKNOWN', machine_id: 'pump-7' });
  });
});

describe('typed decode and encode errors', () => {
  const message = Buffer.from(fixture('telemetry-single-value.json').hex, 'hex');

  it('an unknown fingerprint', () => {
    const unknown = Buffer.from(message);
    unknown.writeBigUInt64LE(0x0123456789abcdefn, 2);
    const error = thrown(() => codecs.telemetry.decode(unknown));
    expect(error.code).toBe('UNKNOWN_SCHEMA_FINGERPRINT');
    expect(error.retriable).toBe(false);
    expect(error.context.fingerprint).toBe('efcdab8967452301');
  });

  it('a truncated body, trailing bytes, and an impossible length', () => {
    expect(thrown(() => codecs.telemetry.decode(message.subarray(0, message.length - 3))).code).toBe('MESSAGE_BODY_CORRUPT');
    expect(thrown(() => codecs.telemetry.decode(Buffer.concat([message, Buffer.from([0x00])]))).code).toBe(
      'MESSAGE_BODY_CORRUPT',
    );
    const badLength = Buffer.from(message);
    badLength[10] = 0x7e; // organization's length becomes 63 bytes, past the end
    const error = thrown(() => codecs.telemetry.decode(badLength));
    expect(error.code).toBe('MESSAGE_BODY_CORRUPT');
    expect(error.context).toMatchObject({ schema: 'adp.streaming.TelemetryPoint', fingerprint: codecs.telemetry.fingerprintHex });
  });

  it('not single-object encoding at all', () => {
    expect(thrown(() => codecs.telemetry.decode(Buffer.from('{"value":1}'))).code).toBe('MESSAGE_NOT_SINGLE_OBJECT');
    expect(thrown(() => codecs.telemetry.decode(message.subarray(0, 9))).code).toBe('MESSAGE_NOT_SINGLE_OBJECT');
    expect(thrown(() => codecs.telemetry.decode(new Uint8Array())).code).toBe('MESSAGE_NOT_SINGLE_OBJECT');
  });

  it('a message of another record type', () => {
    const error = thrown(() => codecs.result.decode(message));
    expect(error.code).toBe('SCHEMA_INCOMPATIBLE');
    expect(error.context.fingerprint).toBe(codecs.telemetry.fingerprintHex);
  });

  it('decodes a Uint8Array view as well as a Buffer', () => {
    const padded = new Uint8Array(message.length + 4);
    padded.set(message, 4);
    expect(codecs.telemetry.decode(padded.subarray(4))).toEqual(codecs.telemetry.decode(message));
  });

  it('encoding a value that does not fit names the field', () => {
    const point = fixture('telemetry-channels.json').value as TelemetryPoint;
    const bad = { ...point, channels: [{ name: 'temperature', value: 'hot' }] } as unknown as TelemetryPoint;
    const error = thrown(() => codecs.telemetry.encode(bad));
    expect(error.code).toBe('MESSAGE_INVALID');
    expect(error.context.path).toBe('channels.0.value');
  });

  it('messages of any size encode as avsc writes them, each its own copy, a failed one leaving the next intact', () => {
    const chunk = (points: number) => ({
      organization: 'org_a',
      job_id: `job_${'a'.repeat(32)}`,
      series_index: 0,
      chunk_index: 0,
      chunk_count: 1,
      first_point: 0,
      timestamps: Array.from({ length: points }, (_, i) => 1_735_689_600_000 + i * 60_000),
      values: Array.from({ length: points }, (_, i) => i / 7),
    });
    // A small message, then ones larger than the codec's buffer, then one larger than it keeps.
    const values = [chunk(3), chunk(2000), chunk(60_000), chunk(300_000), chunk(5)];
    const messages = values.map((value) => codecs.jobChunk.encode(value));
    // Compared as bytes (Buffer.equals): a deep comparison of 300,000 items takes minutes.
    const written = (value: ReturnType<typeof chunk>) => Buffer.concat([Buffer.from([0xc3, 0x01]), codecs.jobChunk.fingerprint, codecs.jobChunk.type.toBuffer(value)]);
    expect(messages.map((message, index) => message.equals(written(values[index]!)))).toEqual([true, true, true, true, true]);
    expect(codecs.jobChunk.decode(messages[1]!)).toEqual(values[1]);
    expect(() => codecs.jobChunk.encode({ ...chunk(2000), values: ['x'] } as unknown as ReturnType<typeof chunk>)).toThrow(StreamingError);
    expect(codecs.jobChunk.decode(codecs.jobChunk.encode(chunk(4)))).toEqual(chunk(4));
    expect(messages[2]!.equals(written(values[2]!))).toBe(true);
  });
});

describe('the telemetry topic: points and batches side by side', () => {
  const point = Buffer.from(fixture('telemetry-single-value.json').hex, 'hex');
  const batch = Buffer.from(fixture('telemetry-batch-values.json').hex, 'hex');

  it('tells the records apart by the writer fingerprint', () => {
    expect(decodeTelemetryMessage(codecs, point)).toEqual({ kind: 'point', point: fixture('telemetry-single-value.json').value });
    const decoded = decodeTelemetryMessage(codecs, batch);
    expect(decoded.kind).toBe('batch');
    expect((decoded as { batch: TelemetryBatch }).batch).toEqual(fixture('telemetry-batch-values.json').value);
  });

  it('a batch written with a retired batch schema in history/ is still a batch', () => {
    const dir = mkdtempSync(join(tmpdir(), 'adp-avro-'));
    try {
      cpSync(DEFAULT_AVRO_SCHEMA_DIR, dir, { recursive: true });
      // An imagined v0 without tags: today's reader fills in the default {}.
      const v0Schema = JSON.parse(readFileSync(join(dir, 'telemetry-batch.avsc'), 'utf8')) as { fields: { name: string }[] };
      v0Schema.fields = v0Schema.fields.filter((field) => field.name !== 'tags');
      mkdirSync(join(dir, 'history'), { recursive: true });
      writeFileSync(join(dir, 'history', 'telemetry-batch-v0.avsc'), JSON.stringify(v0Schema));
      const v0 = createAvroCodec<Omit<TelemetryBatch, 'tags'>>(parseAvroSchema(v0Schema, 'v0'), new WriterSchemaRegistry());
      const value = { organization: 'o', machine_id: 'm', points: [{ timestamp: 1, value: 2, channels: null }] };
      const message = v0.encode(value);
      expect(decodeTelemetryMessage(loadStreamingCodecs({ schemaDir: dir }), message)).toEqual({
        kind: 'batch',
        batch: { ...value, tags: {} },
      });
      // Without the retired schema nobody knows the fingerprint.
      expect(thrown(() => decodeTelemetryMessage(codecs, message)).code).toBe('UNKNOWN_SCHEMA_FINGERPRINT');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('a message of neither record, or not single-object at all, throws as the point codec does', () => {
    const result = Buffer.from(fixture('result-anomaly.json').hex, 'hex');
    expect(thrown(() => decodeTelemetryMessage(codecs, result)).code).toBe('SCHEMA_INCOMPATIBLE');
    expect(thrown(() => decodeTelemetryMessage(codecs, Buffer.from('{"value":1}'))).code).toBe('MESSAGE_NOT_SINGLE_OBJECT');
    const unknown = Buffer.from(batch);
    unknown.writeBigUInt64LE(0x0123456789abcdefn, 2);
    expect(thrown(() => decodeTelemetryMessage(codecs, unknown)).code).toBe('UNKNOWN_SCHEMA_FINGERPRINT');
    const truncated = batch.subarray(0, batch.length - 4);
    const error = thrown(() => decodeTelemetryMessage(codecs, truncated));
    expect(error.code).toBe('MESSAGE_BODY_CORRUPT');
    expect(error.context.schema).toBe('adp.streaming.TelemetryBatch');
  });

  it('knows its own header byte for byte (writtenWithThis), and nothing shorter or one bit off', () => {
    expect(codecs.telemetry.writtenWithThis(point)).toBe(true);
    expect(codecs.telemetryBatch.writtenWithThis(batch)).toBe(true);
    expect(codecs.telemetry.writtenWithThis(batch)).toBe(false);
    expect(codecs.telemetryBatch.writtenWithThis(point)).toBe(false);
    // The header alone is still this codec's (the body is decode's business); nine bytes are not.
    expect(codecs.telemetry.writtenWithThis(point.subarray(0, 10))).toBe(true);
    expect(codecs.telemetry.writtenWithThis(point.subarray(0, 9))).toBe(false);
    for (let byte = 0; byte < 10; byte++) {
      const flipped = Buffer.from(point);
      flipped[byte] = flipped[byte]! ^ 0x01;
      expect(codecs.telemetry.writtenWithThis(flipped), `byte ${byte}`).toBe(false);
    }
    // A Uint8Array view into a larger buffer reads from its own start.
    const padded = Buffer.concat([Buffer.from([0xff, 0xff]), point]);
    expect(codecs.telemetry.writtenWithThis(new Uint8Array(padded.buffer, padded.byteOffset + 2, point.length))).toBe(true);
  });
});

describe('loading schemas', () => {
  const dirs: string[] = [];
  afterEach(() => {
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  });

  function schemaDirWith(file: string, text: string): string {
    const dir = mkdtempSync(join(tmpdir(), 'adp-avro-'));
    dirs.push(dir);
    cpSync(DEFAULT_AVRO_SCHEMA_DIR, dir, { recursive: true });
    writeFileSync(join(dir, file), text);
    return dir;
  }

  it('refuses an .avsc that drifted from the TS canonical form', () => {
    const schema = JSON.parse(readFileSync(join(DEFAULT_AVRO_SCHEMA_DIR, 'telemetry.avsc'), 'utf8')) as { fields: unknown[] };
    schema.fields.push({ name: 'extra', type: 'int', default: 0 });
    const error = thrown(() => loadStreamingCodecs({ schemaDir: schemaDirWith('telemetry.avsc', JSON.stringify(schema)) }));
    expect(error.code).toBe('SCHEMA_INVALID');
  });

  it('refuses a file that is not JSON or not Avro', () => {
    expect(thrown(() => loadStreamingCodecs({ schemaDir: schemaDirWith('result.avsc', '{nope') })).code).toBe('SCHEMA_INVALID');
    expect(
      thrown(() => loadStreamingCodecs({ schemaDir: schemaDirWith('result.avsc', '{"type":"record","name":"x"}') })).code,
    ).toBe('SCHEMA_INVALID');
  });
});
