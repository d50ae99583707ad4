// Environment variables, read and validated one way for every app: a value is trimmed, an empty
// one counts as unset, and a bad one fails at boot with the app's own error naming the variable.
// `readServiceServers` reads the server settings the API and the worker share, so the two can
// never disagree on what, say, a valid Redis key prefix is.
import path from 'node:path';
import { SQL_IDENTIFIER } from '@adp/store';
import type { ServiceServers } from './open-streaming.js';

/** Makes the app's error for a bad variable (`detail` says what was expected). */
export type EnvFailure = (variable: string, detail: string) => Error;

export interface EnvReader {
  /** The app's error for a bad variable, for checks of its own. */
  failure: EnvFailure;
  /** The trimmed value; undefined when unset or blank. */
  text(name: string): string | undefined;
  /** A decimal integer in [min, max]; `fallback` when unset. */
  integer(name: string, fallback: number, min: number, max: number): number;
  /** `true`/`1` or `false`/`0`; `fallback` when unset. */
  boolean(name: string, fallback: boolean): boolean;
  /** A value `rule` accepts (`ruleText` describes it); `fallback` when unset. */
  pattern(name: string, fallback: string, rule: RegExp, ruleText: string): string;
  /** A URL with one of `protocols` and a host; undefined when unset. Never echoed (it may hold a password). */
  url(name: string, protocols: readonly string[]): string | undefined;
  /** `host:port[,host:port...]`; undefined when unset. */
  brokers(name: string): readonly string[] | undefined;
}

export function envReader(env: Readonly<Record<string, string | undefined>>, fail: EnvFailure): EnvReader {
  const text = (name: string): string | undefined => {
    const value = env[name];
    return value === undefined || value.trim() === '' ? undefined : value.trim();
  };
  return {
    failure: fail,
    text,
    integer(name, fallback, min, max) {
      const raw = text(name);
      if (raw === undefined) return fallback;
      const value = /^\d+$/.test(raw) ? Number(raw) : Number.NaN;
      if (!Number.isSafeInteger(value) || value < min || value > max) {
        throw fail(name, `must be an integer from ${min} to ${max}, got ${JSON.stringify(raw)}`);
      }
      return value;
    },
    boolean(name, fallback) {
      const raw = text(name);
      if (raw === undefined) return fallback;
      if (raw === 'true' || raw === '1') return true;
      if (raw === 'false' || raw === '0') return false;
      throw fail(name, `must be true or false, got ${JSON.stringify(raw)}`);
    },
    pattern(name, fallback, rule, ruleText) {
      const raw = text(name);
      if (raw === undefined) return fallback;
      if (!rule.test(raw)) throw fail(name, `must be ${ruleText}, got ${JSON.stringify(raw)}`);
      return raw;
    },
    url(name, protocols) {
      const raw = text(name);
      if (raw === undefined) return undefined;
      const problem = `must be a URL (${protocols.join(' or ')}//host:port)`;
      let parsed: URL;
      try {
        parsed = new URL(raw);
      } catch {
        throw fail(name, problem);
      }
      if (!protocols.includes(parsed.protocol) || parsed.hostname === '') throw fail(name, problem);
      return raw;
    },
    brokers(name) {
      const raw = text(name);
      if (raw === undefined) return undefined;
      const list = raw.split(',').map((entry) => entry.trim());
      for (const entry of list) {
        const match = /^([A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\]):(\d{1,5})$/.exec(entry);
        const port = Number(match?.[2]);
        if (!match || port < 1 || port > 65535) {
          throw fail(name, `must be a comma-separated list of host:port, got ${JSON.stringify(entry)}`);
        }
      }
      return Object.freeze(list);
    },
  };
}

/** Kafka topic names and consumer group ids: what brokers accept. */
export const KAFKA_NAME = /^[A-Za-z0-9._-]{1,249}$/;
export const KAFKA_NAME_TEXT = '1 to 249 characters from A-Z a-z 0-9 . _ -';

/**
 * The servers and their namespaces, as the API and the worker both read them: each variable, its
 * default and its pattern are documented on `ServiceServers`; a bad value fails with the app's
 * error naming the variable.
 */
export function readServiceServers(read: EnvReader): ServiceServers {
  return {
    kafkaBrokers: read.brokers('KAFKA_BROKERS'),
    clickhouseUrl: read.url('CLICKHOUSE_URL', ['http:', 'https:']),
    clickhouseDatabase: read.pattern(
      'CLICKHOUSE_DATABASE',
      'adp',
      SQL_IDENTIFIER,
      'a plain identifier: a letter or underscore, then up to 62 of A-Z a-z 0-9 _',
    ),
    redisUrl: read.url('REDIS_URL', ['redis:', 'rediss:']),
    redisKeyPrefix: read.pattern('REDIS_KEY_PREFIX', 'adp:', /^[A-Za-z0-9_:.-]{1,64}$/, '1 to 64 characters from A-Z a-z 0-9 _ : . -'),
    redisChannelPrefix: read.pattern('REDIS_CHANNEL_PREFIX', '', /^[A-Za-z0-9_:.-]{0,64}$/, 'up to 64 characters from A-Z a-z 0-9 _ : . -'),
    dataDir: path.resolve(read.text('DATA_DIR') ?? './data'),
  };
}

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/** `LOG_LEVEL`: one of LOG_LEVELS (pino's levels). Default `info`. */
export function readLogLevel(read: EnvReader): LogLevel {
  const level = read.text('LOG_LEVEL') ?? 'info';
  if (!(LOG_LEVELS as readonly string[]).includes(level)) {
    throw read.failure('LOG_LEVEL', `must be one of ${LOG_LEVELS.join(', ')}, got ${JSON.stringify(level)}`);
  }
  return level as LogLevel;
}
