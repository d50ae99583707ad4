import { describe, expect, it } from 'vitest';
import { parseIsoTimestamp } from '../src/index.js';
import { seededRandom } from '../src/random.js';

describe('parseIsoTimestamp', () => {
  const march1 = Date.UTC(2018, 2, 1);

  it('reads YYYY-MM-DDTHH:MM:SS[.f]Z by its fast path exactly as the general one (leading space = general path)', () => {
    const random = seededRandom(20261122);
    const pick = (k: number): number => Math.floor(random() * k);
    const pad = (v: number, width: number): string => String(v).padStart(width, '0');
    const texts: string[] = [];
    for (let t = 0; t < 20000; t++) {
      // Mostly valid fields; now and then a day, month, hour, minute or second out of range.
      const year = t % 10 === 0 ? pick(100) : t % 10 === 1 ? 9999 - pick(3) : 1600 + pick(800);
      const month = t % 37 === 0 ? pick(15) : 1 + pick(12);
      const day = t % 13 === 0 ? 28 + pick(4) : t % 41 === 0 ? pick(33) : 1 + pick(28);
      const hour = t % 53 === 0 ? 23 + pick(3) : pick(24);
      const minute = t % 59 === 0 ? 59 + pick(2) : pick(60);
      const second = t % 61 === 0 ? 59 + pick(2) : pick(60);
      const digits = pick(10); // 0: no fraction; 1-9 fractional digits
      const fraction = digits === 0 ? '' : `.${Array.from({ length: digits }, () => pick(10)).join('')}`;
      const zone = t % 7 === 0 ? 'z' : 'Z';
      texts.push(`${pad(year, 4)}-${pad(month, 2)}-${pad(day, 2)}T${pad(hour, 2)}:${pad(minute, 2)}:${pad(second, 2)}${fraction}${zone}`);
    }
    let valid = 0;
    for (const text of texts) {
      const fast = parseIsoTimestamp(text);
      expect(fast, text).toBe(parseIsoTimestamp(` ${text}`));
      if (fast !== null) valid++;
    }
    // Both kinds are there: valid stamps (with Date's own reading where it has one) and refusals.
    expect(valid).toBeGreaterThan(15000);
    expect(valid).toBeLessThan(20000);
    expect(parseIsoTimestamp('2016-02-29T12:34:56.789Z')).toBe(Date.UTC(2016, 1, 29, 12, 34, 56, 789));
    expect(parseIsoTimestamp('2016-02-29T12:34:56.7891999Z')).toBe(Date.UTC(2016, 1, 29, 12, 34, 56, 789));
    expect(parseIsoTimestamp('2015-02-29T00:00:00Z')).toBeNull();
    expect(parseIsoTimestamp('0000-02-29T00:00:00Z')).toBe(Date.parse('0000-02-29T00:00:00Z'));
    expect(parseIsoTimestamp('1900-02-29T00:00:00Z')).toBeNull();
    expect(parseIsoTimestamp('1969-12-31T23:59:59.999Z')).toBe(-1);
    // Near misses of the canonical form go to the general path and get its answers.
    for (const text of ['2018-03-01T00:00:00.Z', '2018-03-01T00:00:00,5Z', '2018-03-01t00:00:00Z', '2018-03-01 00:00:00Z', '2018-3-01T00:00:00Z', '2018-03-01T00:00:0xZ', '+2018-03-01T00:00:00Z', '2018-03-01T00:00:00.12aZ']) {
      expect(parseIsoTimestamp(text), text).toBe(parseIsoTimestamp(` ${text}`));
    }
  });

  it('reads the forms the vendor clients send', () => {
    expect(parseIsoTimestamp('2018-03-01T00:00:00Z')).toBe(march1);
    expect(parseIsoTimestamp('2018-03-01T00:00:00.000Z')).toBe(march1);
    expect(parseIsoTimestamp('2018-03-01T00:00:00.0000000Z')).toBe(march1);
    expect(parseIsoTimestamp('2018-03-01')).toBe(march1);
    expect(parseIsoTimestamp('2018-03-01T00:00Z')).toBe(march1);
  });

  it('applies offsets', () => {
    expect(parseIsoTimestamp('2018-03-01T01:00:00+01:00')).toBe(march1);
    expect(parseIsoTimestamp('2018-02-28T18:30:00-05:30')).toBe(march1);
    expect(parseIsoTimestamp('2018-03-01T01:00:00+0100')).toBe(march1);
  });

  it('truncates fractional digits past the millisecond', () => {
    expect(parseIsoTimestamp('2018-03-01T00:00:00.1239999Z')).toBe(march1 + 123);
    expect(parseIsoTimestamp('2018-03-01T00:00:00.5Z')).toBe(march1 + 500);
  });

  it('reads a zone-less date-time as UTC', () => {
    expect(parseIsoTimestamp('2018-03-01T00:00:00')).toBe(march1);
  });

  it('keeps two-digit-looking years as written', () => {
    expect(parseIsoTimestamp('0050-01-01T00:00:00Z')).toBe(-60589296000000);
  });

  it('returns null, never NaN, for anything else', () => {
    for (const text of [
      '',
      'yesterday',
      '2018-02-30T00:00:00Z',
      '2019-02-29',
      '2018-13-01',
      '2018-03-01T24:00:00Z',
      '2018-03-01T00:60:00Z',
      '2018-03-01T00:00:00+25:00',
      '2018-3-1',
      '1520000000000',
      '2018-03-01T00:00:00ZZ',
    ]) {
      expect(parseIsoTimestamp(text), text).toBeNull();
    }
    expect(parseIsoTimestamp('2020-02-29')).toBe(Date.UTC(2020, 1, 29));
  });
});
