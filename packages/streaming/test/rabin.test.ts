// CRC-64-AVRO and the canonical form it is computed over, against the vectors the Avro project
// publishes with its specification. avsc itself offers only MD5/SHA fingerprints (`fingerprint()`),
// so it cannot check CRC-64-AVRO; it does check that we fingerprint the same canonical text it hashes.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { canonicalSchema, parseAvroSchema } from '../src/avro/codecs.js';
import { crc64Avro, crc64AvroLittleEndian } from '../src/avro/rabin.js';

interface Vector {
  input: string;
  canonical: string;
  fingerprint: string;
}

const { vectors } = JSON.parse(
  readFileSync(new URL('./fixtures/avro-spec-fingerprints.json', import.meta.url), 'utf8'),
) as { vectors: Vector[] };

describe('CRC-64-AVRO', () => {
  it.each(vectors)('$canonical', ({ input, canonical, fingerprint }) => {
    const type = parseAvroSchema(JSON.parse(input), 'vector');
    expect(canonicalSchema(type)).toBe(canonical);
    // The spec publishes signed 64-bit values; ours is unsigned.
    expect(crc64Avro(Buffer.from(canonical, 'utf8'))).toBe(BigInt.asUintN(64, BigInt(fingerprint)));
  });

  it('is written little-endian in messages', () => {
    // "null" -> 7195948357588979594 = 0x63dd24e7cc258f8a, least significant byte first.
    expect(crc64AvroLittleEndian(Buffer.from('"null"')).toString('hex')).toBe('8a8f25cce724dd63');
  });

  it('of the empty input is the polynomial constant EMPTY', () => {
    expect(crc64Avro(new Uint8Array())).toBe(0xc15d213aa4d7a795n);
  });

  it('fingerprints the same canonical text that avsc hashes', () => {
    const type = parseAvroSchema(JSON.parse(vectors[8]?.input ?? '""'), 'vector');
    const md5 = createHash('md5').update(canonicalSchema(type)).digest('hex');
    expect(type.fingerprint('md5').toString('hex')).toBe(md5);
    expect(type.fingerprint().toString('hex')).toBe(md5); // avsc's default is MD5, not CRC-64-AVRO
  });
});
