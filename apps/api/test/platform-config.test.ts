import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { loadWorkerConfig } from '@adp/stream-worker';
import { loadConfig } from '../src/config.js';
import { AppError, ConfigError } from '../src/errors.js';

function configError(env: Record<string, string>): ConfigError {
  try {
    loadConfig(env);
  } catch (err) {
    if (err instanceof ConfigError) return err;
    throw err;
  }
  throw new Error('expected a ConfigError');
}

describe('loadConfig', () => {
  it('applies the documented defaults', () => {
    const config = loadConfig({});
    expect(config).toEqual({
      port: 8080,
      host: '127.0.0.1',
      dashboardDir: fileURLToPath(new URL('../../dashboard/web', import.meta.url)),
      dataDir: path.resolve('./data'),
      bootstrapApiKey: undefined,
      logLevel: 'info',
      bodyLimitBytes: 4 * 1024 * 1024,
      authCacheTtlMs: 30_000,
      authNegativeCacheTtlMs: 5_000,
      authFailuresPerMinute: 100,
      requestTimeoutMs: 60_000,
      headersTimeoutMs: 10_000,
      keepAliveTimeoutMs: 5_000,
      maxConnections: 4096,
      modelCallsMaxRunning: 4,
      modelCallsMaxQueued: 16,
      apiWorkers: 1,
      vendorDetectionThreads: 0,
      shutdownGraceMs: 10_000,
      predictorCacheSize: 32,
      redisUrl: undefined,
      redisKeyPrefix: 'adp:',
      redisChannelPrefix: '',
      kafkaBrokers: undefined,
      telemetryTopic: 'adp.telemetry.v1',
      clickhouseUrl: undefined,
      clickhouseDatabase: 'adp',
      rateLimitPerMinute: 30_000,
      telemetryMaxPoints: 10_000,
      resultsRetentionDays: 0,
      jobs: {
        topic: 'adp.jobs.v1',
        maxPoints: 1_000_000,
        maxSeries: 1000,
        chunkPoints: 20_000,
        bodyLimitBytes: 128 * 1024 * 1024,
        maxActivePerOrg: 4,
        maxPendingPointsPerOrg: 5_000_000,
        retryAfterSeconds: 5,
      },
      embeddedWorker: true,
      adminToken: undefined,
      freeTierPointsPerMonth: 10_000,
      oidc: undefined,
      dashboard: { sessionTtlMs: 28_800_000, sessionCookieSecure: 'auto', bootstrapAccountEmail: 'admin@localhost', oidcSignIn: undefined },
      webhooks: {
        allowPrivate: false,
        dispatcher: true,
        alertsTopic: 'adp.alerts.v1',
        timeoutMs: 10_000,
        concurrencyPerTarget: 4,
        retries: 20,
        retryMinDelayMs: 5_000,
        retryMaxDelayMs: 7_200_000,
        publicUrl: null,
        deliveryThread: true,
      },
    });
  });

  it('reads the webhook variables and refuses bad ones', () => {
    const config = loadConfig({
      WEBHOOK_ALLOW_PRIVATE: 'true',
      WEBHOOK_DISPATCHER: 'false',
      WEBHOOK_DELIVERY_THREAD: 'false',
      ALERTS_TOPIC: 'alerts-test',
      WEBHOOK_TIMEOUT_MS: '500',
      WEBHOOK_CONCURRENCY: '2',
      WEBHOOK_RETRIES: '0',
      WEBHOOK_RETRY_MIN_DELAY_MS: '10',
      WEBHOOK_RETRY_MAX_DELAY_MS: '20',
      PUBLIC_URL: 'https://adp.example.com',
    });
    expect(config.webhooks).toEqual({
      allowPrivate: true,
      dispatcher: false,
      alertsTopic: 'alerts-test',
      timeoutMs: 500,
      concurrencyPerTarget: 2,
      retries: 0,
      retryMinDelayMs: 10,
      retryMaxDelayMs: 20,
      publicUrl: 'https://adp.example.com',
      deliveryThread: false,
    });
    expect(Object.isFrozen(config.webhooks)).toBe(true);
    for (const [variable, value] of [
      ['WEBHOOK_ALLOW_PRIVATE', 'yes please'],
      ['WEBHOOK_DELIVERY_THREAD', 'sometimes'],
      ['WEBHOOK_TIMEOUT_MS', '50'],
      ['WEBHOOK_CONCURRENCY', '0'],
      ['WEBHOOK_RETRIES', '101'],
      ['ALERTS_TOPIC', 'no spaces'],
      ['PUBLIC_URL', 'ftp://x'],
    ] as const) {
      expect(() => loadConfig({ [variable]: value }), variable).toThrow(expect.objectContaining({ variable }));
    }
    expect(() => loadConfig({ WEBHOOK_RETRY_MIN_DELAY_MS: '100', WEBHOOK_RETRY_MAX_DELAY_MS: '10' })).toThrow(
      expect.objectContaining({ variable: 'WEBHOOK_RETRY_MAX_DELAY_MS' }),
    );
  });

  it('reads the dashboard sign-in variables and refuses bad ones', () => {
    const oidc = { OIDC_ISSUER: 'http://127.0.0.1:9999', OIDC_AUDIENCE: 'adp' };
    const config = loadConfig({ ...oidc, OIDC_CLIENT_ID: 'dashboard', SESSION_TTL_MS: '60000', SESSION_COOKIE_SECURE: 'true' });
    expect(config.dashboard).toEqual({
      sessionTtlMs: 60_000,
      sessionCookieSecure: 'true',
      bootstrapAccountEmail: 'admin@localhost',
      oidcSignIn: { clientId: 'dashboard', clientSecret: undefined, redirectUrl: undefined, scopes: 'openid email profile' },
    });
    const refused = (env: Record<string, string>) => {
      try {
        loadConfig(env);
      } catch (err) {
        return err instanceof ConfigError ? err.variable : 'other error';
      }
      return 'accepted';
    };
    expect(refused({ SESSION_TTL_MS: '59999' })).toBe('SESSION_TTL_MS');
    expect(refused({ SESSION_COOKIE_SECURE: 'yes' })).toBe('SESSION_COOKIE_SECURE');
    expect(refused({ BOOTSTRAP_ACCOUNT_EMAIL: 'Admin' })).toBe('BOOTSTRAP_ACCOUNT_EMAIL');
    expect(refused({ OIDC_CLIENT_ID: 'dashboard' })).toBe('OIDC_ISSUER');
    expect(refused({ ...oidc, OIDC_CLIENT_ID: 'dashboard', OIDC_SCOPES: 'email' })).toBe('OIDC_SCOPES');
  });

  it('reads the streaming variables; the worker leaves the process with Kafka', () => {
    const config = loadConfig({
      REDIS_URL: 'redis://127.0.0.1:6379',
      REDIS_KEY_PREFIX: 'run_1:',
      REDIS_CHANNEL_PREFIX: 'run_1:',
      KAFKA_BROKERS: '127.0.0.1:9092, kafka-2:9093',
      TELEMETRY_TOPIC: 'run_1.telemetry',
      CLICKHOUSE_URL: 'http://127.0.0.1:8123',
      CLICKHOUSE_DATABASE: 'adp_test',
      RATE_LIMIT_PER_MINUTE: '0',
      TELEMETRY_MAX_POINTS: '5',
      RESULTS_RETENTION_DAYS: '90',
    });
    expect(config).toMatchObject({
      redisUrl: 'redis://127.0.0.1:6379',
      redisKeyPrefix: 'run_1:',
      redisChannelPrefix: 'run_1:',
      kafkaBrokers: ['127.0.0.1:9092', 'kafka-2:9093'],
      telemetryTopic: 'run_1.telemetry',
      clickhouseUrl: 'http://127.0.0.1:8123',
      clickhouseDatabase: 'adp_test',
      rateLimitPerMinute: 0,
      resultsRetentionDays: 90,
      telemetryMaxPoints: 5,
      embeddedWorker: false,
    });
    expect(loadConfig({ KAFKA_BROKERS: 'k:9092', EMBEDDED_WORKER: 'true' }).embeddedWorker).toBe(true);
    expect(loadConfig({ EMBEDDED_WORKER: 'false' }).embeddedWorker).toBe(false);
  });

  it('reads every variable and returns a frozen object', () => {
    const config = loadConfig({
      PORT: '0',
      HOST: '127.0.0.1',
      DASHBOARD_DIR: 'web',
      DATA_DIR: '/var/lib/adp',
      BOOTSTRAP_API_KEY: 'svc_live_abcdefghij-_KLMNOP',
      LOG_LEVEL: 'debug',
      BODY_LIMIT_BYTES: '1048576',
      AUTH_CACHE_TTL_MS: '0',
      SHUTDOWN_GRACE_MS: '500',
      PREDICTOR_CACHE_SIZE: '0',
      AUTH_NEGATIVE_CACHE_TTL_MS: '0',
      AUTH_FAILURES_PER_MINUTE: '0',
      REQUEST_TIMEOUT_MS: '300',
      HEADERS_TIMEOUT_MS: '300',
      KEEP_ALIVE_TIMEOUT_MS: '100',
      MAX_CONNECTIONS: '1',
      MODEL_CALLS_MAX_RUNNING: '256',
      MODEL_CALLS_MAX_QUEUED: '0',
      VENDOR_DETECTION_THREADS: '3',
    });
    expect(config).toMatchObject({
      port: 0,
      host: '127.0.0.1',
      dashboardDir: path.resolve('web'),
      dataDir: '/var/lib/adp',
      bootstrapApiKey: 'svc_live_abcdefghij-_KLMNOP',
      logLevel: 'debug',
      bodyLimitBytes: 1048576,
      authCacheTtlMs: 0,
      shutdownGraceMs: 500,
      predictorCacheSize: 0,
      authNegativeCacheTtlMs: 0,
      authFailuresPerMinute: 0,
      requestTimeoutMs: 300,
      headersTimeoutMs: 300,
      keepAliveTimeoutMs: 100,
      maxConnections: 1,
      modelCallsMaxRunning: 256,
      modelCallsMaxQueued: 0,
      vendorDetectionThreads: 3,
    });
    expect(Object.isFrozen(config)).toBe(true);
  });

  it('treats empty variables as unset', () => {
    expect(loadConfig({ PORT: '', BOOTSTRAP_API_KEY: '  ', LOG_LEVEL: '' })).toMatchObject({
      port: 8080,
      bootstrapApiKey: undefined,
      logLevel: 'info',
    });
  });

  it.each([
    ['PORT', 'abc'],
    ['PORT', '65536'],
    ['PORT', '-1'],
    ['PORT', '80.5'],
    ['BODY_LIMIT_BYTES', '10'],
    ['BODY_LIMIT_BYTES', '1e6'],
    ['AUTH_CACHE_TTL_MS', '3600000'],
    ['PREDICTOR_CACHE_SIZE', '4097'],
    ['VENDOR_DETECTION_THREADS', '65'],
    ['VENDOR_DETECTION_THREADS', '-1'],
    ['SHUTDOWN_GRACE_MS', 'soon'],
    ['LOG_LEVEL', 'verbose'],
    ['REDIS_URL', 'localhost:6379'],
    ['REDIS_URL', 'http://127.0.0.1:6379'],
    ['REDIS_KEY_PREFIX', 'has space'],
    ['REDIS_CHANNEL_PREFIX', 'a/b'],
    ['KAFKA_BROKERS', '127.0.0.1'],
    ['TELEMETRY_TOPIC', 'adp telemetry'],
    ['KAFKA_BROKERS', '127.0.0.1:9092,'],
    ['KAFKA_BROKERS', 'host:99999'],
    ['CLICKHOUSE_URL', 'tcp://127.0.0.1:9000'],
    ['CLICKHOUSE_DATABASE', 'adp; DROP TABLE x'],
    ['RATE_LIMIT_PER_MINUTE', '-5'],
    ['TELEMETRY_MAX_POINTS', '0'],
    ['TELEMETRY_MAX_POINTS', '100001'],
    ['RESULTS_RETENTION_DAYS', '-1'],
    ['RESULTS_RETENTION_DAYS', '36501'],
    ['RESULTS_RETENTION_DAYS', '1.5'],
    ['RESULTS_RETENTION_DAYS', '30d'],
    ['JOBS_TOPIC', 'jobs topic'],
    ['JOBS_MAX_POINTS', '11'],
    ['JOBS_MAX_SERIES', '0'],
    ['JOBS_CHUNK_POINTS', '60001'],
    ['JOBS_BODY_LIMIT_BYTES', '1023'],
    ['JOBS_MAX_ACTIVE_PER_ORG', '0'],
    ['JOBS_MAX_PENDING_POINTS_PER_ORG', 'lots'],
    ['JOBS_RETRY_AFTER_SECONDS', '0'],
    ['EMBEDDED_WORKER', 'yes'],
    ['AUTH_NEGATIVE_CACHE_TTL_MS', '60001'],
    ['AUTH_NEGATIVE_CACHE_TTL_MS', '-1'],
    ['AUTH_FAILURES_PER_MINUTE', '1000001'],
    ['AUTH_FAILURES_PER_MINUTE', 'many'],
    ['REQUEST_TIMEOUT_MS', '99'],
    ['REQUEST_TIMEOUT_MS', '600001'],
    ['REQUEST_TIMEOUT_MS', '0'],
    ['HEADERS_TIMEOUT_MS', '99'],
    ['HEADERS_TIMEOUT_MS', '1.5'],
    ['KEEP_ALIVE_TIMEOUT_MS', '0'],
    ['KEEP_ALIVE_TIMEOUT_MS', '600001'],
    ['MAX_CONNECTIONS', '0'],
    ['MAX_CONNECTIONS', '1000001'],
    ['MODEL_CALLS_MAX_RUNNING', '0'],
    ['MODEL_CALLS_MAX_RUNNING', '257'],
    ['MODEL_CALLS_MAX_QUEUED', '-1'],
    ['MODEL_CALLS_MAX_QUEUED', '10001'],
  ])('rejects %s=%s with a ConfigError naming the variable', (variable, value) => {
    const error = configError({ [variable]: value });
    expect(error).toBeInstanceOf(AppError);
    expect(error.code).toBe('ConfigInvalid');
    expect(error.variable).toBe(variable);
    expect(error.message).toContain(variable);
  });

  it('runs API_WORKERS processes only on the scale-out configuration, and says which servers are missing', () => {
    const servers = { CLICKHOUSE_URL: 'http://127.0.0.1:8123', KAFKA_BROKERS: '127.0.0.1:9092', REDIS_URL: 'redis://127.0.0.1:6379' };
    expect(loadConfig({}).apiWorkers).toBe(1);
    expect(loadConfig({ ...servers, API_WORKERS: '4' }).apiWorkers).toBe(4);
    const embedded = configError({ API_WORKERS: '2' });
    expect(embedded.variable).toBe('API_WORKERS');
    expect(embedded.message).toBe(
      'Invalid configuration: API_WORKERS above 1 needs the scale-out configuration (CLICKHOUSE_URL, KAFKA_BROKERS and REDIS_URL; missing CLICKHOUSE_URL, KAFKA_BROKERS, REDIS_URL): the embedded store, bus and caches belong to one process',
    );
    expect(configError({ CLICKHOUSE_URL: servers.CLICKHOUSE_URL, KAFKA_BROKERS: servers.KAFKA_BROKERS, API_WORKERS: '2' }).message).toContain('missing REDIS_URL)');
    for (const bad of ['0', '65', 'two']) expect(configError({ ...servers, API_WORKERS: bad }).variable).toBe('API_WORKERS');
  });

  it('rejects a HEADERS_TIMEOUT_MS above REQUEST_TIMEOUT_MS', () => {
    const error = configError({ REQUEST_TIMEOUT_MS: '1000', HEADERS_TIMEOUT_MS: '1001' });
    expect(error.variable).toBe('HEADERS_TIMEOUT_MS');
    expect(error.message).toContain('REQUEST_TIMEOUT_MS');
    // Unset, the headers timeout follows a request timeout below its default.
    expect(loadConfig({ REQUEST_TIMEOUT_MS: '300' }).headersTimeoutMs).toBe(300);
    expect(loadConfig({ REQUEST_TIMEOUT_MS: '1000', HEADERS_TIMEOUT_MS: '1000' }).headersTimeoutMs).toBe(1000);
  });

  it.each([
    'svc_prod_abcdefghijklmnop',
    'svc_test_short',
    'svc_test_has spaces in it!!',
    'abcdefghijklmnopqrstuvwxyz',
    `svc_live_${'a'.repeat(129)}`,
  ])('rejects BOOTSTRAP_API_KEY %s without echoing it', (value) => {
    const error = configError({ BOOTSTRAP_API_KEY: value });
    expect(error.variable).toBe('BOOTSTRAP_API_KEY');
    expect(error.message).not.toContain(value);
  });

  it('reads the servers the worker shares exactly as the worker does', () => {
    const env = {
      KAFKA_BROKERS: 'k1:9092,k2:9093',
      CLICKHOUSE_URL: 'http://ch:8123',
      CLICKHOUSE_DATABASE: 'adp_x',
      REDIS_URL: 'redis://r:6379',
      REDIS_KEY_PREFIX: 'x:',
      REDIS_CHANNEL_PREFIX: 'y:',
      DATA_DIR: 'state',
      LOG_LEVEL: 'warn',
    };
    const api = loadConfig(env);
    const worker = loadWorkerConfig(env);
    for (const field of ['kafkaBrokers', 'clickhouseUrl', 'clickhouseDatabase', 'redisUrl', 'redisKeyPrefix', 'redisChannelPrefix', 'dataDir', 'logLevel'] as const) {
      expect(worker[field], field).toEqual(api[field]);
    }
    expect(api.dataDir).toBe(path.resolve('state'));
    for (const [variable, value] of [
      ['KAFKA_BROKERS', 'host:99999'],
      ['REDIS_URL', 'redis://'],
      ['REDIS_KEY_PREFIX', 'has space'],
      ['CLICKHOUSE_DATABASE', '1adp'],
    ] as const) {
      expect(configError({ [variable]: value }).variable).toBe(variable);
      expect(() => loadWorkerConfig({ [variable]: value }), variable).toThrow(variable);
    }
  });

  it('reads ADMIN_TOKEN and FREE_TIER_POINTS_PER_MONTH, refusing a short token without echoing it', () => {
    const token = 'a'.repeat(32);
    expect(loadConfig({ ADMIN_TOKEN: token, FREE_TIER_POINTS_PER_MONTH: '0' })).toMatchObject({
      adminToken: token,
      freeTierPointsPerMonth: 0,
    });
    for (const bad of ['short-secret-token', `${'b'.repeat(20)} ${'c'.repeat(20)}`]) {
      let thrown: unknown;
      try {
        loadConfig({ ADMIN_TOKEN: bad });
      } catch (err) {
        thrown = err;
      }
      expect(thrown).toMatchObject({ code: 'ConfigInvalid', variable: 'ADMIN_TOKEN' });
      expect((thrown as Error).message).not.toContain(bad);
    }
    for (const bad of ['-1', '1000000001', '1.5', 'many']) {
      expect(() => loadConfig({ FREE_TIER_POINTS_PER_MONTH: bad }), bad).toThrow(
        expect.objectContaining({ variable: 'FREE_TIER_POINTS_PER_MONTH' }),
      );
    }
  });

  it('accepts both key kinds at the length bounds', () => {
    expect(loadConfig({ BOOTSTRAP_API_KEY: `svc_test_${'a'.repeat(16)}` }).bootstrapApiKey).toBeDefined();
    expect(loadConfig({ BOOTSTRAP_API_KEY: `svc_live_${'Z'.repeat(128)}` }).bootstrapApiKey).toBeDefined();
  });
});

describe('loadConfig: identity-provider tokens', () => {
  const issuer = 'https://login.example.com/tenant/';

  it('reads the OIDC variables with their defaults', () => {
    expect(loadConfig({ OIDC_ISSUER: issuer, OIDC_AUDIENCE: 'api://adp' }).oidc).toEqual({
      issuer,
      audience: 'api://adp',
      jwksUrl: undefined,
      orgClaim: 'org_id',
      clockToleranceS: 30,
      jwksRefreshMinMs: 5_000,
    });
    const config = loadConfig({
      OIDC_ISSUER: 'http://127.0.0.1:8081',
      OIDC_AUDIENCE: 'adp',
      OIDC_JWKS_URL: 'http://localhost:8081/keys',
      OIDC_ORG_CLAIM: 'https://example.com/org',
      OIDC_CLOCK_TOLERANCE_S: '0',
      OIDC_JWKS_REFRESH_MIN_MS: '600000',
    });
    expect(config.oidc).toEqual({
      issuer: 'http://127.0.0.1:8081',
      audience: 'adp',
      jwksUrl: 'http://localhost:8081/keys',
      orgClaim: 'https://example.com/org',
      clockToleranceS: 0,
      jwksRefreshMinMs: 600_000,
    });
    expect(Object.isFrozen(config.oidc)).toBe(true);
  });

  it('needs OIDC_ISSUER and OIDC_AUDIENCE together', () => {
    expect(configError({ OIDC_ISSUER: issuer }).variable).toBe('OIDC_AUDIENCE');
    expect(configError({ OIDC_AUDIENCE: 'adp' }).variable).toBe('OIDC_ISSUER');
    expect(loadConfig({ OIDC_ISSUER: ' ', OIDC_AUDIENCE: '' }).oidc).toBeUndefined();
  });

  it.each([
    ['OIDC_ISSUER', { OIDC_ISSUER: 'not a url', OIDC_AUDIENCE: 'adp' }],
    ['OIDC_ISSUER', { OIDC_ISSUER: 'ftp://login.example.com', OIDC_AUDIENCE: 'adp' }],
    // Keys fetched in clear text from another host could be swapped on the way.
    ['OIDC_ISSUER', { OIDC_ISSUER: 'http://login.example.com', OIDC_AUDIENCE: 'adp' }],
    ['OIDC_JWKS_URL', { OIDC_ISSUER: issuer, OIDC_AUDIENCE: 'adp', OIDC_JWKS_URL: 'http://10.0.0.1/keys' }],
    ['OIDC_ORG_CLAIM', { OIDC_ISSUER: issuer, OIDC_AUDIENCE: 'adp', OIDC_ORG_CLAIM: 'org id' }],
    ['OIDC_CLOCK_TOLERANCE_S', { OIDC_ISSUER: issuer, OIDC_AUDIENCE: 'adp', OIDC_CLOCK_TOLERANCE_S: '301' }],
    ['OIDC_JWKS_REFRESH_MIN_MS', { OIDC_ISSUER: issuer, OIDC_AUDIENCE: 'adp', OIDC_JWKS_REFRESH_MIN_MS: '-1' }],
  ])('refuses a bad %s', (variable, env) => {
    const error = configError(env);
    expect(error.variable).toBe(variable);
    expect(error).toBeInstanceOf(AppError);
  });
});
