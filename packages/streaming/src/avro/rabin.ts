// CRC-64-AVRO, the 64-bit Rabin fingerprint the Avro specification defines for schema
// fingerprints ("Schema Fingerprints" in the spec): polynomial constant EMPTY = 0xc15d213aa4d7a795,
// a 256-entry table built by shifting each byte value right eight times and xoring EMPTY whenever
// a 1 bit falls off, then one table lookup per input byte. BigInt keeps it exact in 64 bits; it
// runs once per schema, never per message.

const EMPTY = 0xc15d213aa4d7a795n;
const MASK_64 = 0xffffffffffffffffn;

let table: readonly bigint[] | undefined;

function fingerprintTable(): readonly bigint[] {
  if (table) return table;
  const built: bigint[] = [];
  for (let i = 0n; i < 256n; i += 1n) {
    let fp = i;
    for (let bit = 0; bit < 8; bit += 1) {
      fp = (fp >> 1n) ^ (fp & 1n ? EMPTY : 0n);
    }
    built.push(fp);
  }
  table = built;
  return built;
}

/** CRC-64-AVRO of `bytes` as an unsigned 64-bit integer. */
export function crc64Avro(bytes: Uint8Array): bigint {
  const lookup = fingerprintTable();
  let fp = EMPTY;
  for (const byte of bytes) {
    fp = ((fp >> 8n) ^ (lookup[Number((fp ^ BigInt(byte)) & 0xffn)] ?? 0n)) & MASK_64;
  }
  return fp;
}

/** The fingerprint as the single-object encoding carries it: 8 bytes, little-endian. */
export function crc64AvroLittleEndian(bytes: Uint8Array): Buffer {
  const out = Buffer.alloc(8);
  out.writeBigUInt64LE(crc64Avro(bytes));
  return out;
}
