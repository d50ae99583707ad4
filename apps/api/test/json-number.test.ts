// The body scanners' number reader (apps/api/src/json-number.ts): every number it reads is bit for
// bit what JSON.parse reads from the same text, -0 included; what it cannot read exactly it leaves
// to JSON.parse (settle), and bytes that are not a JSON number it refuses.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { JsonNumberReader } from '../src/json-number.js';

/** Reads `text` (followed by a comma, as in a body) the way the scanners do: here, or kept and settled. */
function read(text: string): { value: number; readHere: boolean } | null {
  const reader = new JsonNumberReader();
  const bytes = Buffer.from(`${text},`);
  const value = reader.read(bytes, 0);
  if (reader.end < 0) return null;
  expect(reader.end).toBe(text.length);
  if (!Number.isNaN(value)) return { value, readHere: true };
  const values = [Number.NaN];
  reader.keep(bytes, 0, reader.end, 0);
  expect(reader.settle(values, Number.POSITIVE_INFINITY)).toBe(true);
  return { value: values[0]!, readHere: false };
}

function expectAsJsonParse(text: string): boolean {
  const got = read(text);
  expect(got, text).not.toBeNull();
  expect(Object.is(got!.value, JSON.parse(text)), `${text}: ${got!.value} against ${JSON.parse(text)}`).toBe(true);
  return got!.readHere;
}

/** Any double from its 64 bits (subnormals, extremes and integers included). */
const anyDouble = fc.tuple(fc.integer({ min: 0, max: 2 ** 32 - 1 }), fc.integer({ min: 0, max: 2 ** 32 - 1 })).map(([high, low]) => {
  const view = new DataView(new ArrayBuffer(8));
  view.setUint32(0, high);
  view.setUint32(4, low);
  return view.getFloat64(0);
});

describe('JsonNumberReader', () => {
  it('reads integers, short decimals and the long texts String() writes here, without JSON.parse', () => {
    for (const text of ['0', '-0', '-0.0', '1', '-17', '100.5', '0.1', '123456789012345', '0.000001', '3.141592653589793', '100.83574120381024', '0.30000000000000004', '9007199254740993', '1234567890123456789', '-107.35264823849213']) {
      expect(expectAsJsonParse(text), text).toBe(true);
    }
  });

  it('leaves exponents, more than 19 significant digits and more than 22 decimals to JSON.parse', () => {
    for (const text of ['1e3', '1E-7', '-2.5e+10', '1e100', '12345678901234567890', '0.1234567890123456789012', '12.0000000000000000000000001', '5e-324', '1.7976931348623157e+308']) {
      expect(expectAsJsonParse(text), text).toBe(false);
    }
  });

  it('refuses what is not a JSON number', () => {
    for (const text of ['', '-', '+1', '.5', '1.', '01', '-a', 'e5', '1e', '1e+', 'NaN', 'Infinity']) {
      const reader = new JsonNumberReader();
      reader.read(Buffer.from(`${text},`), 0);
      // '01' reads as 0 and stops before the 1: the scanner then meets a byte that is not a delimiter.
      if (text === '01') expect(reader.end).toBe(1);
      else expect(reader.end, text).toBe(-1);
    }
  });

  it('reads every double as JSON.parse reads its shortest text, subnormals and integers included (property)', () => {
    fc.assert(
      fc.property(anyDouble, fc.double({ noNaN: true, noDefaultInfinity: true }), fc.integer({ min: -(2 ** 53), max: 2 ** 53 }), (bits, double, integer) => {
        for (const x of [bits, double, integer, integer / 1000]) if (Number.isFinite(x)) expectAsJsonParse(String(x));
      }),
      { numRuns: 2_000 },
    );
  });

  it('reads 16 to 19 significant digits anywhere around the point as JSON.parse does, midpoints included (property)', () => {
    fc.assert(
      fc.property(
        fc.stringMatching(/^[1-9][0-9]{15,18}$/),
        fc.nat(),
        fc.integer({ min: 0, max: 3 }),
        fc.boolean(),
        (digits, place, leadingZeros, negative) => {
          const dot = place % (digits.length + 1);
          const body = dot === digits.length ? digits : dot === 0 ? `0.${'0'.repeat(leadingZeros)}${digits}` : `${digits.slice(0, dot)}.${digits.slice(dot)}`;
          expectAsJsonParse(negative ? `-${body}` : body);
        },
      ),
      { numRuns: 5_000 },
    );
    // Exact midpoints between two doubles: the nearest even one, as JSON.parse rounds.
    for (const text of ['9007199254740993', '9007199254740995', '1.00000000000000011102230246251565', '0.5000000000000000277555756156289135']) expectAsJsonParse(text);
    // Decimal texts within a hair of a midpoint (17 digits of 2^-52 steps): read here or left, never wrong.
    for (let k = 1; k < 2_000; k++) expectAsJsonParse((1 + k * 2 ** -52 + 2 ** -53).toPrecision(19));
  });

  it('settles kept texts into their places with one JSON.parse and refuses one beyond the magnitude', () => {
    const reader = new JsonNumberReader();
    const bytes = Buffer.from('1e3,2.5,-4E-2,1e101,');
    const values = [0, 0, 0];
    for (const [index, from] of [[0, 0], [2, 8]] as const) {
      expect(Number.isNaN(reader.read(bytes, from))).toBe(true);
      reader.keep(bytes, from, reader.end, index);
    }
    values[1] = reader.read(bytes, 4);
    expect(reader.settle(values, 1e100)).toBe(true);
    expect(values).toEqual([1000, 2.5, -0.04]);
    reader.read(bytes, 14);
    reader.keep(bytes, 14, reader.end, 0);
    expect(reader.settle(values, 1e100)).toBe(false);
  });
});
