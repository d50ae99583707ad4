// The API's configuration: read from the environment once at boot, validated, frozen and passed
// in. Nothing else in the app reads process.env. An empty variable counts as unset.
import path from 'node:path';
import { ConfigError } from './errors.js';
import { API_KEY_PATTERN } from './tenancy/keys.js';

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

const MIB = 1024 * 1024;

export interface ApiConfig {
  /** `PORT`: TCP port to listen on. Default 8080. 0 picks a free port (tests). */
  readonly port: number;
  /** `HOST`: interface to bind. Default `0.0.0.0` (all IPv4 interfaces, as a container needs). */
  readonly host: string;
  /**
   * `DATA_DIR`: directory for the embedded database (`platform.duckdb`) and the first-start keys
   * file (`bootstrap-keys.json`). Default `./data`, resolved against the working directory at boot.
   * Created when absent. Must not be shared by two running servers (DuckDB allows one writer).
   */
  readonly dataDir: string;
  /**
   * `BOOTSTRAP_API_KEY`: optional key (`svc_test_...` or `svc_live_...`, 16..128 url-safe
   * characters after the prefix) that is created for the default organization when absent, for
   * automation. The kind comes from the prefix. A revoked key of that value stays revoked.
   * Secret: never log the config object as a whole.
   */
  readonly bootstrapApiKey: string | undefined;
  /** `LOG_LEVEL`: pino level, one of fatal, error, warn, info, debug, trace, silent. Default `info`. */
  readonly logLevel: LogLevel;
  /**
   * `BODY_LIMIT_BYTES`: largest request body in bytes, app-wide and for the vendor routes. Default
   * 4 MiB (8,640 points of vendor JSON are about 0.6 MB). Range 1 KiB .. 256 MiB.
   */
  readonly bodyLimitBytes: number;
  /**
   * `AUTH_CACHE_TTL_MS`: how long a successful key lookup is cached in memory, in milliseconds.
   * Default 30000. Caveat: a revoked key keeps working for up to this long on each server that
   * cached it. 0 disables the cache. Range 0 .. 300000.
   */
  readonly authCacheTtlMs: number;
  /**
   * `SHUTDOWN_GRACE_MS`: on SIGINT/SIGTERM, how long in-flight requests get to finish before the
   * process exits anyway, in milliseconds. Default 10000. Range 0 .. 120000.
   */
  readonly shutdownGraceMs: number;
  /**
   * `PREDICTOR_CACHE_SIZE`: how many machines' fine-tuned predictors the native API keeps loaded
   * in memory (least recently used evicted first). Default 32. Each costs about 1.9 MB (462k
   * float32 parameters); a miss reads the weights from the store. 0 disables the cache. Range 0 .. 4096.
   */
  readonly predictorCacheSize: number;
}

/** Validates the environment once. Throws a ConfigError naming the first invalid variable. */
export function loadConfig(env: Readonly<Record<string, string | undefined>>): ApiConfig {
  const read = (name: string): string | undefined => {
    const value = env[name];
    return value === undefined || value.trim() === '' ? undefined : value.trim();
  };

  const bootstrapApiKey = read('BOOTSTRAP_API_KEY');
  if (bootstrapApiKey !== undefined && !API_KEY_PATTERN.test(bootstrapApiKey)) {
    // The value is a secret: say what is wrong without echoing it.
    throw new ConfigError(
      'BOOTSTRAP_API_KEY',
      'must be svc_live_ or svc_test_ followed by 16 to 128 characters from A-Z a-z 0-9 _ -',
    );
  }

  const logLevel = read('LOG_LEVEL') ?? 'info';
  if (!isLogLevel(logLevel)) {
    throw new ConfigError('LOG_LEVEL', `must be one of ${LOG_LEVELS.join(', ')}, got ${JSON.stringify(logLevel)}`);
  }

  return Object.freeze({
    port: integer(read, 'PORT', 8080, 0, 65535),
    host: read('HOST') ?? '0.0.0.0',
    dataDir: path.resolve(read('DATA_DIR') ?? './data'),
    bootstrapApiKey,
    logLevel,
    bodyLimitBytes: integer(read, 'BODY_LIMIT_BYTES', 4 * MIB, 1024, 256 * MIB),
    authCacheTtlMs: integer(read, 'AUTH_CACHE_TTL_MS', 30_000, 0, 300_000),
    shutdownGraceMs: integer(read, 'SHUTDOWN_GRACE_MS', 10_000, 0, 120_000),
    predictorCacheSize: integer(read, 'PREDICTOR_CACHE_SIZE', 32, 0, 4096),
  });
}

function integer(
  read: (name: string) => string | undefined,
  name: string,
  fallback: number,
  min: number,
  max: number,
): number {
  const raw = read(name);
  if (raw === undefined) return fallback;
  const value = /^\d+$/.test(raw) ? Number(raw) : Number.NaN;
  if (!Number.isSafeInteger(value) || value < min || value > max) {
    throw new ConfigError(name, `must be an integer from ${min} to ${max}, got ${JSON.stringify(raw)}`);
  }
  return value;
}

function isLogLevel(value: string): value is LogLevel {
  return (LOG_LEVELS as readonly string[]).includes(value);
}
