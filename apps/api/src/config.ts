// The API's configuration: read from the environment once at boot, validated, frozen and passed
// in. Nothing else in the app reads process.env. An empty variable counts as unset.
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { DEFAULT_JOB_MAX_POINTS, DEFAULT_JOB_MAX_SERIES } from '@adp/domain';
import { TOPICS } from '@adp/streaming';
import { envReader, type EnvReader, KAFKA_NAME, KAFKA_NAME_TEXT, type LogLevel, readLogLevel, readServiceServers, type ServiceServers } from '@adp/platform';
import { ConfigError } from './errors.js';
import type { MarketplaceConfig } from './marketplace/config.js';
import { API_KEY_PATTERN } from './tenancy/keys.js';

/** The dashboard's sources in this checkout (apps/dashboard/web), found by path: the API imports no other app. */
const DEFAULT_DASHBOARD_DIR = fileURLToPath(new URL('../../dashboard/web/', import.meta.url));

export { LOG_LEVELS, type LogLevel } from '@adp/platform';
export type { MarketplaceConfig } from './marketplace/config.js';

const MIB = 1024 * 1024;


/** The detection jobs' settings (POST /v1/jobs). */
export interface JobsConfig {
  /** `JOBS_TOPIC`: the topic job chunks go to; the job workers consume the same one. Default `adp.jobs.v1`. */
  readonly topic: string;
  /** `JOBS_MAX_POINTS`: most points of one job, all series together. Default 1,000,000. Range 12 .. 10,000,000. */
  readonly maxPoints: number;
  /** `JOBS_MAX_SERIES`: most series of one job. Default 1000. Range 1 .. 100,000. */
  readonly maxSeries: number;
  /**
   * `JOBS_CHUNK_POINTS`: points per JobChunk message. Default 20,000 (about 320 KB with timestamps,
   * under Kafka's default 1 MB message limit). Range 100 .. 60,000.
   */
  readonly chunkPoints: number;
  /**
   * `JOBS_BODY_LIMIT_BYTES`: the largest POST /v1/jobs body, bytes (BODY_LIMIT_BYTES bounds every
   * other route). Default 128 MiB: a million points with ISO timestamps is about 60 MB. Range 1 KiB .. 1 GiB.
   */
  readonly bodyLimitBytes: number;
  /** `JOBS_MAX_ACTIVE_PER_ORG`: jobs one organization may have queued or running. Default 4. Range 1 .. 10,000. */
  readonly maxActivePerOrg: number;
  /**
   * `JOBS_MAX_PENDING_POINTS_PER_ORG`: points one organization may have accepted and not judged
   * yet, all its jobs together (the new job's included). Default 5,000,000. Range 12 .. 1,000,000,000.
   * Checked per replica against the job store: submissions racing on several replicas may pass it by one job each.
   */
  readonly maxPendingPointsPerOrg: number;
  /** `JOBS_RETRY_AFTER_SECONDS`: the Retry-After of the caps' 429s. Default 5. Range 1 .. 3600. */
  readonly retryAfterSeconds: number;
}

/**
 * The API's configuration. The servers (`ServiceServers`, documented there) are read as the worker
 * reads them; what each means for the API:
 * - `DATA_DIR` also holds the first-start keys file (`bootstrap-keys.json`); two running servers
 *   must not share it (DuckDB allows one writer).
 * - `REDIS_URL` carries the API-key lookup cache, per-organization rate limiting and baseline
 *   invalidation across replicas (keys `<prefix>apikey:<hash>`, `<prefix>ratelimit:<organization id>`).
 *   Unset: an in-memory cache and limiter per process, right for one replica; with several and no
 *   Redis, each replica counts its own rate limit.
 * - `KAFKA_BROKERS` unset: the in-process bus, and the stream worker runs inside the API process
 *   (`embeddedWorker`).
 * - `CLICKHOUSE_URL` holds the per-point results and the platform store (organizations, keys,
 *   usage, baselines, machines) for every replica, e.g. `http://user:password@127.0.0.1:8123`.
 *   Unset: `platform.duckdb` and `results.duckdb` under DATA_DIR, both surviving restarts.
 */
export interface ApiConfig extends ServiceServers {
  /** `PORT`: TCP port to listen on. Default 8080. 0 picks a free port (tests). */
  readonly port: number;
  /**
   * `HOST`: interface to bind. Default `127.0.0.1` (loopback only: a quick start is not reachable
   * from the network); `0.0.0.0` for all IPv4 interfaces, as a container needs (the Dockerfile and
   * docker-compose.yml set it).
   */
  readonly host: string;
  /**
   * `DASHBOARD_DIR`: the web dashboard's sources (`index.html`, `main.ts`, `style.css`), which the
   * server bundles on the first request to /dashboard/ and serves. Default the checkout's
   * `apps/dashboard/web`; relative paths resolve against the working directory at boot. A
   * directory that cannot be bundled answers DashboardUnavailable (503) on /dashboard/.
   */
  readonly dashboardDir: string;
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
   * `AUTH_NEGATIVE_CACHE_TTL_MS`: how long a key that was not found (unknown or revoked) is
   * remembered as invalid in this process, in milliseconds, so a flood of bad keys costs one store
   * lookup per key per TTL. Default 5000. Caveat: a key created by another process (or directly in
   * the store) is refused for up to this long if it was tried before it existed; keys created
   * through this process clear their entry at once. 0 disables it. Range 0 .. 60000.
   */
  readonly authNegativeCacheTtlMs: number;
  /**
   * `AUTH_FAILURES_PER_MINUTE`: failed authentications (missing, unknown or revoked key) one
   * client address may make per fixed one-minute window before every request from it that does
   * not carry an already-cached valid key gets a 429 with `Retry-After` until the window ends, with
   * no store lookup. Counted per replica, by the socket's remote address (behind a proxy that is
   * the proxy's). Default 100. 0 turns it off. Range 0 .. 1,000,000.
   */
  readonly authFailuresPerMinute: number;
  /**
   * `REQUEST_TIMEOUT_MS`: longest time a client may take to send a whole request (headers and
   * body), in milliseconds; then the server answers 408 and closes the connection. Bounds slow
   * uploads that would otherwise hold a connection forever. Checked every
   * min(1000, value / 4) ms, so a request is cut at most that much later. Default 60000.
   * Range 100 .. 600000.
   */
  readonly requestTimeoutMs: number;
  /**
   * `HEADERS_TIMEOUT_MS`: longest time a client may take to send a request's headers, in
   * milliseconds. Default 10000, or REQUEST_TIMEOUT_MS when that is lower. Range 100 .. 600000,
   * and at most REQUEST_TIMEOUT_MS.
   */
  readonly headersTimeoutMs: number;
  /**
   * `KEEP_ALIVE_TIMEOUT_MS`: how long an idle keep-alive connection stays open waiting for the
   * next request, in milliseconds. Default 5000 (keep it above a load balancer's idle timeout
   * only if it reuses connections). Range 100 .. 600000.
   */
  readonly keepAliveTimeoutMs: number;
  /**
   * `MAX_CONNECTIONS`: most client connections open at once. A connection beyond it gets a raw
   * `HTTP/1.1 503` with `Retry-After: 1`, `Connection: close` and the error body (code
   * TooManyConnections), and is closed without reaching the routes. Keep it below the process's
   * open-file limit. Default 4096. Range 1 .. 1,000,000.
   */
  readonly maxConnections: number;
  /**
   * `MODEL_CALLS_MAX_RUNNING`: the native API's learned-model work (POST /v1/detect's energies and
   * embeddings, POST /v1/baseline's fine-tuning from a series) that may run at once in this
   * process. Each 8,640-point detection with embeddings holds about 50 MB while it runs. Default 4.
   * Range 1 .. 256.
   */
  readonly modelCallsMaxRunning: number;
  /**
   * `MODEL_CALLS_MAX_QUEUED`: such calls that may wait for a running slot, in arrival order;
   * beyond it a call is refused at once with 503 ServerBusy and `Retry-After: 1`. Default 16.
   * Range 0 .. 10,000.
   */
  readonly modelCallsMaxQueued: number;
  /**
   * `VENDOR_DETECTION_THREADS`: threads that parse, validate and detect the vendor routes'
   * requests (`/anomalydetector/...`) while several are in flight, so that the event loop keeps
   * only the HTTP work, authentication, metering and logging; a lone request is answered on the
   * event loop (no hand-off). Started when the server listens. Default 0 (off): each hand-off
   * costs CPU (the body and the answer are copied between threads), and on the 2-core development
   * machine one thread lowered last/detect's throughput at concurrency 32 (docs/configuration.md).
   * For hosts with cores to spare. Range 0 .. 64.
   */
  readonly vendorDetectionThreads: number;
  /**
   * `API_WORKERS`: processes that serve the API on the one port (node:cluster; connections are
   * handed out in turn), so that the vendor and native routes use more than one core. Default 1
   * (this process serves). Above 1 it needs the scale-out configuration (CLICKHOUSE_URL,
   * KAFKA_BROKERS and REDIS_URL), where every process is a replica like those on other hosts:
   * keys, usage, quotas and rate limits live in ClickHouse and Redis, shared by all. The embedded
   * store, bus and caches belong to one process, so it refuses to start without them. Each
   * process runs everything an API replica runs (the embedded worker with EMBEDDED_WORKER, the
   * webhook dispatcher), as a replica on another host would. Range 1 .. 64.
   */
  readonly apiWorkers: number;
  /**
   * `SHUTDOWN_GRACE_MS`: on SIGINT/SIGTERM, how long in-flight requests get to finish before the
   * process exits anyway, in milliseconds. With the embedded worker, the first half of it lets the
   * worker drain the in-process bus's backlog (what it does not reach stays in the durable log for
   * the next start). Default 10000. Range 0 .. 120000.
   */
  readonly shutdownGraceMs: number;
  /**
   * `PREDICTOR_CACHE_SIZE`: how many machines' fine-tuned predictors the native API keeps loaded
   * in memory (least recently used evicted first). Default 32. Each costs about 1.9 MB (462k
   * float32 parameters); a miss reads the weights from the store. 0 disables the cache. Range 0 .. 4096.
   */
  readonly predictorCacheSize: number;
  /**
   * `TELEMETRY_TOPIC`: the topic POST /v1/telemetry publishes to; the workers must consume the same
   * one (their TELEMETRY_TOPIC). Default `adp.telemetry.v1`. 1..249 of A-Z a-z 0-9 . _ -
   */
  readonly telemetryTopic: string;
  /**
   * `RATE_LIMIT_PER_MINUTE`: requests one organization may make per fixed one-minute window, all
   * its keys together, counted across all replicas when REDIS_URL is set (the counter lives in
   * Redis with the window's expiry, so it also survives a restart). Default 30000 (the vendor's S0 tier: 500 calls/s).
   * Beyond it the answer is a 429 with `Retry-After` (seconds until the window resets). 0 turns
   * rate limiting off. Range 0 .. 10,000,000. If Redis is unreachable, requests are let through
   * (fail open) and the failure is logged.
   */
  readonly rateLimitPerMinute: number;
  /**
   * `TELEMETRY_MAX_POINTS`: most points one `POST /v1/telemetry` call may carry. Default 10000.
   * Range 1 .. 100,000 (BODY_LIMIT_BYTES still bounds the body).
   */
  readonly telemetryMaxPoints: number;
  /** Detection jobs (POST /v1/jobs, docs/jobs.md). */
  readonly jobs: JobsConfig;
  /**
   * `RESULTS_RETENTION_DAYS`: how long stored streaming results are kept, in days of the point's
   * own timestamp (not of its arrival). Default 0: kept until their machine is deleted. Range
   * 0 .. 36,500. Every API process with a value above 0 deletes older results at start and then
   * hourly (ClickHouse 18.16 has no TTL: an `ALTER TABLE ... DELETE` mutation, issued only when
   * there is something to delete; embedded: a DELETE in results.duckdb), so results may outlive
   * the limit by up to an hour.
   */
  readonly resultsRetentionDays: number;
  /**
   * `EMBEDDED_WORKER`: `true` to run the streaming worker inside the API process, `false` not to.
   * Default `true` without KAFKA_BROKERS (so `npm start` alone turns telemetry into results) and
   * `false` with it (workers are deployed apart and scale on their own). The embedded worker
   * reads its own variables (WORKER_*, DEAD_LETTER_TOPIC, TELEMETRY_PARTITIONS, ...) through
   * @adp/stream-worker's loadWorkerConfig; its TELEMETRY_TOPIC must equal the API's.
   */
  readonly embeddedWorker: boolean;
  /**
   * `ADMIN_TOKEN`: the operators' token for the admin API (`/admin/v1/...`, sent as
   * `Authorization: Bearer <token>`). Unset (default): the admin API is off and every /admin path
   * answers 404. At least 32 characters, no whitespace. Secret: never log it.
   */
  readonly adminToken: string | undefined;
  /**
   * `FREE_TIER_POINTS_PER_MONTH`: data points an organization on the `free` plan may send on live
   * keys per calendar month (UTC); beyond it detection answers 403 until the first of the next
   * month. Test keys never count. Default 10000. Range 0 .. 1,000,000,000.
   */
  readonly freeTierPointsPerMonth: number;
  /**
   * Identity-provider tokens (`Authorization: Bearer <JWT>` on the `/v1/` routes), or undefined
   * (default) when OIDC_ISSUER and OIDC_AUDIENCE are unset: then only API keys work. Both or
   * neither. See docs/identity-and-audit.md.
   */
  readonly oidc: OidcConfig | undefined;
  /**
   * The cloud marketplace listing (landing page `/marketplace/landing`), or undefined (default)
   * when MARKETPLACE_PRODUCT_CODE is unset: then every /marketplace path answers 404. See
   * docs/marketplace.md.
   */
  readonly marketplace: MarketplaceConfig | undefined;
  /** Dashboard sign-in: sessions, the first account, OIDC sign-in. See docs/identity-and-audit.md. */
  readonly dashboard: DashboardAuthConfig;
  /** Webhook targets and the alert dispatcher. See docs/webhooks.md. */
  readonly webhooks: WebhooksConfig;
}

export interface WebhooksConfig {
  /**
   * `WEBHOOK_ALLOW_PRIVATE`: `true` lets targets resolve to private, loopback or link-local
   * addresses (a receiver on the same host or network, tests). Default `false`: such targets are
   * refused when created and at every delivery (after DNS resolution; redirects are never followed).
   */
  readonly allowPrivate: boolean;
  /**
   * `WEBHOOK_DISPATCHER`: `true` to deliver alerts from this process (it consumes ALERTS_TOPIC in
   * the consumer group `adp-webhooks`; with several replicas they share its partitions). Default
   * true. `false` on replicas that should only serve the API.
   */
  readonly dispatcher: boolean;
  /** `ALERTS_TOPIC`: where the workers publish alerts. Default adp.alerts.v1; must equal the workers'. */
  readonly alertsTopic: string;
  /** `WEBHOOK_TIMEOUT_MS`: one delivery attempt's limit, ms. Default 10000. Range 100 .. 60000. */
  readonly timeoutMs: number;
  /** `WEBHOOK_CONCURRENCY`: requests in flight per target at most. Default 4. Range 1 .. 64. */
  readonly concurrencyPerTarget: number;
  /**
   * `WEBHOOK_RETRIES`: attempts after the first before the delivery fails and its target is
   * disabled. Default 20 (with the default delays, about a day). Range 0 .. 100.
   */
  readonly retries: number;
  /** `WEBHOOK_RETRY_MIN_DELAY_MS`: wait before the first retry, ms; it doubles each time, with jitter. Default 5000. Range 1 .. 3600000. */
  readonly retryMinDelayMs: number;
  /** `WEBHOOK_RETRY_MAX_DELAY_MS`: longest wait between two attempts, ms. Default 7200000 (2 h). Range 1 .. 86400000, at least the minimum. */
  readonly retryMaxDelayMs: number;
  /** `PUBLIC_URL`: the address people reach this service at, for the machine links in alerts. Default none (links are paths). */
  readonly publicUrl: string | null;
  /**
   * `WEBHOOK_DELIVERY_THREAD`: `true` to make delivery attempts (signing, HTTP) in a thread of their
   * own, so that a burst of deliveries does not take the API's and the embedded worker's thread.
   * Default true. `false`: attempts in the dispatcher's thread.
   */
  readonly deliveryThread: boolean;
}

export interface DashboardAuthConfig {
  /**
   * `SESSION_TTL_MS`: how long a dashboard session lasts from sign-in, in milliseconds; then the
   * user signs in again. Default 28800000 (8 hours). Range 60000 (1 minute) .. 2592000000 (30 days).
   */
  readonly sessionTtlMs: number;
  /**
   * `SESSION_COOKIE_SECURE`: `auto` (default), `true` or `false`. The session cookie carries the
   * Secure attribute unless this is `false`, or `auto` and the request came over plain http to a
   * loopback host (127.0.0.1, localhost, [::1]): the quick start's http://127.0.0.1:8080, where a
   * browser would not send a Secure cookie back. Behind a TLS-terminating proxy keep `auto` or
   * `true` (the request reaches us as http from a non-loopback Host, so `auto` marks it Secure).
   */
  readonly sessionCookieSecure: 'auto' | 'true' | 'false';
  /**
   * `BOOTSTRAP_ACCOUNT_EMAIL`: the email of the dashboard account created at the first start for
   * the default organization (its random password is printed once and saved in
   * `<DATA_DIR>/bootstrap-account.json`, mode 0600). Default `admin@localhost`. Nothing is created
   * once the default organization has an account.
   */
  readonly bootstrapAccountEmail: string;
  /**
   * Dashboard sign-in through the identity provider (authorization code with PKCE), or undefined
   * (default) unless OIDC_ISSUER, OIDC_AUDIENCE and OIDC_CLIENT_ID are set.
   */
  readonly oidcSignIn: OidcSignInConfig | undefined;
}

export interface OidcSignInConfig {
  /** `OIDC_CLIENT_ID`: this dashboard's client id at the provider. */
  readonly clientId: string;
  /**
   * `OIDC_CLIENT_SECRET`: the client's secret for a confidential client (sent as client_secret_basic).
   * Unset (default): a public client, PKCE only. Secret: never logged.
   */
  readonly clientSecret: string | undefined;
  /**
   * `OIDC_REDIRECT_URL`: the callback URL registered at the provider. Default: this server's own
   * `<scheme>://<host>/dashboard/api/oidc/callback`, from the request's Host header.
   */
  readonly redirectUrl: string | undefined;
  /** `OIDC_SCOPES`: scopes asked for, space separated. Default `openid email profile`. */
  readonly scopes: string;
}

export interface OidcConfig {
  /**
   * `OIDC_ISSUER`: the provider's issuer URL, exactly as its tokens' `iss` claim spells it
   * (trailing slash included or not). https, or http on a loopback host only (a JWKS fetched in
   * clear text from elsewhere could be replaced on the way).
   */
  readonly issuer: string;
  /** `OIDC_AUDIENCE`: the `aud` value tokens must carry (this API's identifier at the provider). */
  readonly audience: string;
  /**
   * `OIDC_JWKS_URL`: where the provider's public keys are. Default: the `jwks_uri` of
   * `<issuer>/.well-known/openid-configuration` (discovery, fetched at the first token). Same
   * scheme rule as the issuer.
   */
  readonly jwksUrl: string | undefined;
  /**
   * `OIDC_ORG_CLAIM`: the claim whose string value names the caller's organization (its org_id).
   * Default `org_id`. 1..256 characters without spaces (namespaced claims such as
   * `https://example.com/org` are fine).
   */
  readonly orgClaim: string;
  /**
   * `OIDC_CLOCK_TOLERANCE_S`: seconds of clock skew allowed when checking `exp` and `nbf`.
   * Default 30. Range 0 .. 300.
   */
  readonly clockToleranceS: number;
  /**
   * `OIDC_JWKS_REFRESH_MIN_MS`: least time between two fetches of the JWKS prompted by a token
   * whose key id is unknown (a key rotation), in milliseconds; tokens signed with an unknown key
   * in between are refused without a fetch. Default 5000. Range 0 .. 600000. The keys are also
   * refetched when 10 minutes old.
   */
  readonly jwksRefreshMinMs: number;
}

/** Validates the environment once. Throws a ConfigError naming the first invalid variable. */
export function loadConfig(env: Readonly<Record<string, string | undefined>>): ApiConfig {
  const read = envReader(env, (variable, detail) => new ConfigError(variable, detail));

  const bootstrapApiKey = read.text('BOOTSTRAP_API_KEY');
  if (bootstrapApiKey !== undefined && !API_KEY_PATTERN.test(bootstrapApiKey)) {
    // The value is a secret: say what is wrong without echoing it.
    throw new ConfigError(
      'BOOTSTRAP_API_KEY',
      'must be svc_live_ or svc_test_ followed by 16 to 128 characters from A-Z a-z 0-9 _ -',
    );
  }
  const logLevel = readLogLevel(read);
  const requestTimeoutMs = read.integer('REQUEST_TIMEOUT_MS', 60_000, 100, 600_000);
  const headersTimeoutMs = read.integer('HEADERS_TIMEOUT_MS', Math.min(10_000, requestTimeoutMs), 100, 600_000);
  if (headersTimeoutMs > requestTimeoutMs) {
    // Node refuses a headers timeout above the request timeout; say so at boot instead.
    throw new ConfigError('HEADERS_TIMEOUT_MS', `must be at most REQUEST_TIMEOUT_MS (${requestTimeoutMs}), got ${headersTimeoutMs}`);
  }
  const servers = readServiceServers(read);
  const adminToken = read.text('ADMIN_TOKEN');
  if (adminToken !== undefined && !/^\S{32,512}$/.test(adminToken)) {
    // The value is a secret: say what is wrong without echoing it.
    throw new ConfigError('ADMIN_TOKEN', 'must be 32 to 512 characters without whitespace');
  }
  const oidc = readOidc(read);
  const marketplace = readMarketplace(read);
  const dashboard = readDashboardAuth(read, oidc);
  const webhooks = readWebhooks(read);
  const apiWorkers = read.integer('API_WORKERS', 1, 1, 64);
  if (apiWorkers > 1) {
    const missing = (
      [
        ['CLICKHOUSE_URL', servers.clickhouseUrl],
        ['KAFKA_BROKERS', servers.kafkaBrokers],
        ['REDIS_URL', servers.redisUrl],
      ] as const
    )
      .filter(([, value]) => value === undefined)
      .map(([name]) => name);
    if (missing.length > 0) {
      throw new ConfigError(
        'API_WORKERS',
        `above 1 needs the scale-out configuration (CLICKHOUSE_URL, KAFKA_BROKERS and REDIS_URL; missing ${missing.join(', ')}): the embedded store, bus and caches belong to one process`,
      );
    }
  }

  return Object.freeze({
    ...servers,
    port: read.integer('PORT', 8080, 0, 65535),
    host: read.text('HOST') ?? '127.0.0.1',
    dashboardDir: path.resolve(read.text('DASHBOARD_DIR') ?? DEFAULT_DASHBOARD_DIR),
    bootstrapApiKey,
    logLevel,
    bodyLimitBytes: read.integer('BODY_LIMIT_BYTES', 4 * MIB, 1024, 256 * MIB),
    authCacheTtlMs: read.integer('AUTH_CACHE_TTL_MS', 30_000, 0, 300_000),
    authNegativeCacheTtlMs: read.integer('AUTH_NEGATIVE_CACHE_TTL_MS', 5_000, 0, 60_000),
    authFailuresPerMinute: read.integer('AUTH_FAILURES_PER_MINUTE', 100, 0, 1_000_000),
    requestTimeoutMs,
    headersTimeoutMs,
    keepAliveTimeoutMs: read.integer('KEEP_ALIVE_TIMEOUT_MS', 5_000, 100, 600_000),
    maxConnections: read.integer('MAX_CONNECTIONS', 4096, 1, 1_000_000),
    modelCallsMaxRunning: read.integer('MODEL_CALLS_MAX_RUNNING', 4, 1, 256),
    modelCallsMaxQueued: read.integer('MODEL_CALLS_MAX_QUEUED', 16, 0, 10_000),
    apiWorkers,
    vendorDetectionThreads: read.integer('VENDOR_DETECTION_THREADS', 0, 0, 64),
    shutdownGraceMs: read.integer('SHUTDOWN_GRACE_MS', 10_000, 0, 120_000),
    predictorCacheSize: read.integer('PREDICTOR_CACHE_SIZE', 32, 0, 4096),
    telemetryTopic: read.pattern('TELEMETRY_TOPIC', TOPICS.telemetry, KAFKA_NAME, KAFKA_NAME_TEXT),
    rateLimitPerMinute: read.integer('RATE_LIMIT_PER_MINUTE', 30_000, 0, 10_000_000),
    telemetryMaxPoints: read.integer('TELEMETRY_MAX_POINTS', 10_000, 1, 100_000),
    resultsRetentionDays: read.integer('RESULTS_RETENTION_DAYS', 0, 0, 36_500),
    jobs: Object.freeze({
      topic: read.pattern('JOBS_TOPIC', TOPICS.jobs, KAFKA_NAME, KAFKA_NAME_TEXT),
      maxPoints: read.integer('JOBS_MAX_POINTS', DEFAULT_JOB_MAX_POINTS, 12, 10_000_000),
      maxSeries: read.integer('JOBS_MAX_SERIES', DEFAULT_JOB_MAX_SERIES, 1, 100_000),
      chunkPoints: read.integer('JOBS_CHUNK_POINTS', 20_000, 100, 60_000),
      bodyLimitBytes: read.integer('JOBS_BODY_LIMIT_BYTES', 128 * MIB, 1024, 1024 * MIB),
      maxActivePerOrg: read.integer('JOBS_MAX_ACTIVE_PER_ORG', 4, 1, 10_000),
      maxPendingPointsPerOrg: read.integer('JOBS_MAX_PENDING_POINTS_PER_ORG', 5_000_000, 12, 1_000_000_000),
      retryAfterSeconds: read.integer('JOBS_RETRY_AFTER_SECONDS', 5, 1, 3600),
    }),
    embeddedWorker: read.boolean('EMBEDDED_WORKER', servers.kafkaBrokers === undefined),
    adminToken,
    freeTierPointsPerMonth: read.integer('FREE_TIER_POINTS_PER_MONTH', 10_000, 0, 1_000_000_000),
    oidc,
    marketplace,
    dashboard,
    webhooks,
  });
}

function readWebhooks(read: EnvReader): WebhooksConfig {
  const retryMinDelayMs = read.integer('WEBHOOK_RETRY_MIN_DELAY_MS', 5_000, 1, 3_600_000);
  const retryMaxDelayMs = read.integer('WEBHOOK_RETRY_MAX_DELAY_MS', 7_200_000, 1, 86_400_000);
  if (retryMaxDelayMs < retryMinDelayMs) {
    throw new ConfigError('WEBHOOK_RETRY_MAX_DELAY_MS', `must be at least WEBHOOK_RETRY_MIN_DELAY_MS (${retryMinDelayMs}), got ${retryMaxDelayMs}`);
  }
  const publicUrl = read.url('PUBLIC_URL', ['https:', 'http:']);
  return Object.freeze({
    allowPrivate: read.boolean('WEBHOOK_ALLOW_PRIVATE', false),
    dispatcher: read.boolean('WEBHOOK_DISPATCHER', true),
    deliveryThread: read.boolean('WEBHOOK_DELIVERY_THREAD', true),
    alertsTopic: read.pattern('ALERTS_TOPIC', TOPICS.alerts, KAFKA_NAME, KAFKA_NAME_TEXT),
    timeoutMs: read.integer('WEBHOOK_TIMEOUT_MS', 10_000, 100, 60_000),
    concurrencyPerTarget: read.integer('WEBHOOK_CONCURRENCY', 4, 1, 64),
    retries: read.integer('WEBHOOK_RETRIES', 20, 0, 100),
    retryMinDelayMs,
    retryMaxDelayMs,
    publicUrl: publicUrl ?? null,
  });
}

function readDashboardAuth(read: EnvReader, oidc: OidcConfig | undefined): DashboardAuthConfig {
  const sessionTtlMs = read.integer('SESSION_TTL_MS', 8 * 3_600_000, 60_000, 30 * 86_400_000);
  const sessionCookieSecure = read.pattern('SESSION_COOKIE_SECURE', 'auto', /^(auto|true|false)$/, 'auto, true or false') as 'auto' | 'true' | 'false';
  const bootstrapAccountEmail = read.pattern('BOOTSTRAP_ACCOUNT_EMAIL', 'admin@localhost', /^[^\sA-Z@]{1,64}@[^\sA-Z@]{1,189}$/, 'a lower-case email address');
  const clientId = read.text('OIDC_CLIENT_ID');
  const clientSecret = read.text('OIDC_CLIENT_SECRET');
  const redirectUrl = read.url('OIDC_REDIRECT_URL', ['https:', 'http:']);
  const scopes = read.pattern('OIDC_SCOPES', 'openid email profile', /^openid( [\x21\x23-\x5b\x5d-\x7e]+)*$/, 'space-separated scopes starting with openid');
  if (clientId !== undefined && oidc === undefined) throw new ConfigError('OIDC_ISSUER', 'must be set when OIDC_CLIENT_ID is (dashboard sign-in needs the provider)');
  const oidcSignIn = clientId === undefined ? undefined : Object.freeze({ clientId, clientSecret, redirectUrl, scopes });
  return Object.freeze({ sessionTtlMs, sessionCookieSecure, bootstrapAccountEmail, oidcSignIn });
}

function readMarketplace(read: EnvReader): MarketplaceConfig | undefined {
  const productCode = read.text('MARKETPLACE_PRODUCT_CODE');
  if (productCode !== undefined && !/^[A-Za-z0-9]{1,255}$/.test(productCode)) {
    throw new ConfigError('MARKETPLACE_PRODUCT_CODE', 'must be 1 to 255 of A-Z a-z 0-9');
  }
  const region = read.pattern('MARKETPLACE_REGION', 'us-east-1', /^[a-z]{2}(-[a-z]+)+-\d{1,2}$/, 'an AWS region name such as us-east-1');
  const endpoint = readProviderUrl(read, 'MARKETPLACE_ENDPOINT');
  const timeoutMs = read.integer('MARKETPLACE_TIMEOUT_MS', 10_000, 100, 60_000);
  const exportSchedule = read.boolean('MARKETPLACE_EXPORT_SCHEDULE', true);
  const exportDelayMs = read.integer('MARKETPLACE_EXPORT_DELAY_S', 300, 30, 1800) * 1000;
  const snsTopicArn = read.pattern('MARKETPLACE_SNS_TOPIC_ARN', '', /^arn:aws[a-z-]*:sns:[a-z]{2}(-[a-z]+)+-\d{1,2}:\d{12}:[A-Za-z0-9_-]{1,256}$/, 'an SNS topic ARN');
  const hostPattern = read.text('MARKETPLACE_SNS_HOST_PATTERN');
  let snsHostPattern: RegExp | undefined;
  if (hostPattern !== undefined) {
    try {
      snsHostPattern = new RegExp(`^(?:${hostPattern})$`);
    } catch {
      throw new ConfigError('MARKETPLACE_SNS_HOST_PATTERN', 'must be a regular expression');
    }
  }
  if (productCode === undefined) {
    if (endpoint !== undefined) throw new ConfigError('MARKETPLACE_PRODUCT_CODE', 'must be set when MARKETPLACE_ENDPOINT is');
    return undefined;
  }
  return Object.freeze({
    productCode,
    region,
    endpoint,
    timeoutMs,
    exportSchedule,
    exportDelayMs,
    snsTopicArn: snsTopicArn === '' ? undefined : snsTopicArn,
    snsHostPattern,
  });
}

const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]']);

function readOidc(read: EnvReader): OidcConfig | undefined {
  const issuer = readProviderUrl(read, 'OIDC_ISSUER');
  const audience = read.text('OIDC_AUDIENCE');
  if ((issuer === undefined) !== (audience === undefined)) {
    const missing = issuer === undefined ? 'OIDC_ISSUER' : 'OIDC_AUDIENCE';
    const given = issuer === undefined ? 'OIDC_AUDIENCE' : 'OIDC_ISSUER';
    throw new ConfigError(missing, `must be set when ${given} is (identity-provider tokens need both)`);
  }
  const jwksUrl = readProviderUrl(read, 'OIDC_JWKS_URL');
  const orgClaim = read.pattern('OIDC_ORG_CLAIM', 'org_id', /^\S{1,256}$/, '1 to 256 characters without spaces');
  const clockToleranceS = read.integer('OIDC_CLOCK_TOLERANCE_S', 30, 0, 300);
  const jwksRefreshMinMs = read.integer('OIDC_JWKS_REFRESH_MIN_MS', 5_000, 0, 600_000);
  if (issuer === undefined || audience === undefined) return undefined;
  return Object.freeze({ issuer, audience, jwksUrl, orgClaim, clockToleranceS, jwksRefreshMinMs });
}

/** An https URL, or an http one on a loopback host. */
function readProviderUrl(read: EnvReader, name: string): string | undefined {
  const value = read.url(name, ['https:', 'http:']);
  if (value === undefined) return undefined;
  const url = new URL(value);
  if (url.protocol === 'http:' && !LOOPBACK_HOSTS.has(url.hostname)) {
    throw new ConfigError(name, 'must be an https URL (http only for localhost, 127.0.0.1 or [::1])');
  }
  return value;
}
