import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { envReader, readLogLevel, readServiceServers } from '../src/index.js';

class BadVariable extends Error {
  constructor(
    readonly variable: string,
    detail: string,
  ) {
    super(`${variable} ${detail}`);
  }
}

const reader = (env: Record<string, string>) => envReader(env, (variable, detail) => new BadVariable(variable, detail));

function failure(run: () => unknown): BadVariable {
  try {
    run();
  } catch (err) {
    if (err instanceof BadVariable) return err;
    throw err;
  }
  throw new Error('expected a BadVariable');
}

describe('envReader', () => {
  it('trims values and treats blank ones as unset', () => {
    const read = reader({ A: '  7 ', B: '   ', C: 'x' });
    expect(read.text('A')).toBe('7');
    expect(read.text('B')).toBeUndefined();
    expect(read.integer('A', 1, 0, 10)).toBe(7);
    expect(read.integer('B', 3, 0, 10)).toBe(3);
    expect(read.boolean('MISSING', true)).toBe(true);
  });

  it.each([
    ['integer', () => reader({ N: '11' }).integer('N', 1, 0, 10), 'must be an integer from 0 to 10, got "11"'],
    ['integer', () => reader({ N: '-1' }).integer('N', 1, 0, 10), 'must be an integer from 0 to 10, got "-1"'],
    ['integer', () => reader({ N: '1e3' }).integer('N', 1, 0, 10_000), 'must be an integer from 0 to 10000, got "1e3"'],
    ['boolean', () => reader({ N: 'yes' }).boolean('N', true), 'must be true or false, got "yes"'],
    ['pattern', () => reader({ N: 'a b' }).pattern('N', 'x', /^\S+$/, 'one word'), 'must be one word, got "a b"'],
    ['url', () => reader({ N: 'redis://:secret@' }).url('N', ['redis:']), 'must be a URL (redis://host:port)'],
    ['url', () => reader({ N: 'http://x:1' }).url('N', ['redis:', 'rediss:']), 'must be a URL (redis: or rediss://host:port)'],
    ['brokers', () => reader({ N: 'a:1,b' }).brokers('N'), 'must be a comma-separated list of host:port, got "b"'],
    ['brokers', () => reader({ N: 'a:70000' }).brokers('N'), 'must be a comma-separated list of host:port, got "a:70000"'],
  ])('fails a bad %s with the caller error, naming the variable', (_kind, run, detail) => {
    const error = failure(run);
    expect(error.variable).toBe('N');
    expect(error.message).toBe(`N ${detail}`);
    // A URL may hold a password: it is never echoed.
    expect(error.message).not.toContain('secret');
  });

  it('reads the shared servers with their defaults and rules', () => {
    expect(readServiceServers(reader({}))).toEqual({
      kafkaBrokers: undefined,
      clickhouseUrl: undefined,
      clickhouseDatabase: 'adp',
      redisUrl: undefined,
      redisKeyPrefix: 'adp:',
      redisChannelPrefix: '',
      dataDir: path.resolve('./data'),
    });
    expect(
      readServiceServers(
        reader({
          KAFKA_BROKERS: 'k1:9092, [::1]:9093',
          CLICKHOUSE_URL: 'https://ch:8443',
          CLICKHOUSE_DATABASE: 'adp_2',
          REDIS_URL: 'rediss://r:6380',
          REDIS_KEY_PREFIX: 'run:1:',
          REDIS_CHANNEL_PREFIX: 'run.1:',
          DATA_DIR: '/var/lib/adp',
        }),
      ),
    ).toEqual({
      kafkaBrokers: ['k1:9092', '[::1]:9093'],
      clickhouseUrl: 'https://ch:8443',
      clickhouseDatabase: 'adp_2',
      redisUrl: 'rediss://r:6380',
      redisKeyPrefix: 'run:1:',
      redisChannelPrefix: 'run.1:',
      dataDir: '/var/lib/adp',
    });
    for (const [variable, value] of [
      ['CLICKHOUSE_DATABASE', 'adp; DROP TABLE x'],
      ['CLICKHOUSE_URL', 'tcp://ch:9000'],
      ['REDIS_KEY_PREFIX', 'has space'],
      ['REDIS_CHANNEL_PREFIX', 'a/b'],
      ['KAFKA_BROKERS', 'nohost'],
    ]) {
      expect(failure(() => readServiceServers(reader({ [variable!]: value! }))).variable).toBe(variable);
    }
  });

  it('reads LOG_LEVEL, info by default', () => {
    expect(readLogLevel(reader({}))).toBe('info');
    expect(readLogLevel(reader({ LOG_LEVEL: 'debug' }))).toBe('debug');
    expect(failure(() => readLogLevel(reader({ LOG_LEVEL: 'loud' }))).message).toBe(
      'LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent, got "loud"',
    );
  });
});
