import { describe, expect, it } from 'vitest';
import { GenerationalCache } from '../src/generational-cache.js';

describe('GenerationalCache', () => {
  it('evicts the least recently used entry beyond its size; peek and has do not refresh', () => {
    const cache = new GenerationalCache<string>(2);
    cache.setIfCurrent('a', cache.generation('a'), 'A');
    cache.setIfCurrent('b', cache.generation('b'), 'B');
    expect(cache.get('a')).toBe('A'); // a is now the most recent
    cache.setIfCurrent('c', cache.generation('c'), 'C');
    expect(cache.has('b')).toBe(false);
    expect(cache.peek('a')).toBe('A'); // peek leaves c the most recent
    cache.setIfCurrent('d', cache.generation('d'), 'D');
    expect(cache.has('a')).toBe(false);
    expect(cache.get('c')).toBe('C');
    expect(cache.get('d')).toBe('D');
    expect(cache.size).toBe(2);
  });

  it('drops a load that started before a write or delete', () => {
    const cache = new GenerationalCache<string>(4);
    const before = cache.generation('m');
    cache.replace('m', 'fresh');
    cache.setIfCurrent('m', before, 'stale');
    expect(cache.get('m')).toBe('fresh');
    const beforeDelete = cache.generation('m');
    cache.replace('m', undefined);
    cache.setIfCurrent('m', beforeDelete, 'stale');
    expect(cache.has('m')).toBe(false);
    expect(cache.generation('m')).toBe(2);
  });

  it('drops a key and the cached keys a predicate selects, each to a newer generation', () => {
    const cache = new GenerationalCache<string>(10);
    for (const key of ['o/m', 'o/m:temp', 'o/m:rpm', 'o/m2', 'o/m2:temp']) cache.setIfCurrent(key, 0, key);
    const pending = cache.generation('o/m:temp');
    expect(cache.drop('o/m', (key) => key.startsWith('o/m:'))).toBe(3);
    expect([...['o/m', 'o/m:temp', 'o/m:rpm', 'o/m2', 'o/m2:temp']].filter((k) => cache.has(k))).toEqual(['o/m2', 'o/m2:temp']);
    cache.setIfCurrent('o/m:temp', pending, 'stale');
    expect(cache.has('o/m:temp')).toBe(false);
    // A key that was not cached still gets a newer generation (a load under way loses), and counts 0.
    const loading = cache.generation('o/x');
    expect(cache.drop('o/x')).toBe(0);
    cache.setIfCurrent('o/x', loading, 'stale');
    expect(cache.has('o/x')).toBe(false);
  });

  it('caches nothing with size 0', () => {
    const cache = new GenerationalCache<string>(0);
    cache.replace('m', 'value');
    cache.setIfCurrent('n', cache.generation('n'), 'value');
    expect(cache.size).toBe(0);
  });
});
