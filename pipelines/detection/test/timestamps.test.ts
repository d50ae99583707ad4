import { describe, expect, it } from 'vitest';
import { parseIsoTimestamp } from '../src/index.js';

describe('parseIsoTimestamp', () => {
  const march1 = Date.UTC(2018, 2, 1);

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
