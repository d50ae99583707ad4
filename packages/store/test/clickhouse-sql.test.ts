// The ClickHouse store's pure parts, without a server: the one quoting function for strings, the
// integer check, the version clock and the derived key ids. test/integration/store-clickhouse.test.ts
// proves the same quoting against the real server.
import { describe, expect, it } from 'vitest';
import { StoreError, apiKeyIdFor } from '@adp/store';
import { sqlInteger, sqlString } from '../src/clickhouse/sql.js';
import { VersionClock } from '../src/clickhouse/version-clock.js';

/** Reads a literal the way ClickHouse's parser does for the escapes sqlString emits. */
function unquote(literal: string): string {
  expect(literal.startsWith("'") && literal.endsWith("'")).toBe(true);
  const body = literal.slice(1, -1);
  const escapes: Record<string, string> = { '\\': '\\', "'": "'", '0': '\0', b: '\b', f: '\f', n: '\n', r: '\r', t: '\t' };
  let out = '';
  for (let i = 0; i < body.length; i++) {
    const char = body[i] ?? '';
    if (char === "'") throw new Error(`unescaped quote at ${i} in ${literal}`);
    if (char !== '\\') {
      out += char;
      continue;
    }
    const next = body[++i] ?? '';
    const unescaped = escapes[next];
    if (unescaped === undefined) throw new Error(`unknown escape \\${next}`);
    out += unescaped;
  }
  return out;
}

describe('sqlString', () => {
  it('quotes plain text unchanged', () => {
    expect(sqlString('pump-1')).toBe("'pump-1'");
    expect(sqlString('')).toBe("''");
    expect(sqlString('é 😀 {database} $1 ?')).toBe("'é 😀 {database} $1 ?'");
  });

  it('escapes quotes, backslashes and control characters', () => {
    expect(sqlString("it's")).toBe("'it\\'s'");
    expect(sqlString('a\\b')).toBe("'a\\\\b'");
    expect(sqlString("\\'")).toBe("'\\\\\\''");
    expect(sqlString('\0\b\f\n\r\t')).toBe("'\\0\\b\\f\\n\\r\\t'");
  });

  it('never lets a quote end the literal early, whatever the input', () => {
    const hostile = [
      "x'); DROP TABLE api_keys; --",
      "' OR 1=1 --",
      "\\' OR 1=1 --",
      "\\\\'; DROP DATABASE default; --",
      "'''",
      '\\',
      "a\\\nb'\0c",
    ];
    let everyCharacter = '';
    for (let code = 0; code < 0x3000; code++) everyCharacter += String.fromCharCode(code);
    for (const value of [...hostile, everyCharacter]) {
      const literal = sqlString(value);
      expect(unquote(literal)).toBe(value);
    }
  });

  it('refuses non-strings', () => {
    for (const value of [1, null, undefined, {}, ['a']]) {
      expect(() => sqlString(value as unknown as string)).toThrow(StoreError);
    }
  });
});

describe('sqlInteger', () => {
  it('passes safe integers and refuses everything else', () => {
    expect(sqlInteger(0)).toBe('0');
    expect(sqlInteger(-42)).toBe('-42');
    expect(sqlInteger(Number.MAX_SAFE_INTEGER)).toBe('9007199254740991');
    for (const value of [Number.NaN, Number.POSITIVE_INFINITY, 1.5, 2 ** 53, '1' as unknown as number]) {
      expect(() => sqlInteger(value)).toThrow(expect.objectContaining({ code: 'STORE_INVALID_ARGUMENT' }));
    }
  });
});

describe('VersionClock', () => {
  it('is strictly increasing even when the wall clock stands still or goes back', () => {
    let wall = 1_000;
    const clock = new VersionClock(() => wall);
    const first = clock.next();
    const second = clock.next();
    wall = 500;
    const third = clock.next();
    expect(first).toBe(1_000_000);
    expect(second).toBe(1_000_001);
    expect(third).toBe(1_000_002);
  });

  it('goes past the version a write was based on, even one from a clock far ahead', () => {
    const clock = new VersionClock(() => 1_000);
    const ahead = 9_000_000_000;
    expect(clock.next(ahead)).toBe(ahead + 1);
    expect(clock.next()).toBe(ahead + 2);
  });
});

describe('apiKeyIdFor', () => {
  it('derives the same id from the same hash, a different one from another', () => {
    const hash = 'a'.repeat(64);
    expect(apiKeyIdFor(hash)).toBe(apiKeyIdFor(hash));
    expect(apiKeyIdFor(hash)).toMatch(/^key_[0-9a-f]{32}$/);
    expect(apiKeyIdFor('b'.repeat(64))).not.toBe(apiKeyIdFor(hash));
  });
});
