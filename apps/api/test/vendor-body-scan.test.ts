// The vendor routes' body scanner (apps/api/src/vendor/body-scan.ts) against the ordinary road it
// stands in for (JSON.parse, then the vendor validator): for any body, the same engine input (values
// bit for bit, -0 included, timestamps, options) or the same refusal (class, code, message), on
// every operation and in both message styles. Bodies are generated around the vendor's shape, with
// the oddities clients and attackers send (key casing, duplicate keys, escapes, timestamp forms,
// number literals, misplaced whitespace) and byte-level damage (cuts, insertions, deletions).
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseIsoTimestamp } from '@adp/detection';
import { parseJsonText, parseVendorBody, readJsonBody } from '../src/vendor/answer.js';
import { ScannedBody, scanVendorBody, type ScannedSeries } from '../src/vendor/body-scan.js';
import { detectionEngine } from '../src/vendor/engine.js';
import { parseVendorRequest, type MessageStyle, type Operation } from '../src/vendor/request.js';
import { VendorError } from '../src/vendor/errors.js';

const OPERATIONS: readonly Operation[] = ['entire', 'last', 'changepoint'];
const STYLES: readonly MessageStyle[] = ['v1.1', 'v1.0'];

/** A parsed request or a refusal, with every number written so that -0 and NaN stay visible. */
function outcome(run: () => unknown): unknown {
  try {
    return { ok: JSON.parse(JSON.stringify(run(), (_key, value: unknown) => (typeof value === 'number' ? numberText(value) : value))) as unknown };
  } catch (error) {
    if (!(error instanceof VendorError)) throw error;
    return { refused: error.name, code: error.code, message: error.message };
  }
}

function numberText(value: number): string {
  return Object.is(value, -0) ? '-0' : String(value);
}

/** The ordinary road, as the routes ran it before the scanner. */
function ordinary(raw: Buffer, operation: Operation, style: MessageStyle): unknown {
  return outcome(() => parseVendorRequest(parseJsonText(raw.toString('utf8')), operation, { style, parseTimestamp: parseIsoTimestamp }));
}

/** The routes' road now: the scanner where it reads the body, the ordinary road where it steps aside. */
function routes(raw: Buffer, operation: Operation, style: MessageStyle): unknown {
  return outcome(() => parseVendorBody(detectionEngine, operation, readJsonBody(raw, detectionEngine), style));
}

/** How many bodies the scanner read all the way to the engine's input (the test is not vacuous). */
let scannedToTheEnd = 0;

function expectSameEverywhere(raw: Buffer): void {
  for (const operation of OPERATIONS) {
    for (const style of STYLES) {
      const expected = ordinary(raw, operation, style);
      expect(routes(raw, operation, style), raw.toString('utf8').slice(0, 300)).toEqual(expected);
      const scanned = scanVendorBody(raw, detectionEngine);
      if (scanned !== null && 'ok' in (expected as object)) {
        const direct = outcome(() => parseVendorRequest(scanned.fields, operation, { style, parseTimestamp: parseIsoTimestamp }));
        if ('ok' in (direct as object)) scannedToTheEnd++;
      }
    }
  }
}

// --- generators ----------------------------------------------------------------------------------

const space = fc.constantFrom('', '', '', ' ', '\n', '\t', '\r\n  ', '\u000b', '\u00a0');

function caseVariants(name: string): fc.Arbitrary<string> {
  return fc.constantFrom(
    name,
    name,
    name,
    name.charAt(0).toUpperCase() + name.slice(1),
    name.toUpperCase(),
    name.replace(/[a-z]/, (c) => c.toUpperCase()),
    `${name}x`,
  );
}

const T0 = Date.UTC(2024, 0, 1);

/** Timestamps as clients write them, and as they should not. */
const timestampText = fc.oneof(
  { weight: 6, arbitrary: fc.integer({ min: 0, max: 40 }).map((i) => `"${new Date(T0 + i * 300_000).toISOString()}"`) },
  {
    weight: 3,
    arbitrary: fc
      .tuple(fc.integer({ min: -62_000_000_000_000, max: 253_000_000_000_000 }), fc.constantFrom('Z', '.000Z', 'z', '.1234567Z', '.5Z', '.12Z', '+00:00', '-0530', '+01', ''))
      .map(([ms, tail]) => {
        const iso = new Date(ms).toISOString();
        return `"${iso.startsWith('+') || iso.startsWith('-') ? iso : iso.slice(0, 19) + tail}"`;
      }),
  },
  {
    weight: 3,
    // The usual layout with any digits: dates and times out of range, leap days, year 0000.
    arbitrary: fc
      .tuple(
        fc.integer({ min: 0, max: 9999 }),
        fc.integer({ min: 0, max: 13 }),
        fc.integer({ min: 0, max: 32 }),
        fc.integer({ min: 0, max: 25 }),
        fc.integer({ min: 0, max: 60 }),
        fc.integer({ min: 0, max: 60 }),
        fc.constantFrom('Z', '.000Z', '.9999999Z', '.Z', 'ZZ', 'z', '.1z', ''),
        fc.constantFrom('T', 'T', 't', ' '),
      )
      .map(([y, mo, d, h, mi, s, tail, sep]) => {
        const p = (n: number, w = 2) => String(n).padStart(w, '0');
        return `"${p(y, 4)}-${p(mo)}-${p(d)}${sep}${p(h)}:${p(mi)}:${p(s)}${tail}"`;
      }),
  },
  {
    weight: 2,
    arbitrary: fc.constantFrom(
      '"2024-01-01"',
      '"2024-01-01T00:00Z"',
      '" 2024-01-01T00:00:00Z"',
      '"2024-01-01T00:00:00Z "',
      '"\\u0032024-01-01T00:00:00Z"',
      '"2024-01-01T00:00:00\\u005a"',
      '"2024-01-0１T00:00:00Z"',
      '"yesterday"',
      '""',
      'null',
      '1704067200000',
      'true',
      '["2024-01-01T00:00:00Z"]',
      '"2024-02-29T00:00:00Z"',
      '"2023-02-29T00:00:00Z"',
      '"2024-01-01T00:00:00.0000000000000000000001Z"',
    ),
  },
);

/** Number literals at the edges of JSON's grammar and of the vendor's limits, and values that are not numbers. */
const NUMBER_LITERALS = [
  '0', '-0', '-0.0', '0.0', '1', '-17', '100.5', '0.1', '0.30000000000000004', '123456789012345', '1234567890123456789',
  '1e3', '1E-7', '-2.5e+10', '1e100', '-1e100', '1.0000000000000001e100', '1e101', '-1e101', '1e400', '-1e400', '1e-400',
  '9007199254740993', '0.000001', '3.141592653589793', '12.0000000000000000000000001', '0.1234567890123456789',
  '01', '1.', '.5', '+1', '-', '1e', '1e+', '--1', '0x10', 'NaN', 'Infinity', '"12"', '"NaN"', 'null', 'true', 'false', '[]', '{}',
] as const;

/** Number literals: what JSON.stringify writes, and edge cases of the grammar and the limits. */
const valueText = fc.oneof(
  { weight: 6, arbitrary: fc.integer({ min: -100_000, max: 100_000 }).map((n) => String(n / 1000)) },
  { weight: 3, arbitrary: fc.double({ noNaN: true, noDefaultInfinity: true }).map((v) => JSON.stringify(v)) },
  { weight: 3, arbitrary: fc.constantFrom(...NUMBER_LITERALS) },
);

const pointText = fc.oneof(
  {
    weight: 12,
    arbitrary: fc
      .record({
        timestamp: fc.option(fc.tuple(caseVariants('timestamp'), timestampText), { nil: undefined, freq: 6 }),
        value: fc.option(fc.tuple(caseVariants('value'), valueText), { nil: undefined, freq: 20 }),
        extra: fc.option(fc.constantFrom('"note":"x"', '"value":2', '"Timestamp":null', '"timestamp":"2024-01-01T00:00:00Z"'), { nil: undefined, freq: 15 }),
        valueFirst: fc.boolean(),
        before: space,
        after: space,
      })
      .map(({ timestamp, value, extra, valueFirst, before, after }) => {
        const members = [timestamp && `"${timestamp[0]}":${timestamp[1]}`, value && `"${value[0]}"${before}:${after}${value[1]}`].filter(
          (member): member is string => member !== undefined,
        );
        if (valueFirst) members.reverse();
        if (extra !== undefined) members.push(extra);
        return `{${before}${members.join(`${after},${before}`)}${after}}`;
      }),
  },
  { weight: 1, arbitrary: fc.constantFrom('1', 'null', '[]', '"x"', '{}') },
);

/** A good point's members, in order: a usual timestamp and a value. */
function goodPoint(i: number, stepMs: number, fraction: string): string[] {
  return [`"timestamp":"${new Date(T0 + i * stepMs).toISOString().slice(0, 19)}${fraction}Z"`, `"value":${(i * 7.25) % 13}`];
}

/** One thing wrong (or merely unusual) in one point of an otherwise good series. */
const pointDefect: fc.Arbitrary<(members: string[]) => string[] | string> = fc.oneof(
  valueText.map((value) => (members: string[]) => [members[0]!, `"value":${value}`]),
  timestampText.map((timestamp) => (members: string[]) => [`"timestamp":${timestamp}`, members[1]!]),
  fc.tuple(caseVariants('timestamp'), caseVariants('value')).map(([t, v]) => (members: string[]) => [members[0]!.replace('timestamp', t), members[1]!.replace('value', v)]),
  fc
    .constantFrom('"value":2', '"Value":2', '"VALUE":2.5', '"timestamp":null', '"Timestamp":"2024-01-01T00:00:00Z"', '"note":1', '"timestamp":"2030-01-01T00:00:00Z"')
    .map((extra) => (members: string[]) => [...members, extra]),
  fc.constantFrom(0, 1).map((drop) => (members: string[]) => members.filter((_, k) => k !== drop)),
  fc.constantFrom('\t', '	', '', '', 'é', '\"').map((inside) => (members: string[]) => [members[0]!.replace('T', `${inside}T`), members[1]!]),
  fc.constantFrom('1', 'null', '[]', '"x"', '{}').map((other) => () => other),
  fc.constantFrom(true).map(() => (members: string[]) => [...members].reverse()),
  // The point's own punctuation, good and broken (weighted: each edit is one of many).
  {
    weight: 4,
    arbitrary: fc
    .constantFrom<(text: string) => string>(
      (text) => text.replace('"value":', '"value" :'),
      (text) => text.replace('"value":', '"valueX:'),
      (text) => text.replace('"value":', '"value"='),
      (text) => text.replace('"value":', '"value"0'),
      (text) => text.replace('"timestamp":', '"timestampX:'),
      (text) => text.replace('":"', '" "'),
      (text) => text.replace(',"value"', ';"value"'),
      (text) => text.replace(',"value"', ' "value"'),
      (text) => text.replace(',"value"', ',,"value"'),
      (text) => text.replace(/}$/, ';'),
      (text) => text.replace(/}$/, ']'),
      (text) => text.replace(/}$/, ',}'),
      (text) => text.replace('{', '{{'),
      (text) => text.replace('{', ' { '),
      (text) => text.replace('{', ''),
      (text) => text.replace('{', '['),
    )
    .map((edit) => (members: string[]) => edit(`{${members.join(',')}}`)),
  },
);

const seriesText = fc.oneof(
  { weight: 4, arbitrary: fc.array(pointText, { minLength: 10, maxLength: 24 }).map((points) => `[${points.join(',')}]`) },
  // Good series, and good series with a defect or two, so that whole bodies reach the end of the
  // scanner and every rule on a point is met by a body that breaks only that rule.
  {
    weight: 12,
    arbitrary: fc
      .tuple(
        fc.integer({ min: 11, max: 30 }),
        fc.constantFrom('', '.000', '.0000000'),
        fc.constantFrom(300_000, 86_400_000),
        fc.array(fc.tuple(fc.nat(), pointDefect), { maxLength: 2 }),
        fc.constantFrom(',', ',', ',', ',', ', ', '\n,', ';', ' ', ',,'),
      )
      .map(([n, fraction, stepMs, defects, separator]) => {
        const points: (string[] | string)[] = Array.from({ length: n }, (_, i) => goodPoint(i, stepMs, fraction));
        for (const [at, defect] of defects) {
          const index = at % n;
          const point = points[index]!;
          if (typeof point !== 'string') points[index] = defect(point);
        }
        return `[${points.map((point) => (typeof point === 'string' ? point : `{${point.join(',')}}`)).join(separator)}]`;
      }),
  },
  { weight: 1, arbitrary: fc.constantFrom('null', '[]', '{}', '"x"', '12', '[1,2,3]') },
);

/** Top-level options: valid values, values each rule refuses, and null. */
const optionMember = fc.oneof(
  fc.tuple(caseVariants('granularity'), fc.constantFrom('"minutely"', '"Daily"', '"none"', '"NONE"', '"fortnightly"', 'null', '5', '"hourly"')),
  fc.tuple(caseVariants('customInterval'), fc.constantFrom('5', '1', '0', '-1', '1.5', '"5"', 'null')),
  fc.tuple(caseVariants('period'), fc.constantFrom('0', '7', '288', '-1', '2.5', 'null', '"7"')),
  fc.tuple(caseVariants('maxAnomalyRatio'), fc.constantFrom('0.25', '0.49', '0.5', '0', 'null', '"0.1"')),
  fc.tuple(caseVariants('sensitivity'), fc.constantFrom('95', '0', '99', '100', '-1', '50.5', 'null')),
  fc.tuple(caseVariants('imputeMode'), fc.constantFrom('"auto"', '"fixed"', '"notFill"', '"LINEAR"', '"bogus"', 'null')),
  fc.tuple(caseVariants('imputeFixedValue'), fc.constantFrom('0', '-3.5', '1e101', '"1"', 'null')),
  fc.tuple(caseVariants('pastRange'), fc.constantFrom('{"min":1,"max":2}', '{"Min":-1,"MAX":1}', '{"min":2,"max":1}', '[]', 'null', '{"min":1}')),
  fc.tuple(caseVariants('threshold'), fc.constantFrom('0.5', '0.01', '0.99', '1', 'null')),
  fc.tuple(caseVariants('stableTrendWindow'), fc.constantFrom('3', '5', '2', '100', '5.5', 'null')),
  fc.tuple(
    fc.constantFrom('note', 'constructor', '__proto__', 'toString', 'séries', 'k\\u0065y', '0', ''),
    fc.constantFrom('"x"', '{"a":[1,{"b":"\\"}"}]}', '[1, 2, [3]]', 'true', '"\\ud800"', '{"__proto__":{"p":1}}', '-0.5e-3'),
  ),
);

const bodyText = fc
  .record({
    seriesKey: fc.option(caseVariants('series'), { nil: undefined, freq: 12 }),
    series: seriesText,
    options: fc.oneof({ weight: 2, arbitrary: fc.constant<(readonly [string, string])[]>([]) }, { weight: 3, arbitrary: fc.array(optionMember.map(([key, value]): readonly [string, string] => [key, value]), { maxLength: 4 }) }),
    granularity: fc.option(fc.constantFrom('"minutely"', '"daily"', '"none"'), { nil: undefined, freq: 2 }),
    seriesAt: fc.nat(),
    duplicateSeries: fc.option(caseVariants('series'), { nil: undefined, freq: 10 }),
    before: space,
    after: space,
    comma: fc.constantFrom(',', ',', ',', ',', ',', ';', '', ',,'),
  })
  .map(({ seriesKey, series, options, granularity, seriesAt, duplicateSeries, before, after, comma }) => {
    const members = options.map(([key, value]) => `"${key}":${value}`);
    if (granularity !== undefined) members.unshift(`"granularity":${granularity}`);
    if (seriesKey !== undefined) members.splice(seriesAt % (members.length + 1), 0, `"${seriesKey}"${before}:${after}${series}`);
    if (duplicateSeries !== undefined) members.push(`"${duplicateSeries}":${series}`);
    return `${before}{${after}${members.join(`${comma}${before}`)}${after}}${before}`;
  });

/** Damage a body the way a broken client or a fuzzer would, now and then. */
const damagedBody = fc
  .tuple(
    bodyText,
    fc.constantFrom('none', 'none', 'none', 'none', 'none', 'cut', 'insert', 'delete', 'bom', 'trailing', 'array'),
    fc.nat(),
    fc.constantFrom('"', ',', '}', ']', '{', '[', ':', '\\', '0', 'e', '-', ' ', '\u0000', '\u00e9', '\u2028'),
  )
  .map(([text, damage, at, insert]) => {
    const where = text.length === 0 ? 0 : at % text.length;
    switch (damage) {
      case 'cut':
        return text.slice(0, where);
      case 'insert':
        return text.slice(0, where) + insert + text.slice(where);
      case 'delete':
        return text.slice(0, where) + text.slice(where + 1);
      case 'bom':
        return `\ufeff${text}`;
      case 'trailing':
        return `${text} ${insert}`;
      case 'array':
        return `[${text}]`;
      default:
        return text;
    }
  });

// --- tests ---------------------------------------------------------------------------------------

describe('vendor bodies read by the scanner', () => {
  it('give the same engine input or the same refusal as JSON.parse and the validator, for generated bodies', () => {
    scannedToTheEnd = 0;
    fc.assert(
      fc.property(damagedBody, (text) => {
        expectSameEverywhere(Buffer.from(text, 'utf8'));
      }),
      { numRuns: 3000, seed: 20261207 },
    );
    // Enough of them went the whole way through the scanner for the comparison to mean something.
    expect(scannedToTheEnd).toBeGreaterThan(500);
  });

  it('give the same answers for each edge-case number literal in an otherwise good body', () => {
    for (const literal of [...NUMBER_LITERALS, '1.e5', '1e05', '-01', '0.0e0', '1E+0', '5e-324', '1.7976931348623157e308', '2e308']) {
      for (const at of [0, 5, 11]) {
        const points = Array.from({ length: 12 }, (_, i) => `{"timestamp":"${new Date(T0 + i * 86_400_000).toISOString()}","value":${i === at ? literal : i}}`);
        expectSameEverywhere(Buffer.from(`{"granularity":"daily","series":[${points.join(',')}]}`));
        expectSameEverywhere(Buffer.from(`{"series":[${points.join(',')}]}`));
      }
    }
  });

  it('give the same answers for bytes that are not valid UTF-8', () => {
    const good = `{"series":[${Array.from({ length: 12 }, (_, i) => `{"timestamp":"2024-01-0${(i % 9) + 1}T00:00:00Z","value":${i}}`).join(',')}]`;
    const bad = [Buffer.from([0xff]), Buffer.from([0xe2, 0x82]), Buffer.from([0xc0, 0xaf]), Buffer.from([0xed, 0xa0, 0x80])];
    for (const bytes of bad) {
      for (const raw of [
        Buffer.concat([Buffer.from(`${good},"no`), bytes, Buffer.from('te":1}')]),
        Buffer.concat([Buffer.from(`${good},"note":"`), bytes, Buffer.from('"}')]),
        Buffer.concat([Buffer.from(good.replace('"value":0', '"value":0,"')), bytes, Buffer.from('":1}')]),
        Buffer.concat([bytes, Buffer.from(`${good}}`)]),
      ]) {
        expectSameEverywhere(raw);
      }
    }
  });

  it('read the usual timestamp form from the bytes exactly as parseIsoTimestamp reads the text', () => {
    const expectAsParsed = (text: string): void => {
      const body = `{"series":[${Array.from({ length: 12 }, () => `{"timestamp":"${text}","value":1}`).join(',')}]}`;
      const scanned = scanVendorBody(Buffer.from(body), detectionEngine);
      expect(scanned).toBeInstanceOf(ScannedBody);
      const series = scanned!.fields['series'] as ScannedSeries;
      expect(series.timestampsMs[11], text).toBe(parseIsoTimestamp(text) ?? Number.NaN);
    };
    for (const text of [
      '1900-02-29T00:00:00Z', '2000-02-29T00:00:00Z', '2100-02-29T00:00:00Z', '2024-02-29T12:00:00Z', '2023-02-29T12:00:00Z',
      '0000-02-29T00:00:00Z', '0000-01-01T00:00:00Z', '9999-12-31T23:59:59.999Z', '2024-04-31T00:00:00Z', '2024-04-30T00:00:00Z',
      '2024-01-01T24:00:00Z', '2024-01-01T23:60:00Z', '2024-01-01T23:59:60Z', '2024-13-01T00:00:00Z', '2024-00-10T00:00:00Z',
      '2024-01-00T00:00:00Z', '2024-01-01T00:00:00.1239Z', '2024-01-01T00:00:00.Z', '1970-01-01T00:00:00z',
      '20a4-01-01T00:00:00Z', '2-24-01-01T00:00:00Z', '2024-0a-01T00:00:00Z', '2024-01-1 T00:00:00Z', '2024-01-01T0:00:00Z',
      '2024-01-01T00:0:00Z', '2024-01-01T00:00:0Z', '2024-01-01T00:00:00.1a2Z', '2024-01-01T00:00:00:00Z', '2024-01-01T00:00:00ZZ',
    ]) {
      expectAsParsed(text);
    }
    // Mostly digits; now and then a character that is not one.
    const character = fc.oneof({ weight: 30, arbitrary: fc.integer({ min: 0, max: 9 }).map(String) }, { weight: 1, arbitrary: fc.constantFrom('a', ' ', '-', ':', '.', '/', '+') });
    const digits = (min: number, max = min) => fc.array(character, { minLength: min, maxLength: max }).map((d) => d.join(''));
    const field = (max: number) => fc.oneof(digits(2), fc.integer({ min: 0, max }).map((n) => String(n).padStart(2, '0')));
    // Any digits, and numbers around each field's limits (month 13, day 32, hour 24, minute 60).
    const usualish = fc
      .tuple(
        fc.oneof(digits(4), fc.constantFrom('0000', '0001', '1900', '2000', '2023', '2024', '2100', '9999')),
        field(13),
        field(32),
        field(25),
        field(60),
        field(60),
        fc.option(digits(0, 9)),
        fc.constantFrom('Z', 'z'),
      )
      .map(([y, mo, d, h, mi, s, fraction, zone]) => `${y}-${mo}-${d}T${h}:${mi}:${s}${fraction === null ? '' : `.${fraction}`}${zone}`);
    fc.assert(
      fc.property(usualish, (text) => {
        expectAsParsed(text);
      }),
      { numRuns: 5000, seed: 7 },
    );
  });

  it('take the usual bodies: vendor SDK payloads in both spellings, with every option', () => {
    const points = (count: number, key: (name: string) => string) =>
      `[${Array.from({ length: count }, (_, i) => `{"${key('timestamp')}":"${new Date(T0 + i * 86_400_000).toISOString()}","${key('value')}":${100 + (i % 7) * 1.5}}`).join(',')}]`;
    const pascal = (name: string) => name.charAt(0).toUpperCase() + name.slice(1);
    for (const text of [
      `{"series":${points(40, (n) => n)},"granularity":"daily","customInterval":1,"period":7,"maxAnomalyRatio":0.25,"sensitivity":95,"imputeMode":"auto"}`,
      `{"Series":${points(40, pascal)},"Granularity":"daily","Sensitivity":90}`,
      `{ "series" : ${points(40, (n) => n).replaceAll(',', ' ,\n ')} , "granularity" : "daily" }`,
      `{"granularity":"daily","series":${points(40, (n) => n)},"pastRange":{"min":0,"max":200}}`,
      `{"series":${points(40, (n) => n)},"granularity":"daily","stableTrendWindow":5,"threshold":0.9}`,
    ]) {
      expect(scanVendorBody(Buffer.from(text), detectionEngine), text.slice(0, 80)).toBeInstanceOf(ScannedBody);
      expectSameEverywhere(Buffer.from(text));
    }
  });

  it('step aside where the validator needs what it did not keep, and the refusal is the same', () => {
    const withMissing = `{"granularity":"daily","series":[${Array.from({ length: 20 }, (_, i) => (i === 13 ? '{"value":1}' : `{"timestamp":"${new Date(T0 + i * 86_400_000).toISOString()}","value":1}`)).join(',')}]}`;
    expect(scanVendorBody(Buffer.from(withMissing), detectionEngine)).toBeInstanceOf(ScannedBody);
    expect(routes(Buffer.from(withMissing), 'entire', 'v1.1')).toEqual({
      refused: 'VendorError',
      code: 'BadArgument',
      message: "The 'timestamp' at index 13 is required when 'granularity' is not 'none'.",
    });
    expectSameEverywhere(Buffer.from(withMissing));
  });

  it('read the longest series the same way, and refuse one point more the same way', () => {
    for (const count of [8640, 8641]) {
      const text = `{"granularity":"minutely","customInterval":5,"series":[${Array.from({ length: count }, (_, i) => `{"timestamp":"${new Date(T0 + i * 300_000).toISOString()}","value":${(i * 0.37) % 101}}`).join(',')}]}`;
      expect(scanVendorBody(Buffer.from(text), detectionEngine)).toBeInstanceOf(ScannedBody);
      expectSameEverywhere(Buffer.from(text));
    }
  });
});
