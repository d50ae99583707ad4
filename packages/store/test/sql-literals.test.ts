import { describe, expect, it } from 'vitest';
import { StreamingError } from '@adp/streaming';
import { sqlIntegerLiteral, sqlStringLiteral } from '../src/clickhouse/sql-literals.js';

describe('sqlStringLiteral', () => {
  it.each([
    ['plain', "'plain'"],
    ["o'brien", "'o\\'brien'"],
    ['back\\slash', "'back\\\\slash'"],
    ["x' OR 1=1 --", "'x\\' OR 1=1 --'"],
    ['line\nbreak\u0000nul', "'line\\x0abreak\\x00nul'"],
    ['ünï', "'ünï'"],
  ])('quotes %j as %s', (value, literal) => {
    expect(sqlStringLiteral(value)).toBe(literal);
  });
});

describe('sqlIntegerLiteral', () => {
  it('prints safe integers and refuses anything else', () => {
    expect(sqlIntegerLiteral(1_700_000_000_000)).toBe('1700000000000');
    for (const bad of [1.5, Number.NaN, 2 ** 53, Number.POSITIVE_INFINITY]) {
      expect(() => sqlIntegerLiteral(bad)).toThrow(StreamingError);
    }
  });
});
