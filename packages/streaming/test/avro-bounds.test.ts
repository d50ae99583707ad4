// The bounds check that runs before avsc decodes a message body: a block count, a length or an
// index that the bytes left cannot hold is refused at once (avsc would build every item a count
// claims and run the process out of memory: a 119-byte message did, found by mutating the golden
// messages). Bodies are written out byte by byte here; the golden messages all pass.
import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { decodeTelemetryMessage, loadStreamingCodecs, StreamingError } from '../src/index.js';
import { AvroBoundsError, checkAvroBounds } from '../src/avro/bounds.js';
import { parseAvroSchema } from '../src/avro/codecs.js';

const codecs = loadStreamingCodecs();
const FIXTURES = new URL('./fixtures/', import.meta.url);

/** Avro's zig-zag varint of an integer. */
function varint(n: bigint): number[] {
  let z = n >= 0n ? n * 2n : -n * 2n - 1n;
  const out: number[] = [];
  while (z >= 0x80n) {
    out.push(Number(z & 0x7fn) | 0x80);
    z >>= 7n;
  }
  out.push(Number(z));
  return out;
}
const text = (s: string): number[] => [...varint(BigInt(Buffer.byteLength(s))), ...Buffer.from(s)];
const batchMessage = (body: number[]): Buffer => Buffer.concat([Buffer.from([0xc3, 0x01]), codecs.telemetryBatch.fingerprint, Buffer.from(body)]);

function refusal(message: Buffer): StreamingError {
  try {
    decodeTelemetryMessage(codecs, message);
  } catch (error) {
    if (error instanceof StreamingError) return error;
    throw error;
  }
  throw new Error('expected the message to be refused');
}

describe('decoding refuses counts the message cannot hold, before building anything', () => {
  const head = [...text('org_a'), ...text('m-0')];

  it('a points array claiming 2^50 readings in a few bytes', () => {
    const error = refusal(batchMessage([...head, ...varint(2n ** 50n), 2, 0, 0, 0]));
    expect(error.code).toBe('MESSAGE_BODY_CORRUPT');
    expect(error.message).toContain(`an array block of ${2 ** 50} items that the 4 bytes left cannot hold`);
    expect(error.cause).toBeInstanceOf(AvroBoundsError);
  });

  it("a reading's channels claiming 2^40 entries, and a negative block whose size is negative", () => {
    // One reading: timestamp 1, value null (branch 0), channels (branch 1) with a huge block.
    const reading = [...varint(1n), ...varint(1n), ...varint(0n), ...varint(1n)];
    expect(refusal(batchMessage([...head, ...reading, ...varint(2n ** 40n), 0])).message).toContain(
      `an array block of ${2 ** 40} items that the 1 bytes left cannot hold`,
    );
    expect(refusal(batchMessage([...head, ...reading, ...varint(-3n), ...varint(-8n), 0])).message).toContain(
      'a negative size of an array block',
    );
  });

  it('a tags map claiming 2^33 entries, a string longer than the message, a union branch that does not exist', () => {
    const noPoints = [...head, ...varint(0n)];
    expect(refusal(batchMessage([...noPoints, ...varint(2n ** 33n), 0, 0])).message).toContain(`a map block of ${2 ** 33} items`);
    expect(refusal(batchMessage([...text('org_a'), ...varint(1_000_000n), 0x61])).message).toContain('a string of 1000000 bytes runs past the end');
    const badBranch = [...head, ...varint(1n), ...varint(1n), ...varint(7n), 0, 0];
    expect(refusal(batchMessage(badBranch)).message).toContain('union branch 7 of 2');
  });

  it('a number longer than 10 bytes, and one cut off', () => {
    expect(refusal(batchMessage([...text('org_a'), ...new Array(11).fill(0xff), 0])).message).toContain('a number longer than 10 bytes');
    expect(refusal(batchMessage([...text('org_a'), 0xff, 0xff])).message).toContain('a number runs past the end');
  });
});

describe('checkAvroBounds', () => {
  it('passes every golden message of every record type', () => {
    const goldens = readdirSync(FIXTURES).filter((name) => /^(telemetry|result|dead-letter|job-chunk)/.test(name));
    expect(goldens.length).toBeGreaterThanOrEqual(8);
    for (const name of goldens) {
      const fixture = JSON.parse(readFileSync(new URL(name, FIXTURES), 'utf8')) as { record: 'telemetry' | 'telemetryBatch' | 'result' | 'deadLetter' | 'jobChunk'; hex: string };
      const codec = codecs[fixture.record];
      expect(() => checkAvroBounds(codec.type, Buffer.from(fixture.hex, 'hex').subarray(10)), name).not.toThrow();
    }
  });

  it('allows a block of empty items up to 65,536, and enum indexes within the symbols', () => {
    const nulls = parseAvroSchema({ type: 'array', items: 'null' }, 'nulls');
    expect(() => checkAvroBounds(nulls, Buffer.from([...varint(65_536n), 0]))).not.toThrow();
    expect(() => checkAvroBounds(nulls, Buffer.from([...varint(65_537n), 0]))).toThrow(/an array block of 65537 items/);
    const color = parseAvroSchema({ type: 'enum', name: 'Color', symbols: ['RED', 'GREEN'] }, 'color');
    expect(() => checkAvroBounds(color, Buffer.from(varint(1n)))).not.toThrow();
    expect(() => checkAvroBounds(color, Buffer.from(varint(2n)))).toThrow(/enum index 2 of 2 symbols/);
    // A recursive record (a linked list): checked lazily through itself.
    const list = parseAvroSchema(
      { type: 'record', name: 'Node', fields: [{ name: 'value', type: 'long' }, { name: 'next', type: ['null', 'Node'] }] },
      'list',
    );
    expect(() => checkAvroBounds(list, Buffer.from([2, 2, 4, 2, 6, 0]))).not.toThrow();
    expect(() => checkAvroBounds(list, Buffer.from([2, 2, 4, 2]))).toThrow(/runs past the end/);
    const fixed = parseAvroSchema({ type: 'fixed', name: 'Four', size: 4 }, 'four');
    expect(() => checkAvroBounds(fixed, Buffer.from([1, 2, 3]))).toThrow(/a fixed of 4 bytes runs past the end/);
  });
});
