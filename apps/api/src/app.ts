// Builds the API as a Fastify instance without starting a server: tests `inject` into it,
// server.ts listens with it. Everything it needs comes in through `config` and `options`.
import Fastify, { type FastifyError, type FastifyInstance, type FastifyServerOptions } from 'fastify';
import swagger from '@fastify/swagger';
import { Type } from 'typebox';
import { isStoreError, openStores, type Store } from '@adp/store';
import { type Bus, type CheckpointStore, closeRedis, type DependencyCheck, type Notifier, type ResultStore } from '@adp/streaming';
import type { JobStore } from '@adp/store';
import type { ApiConfig } from './config.js';
import { limitConnections } from './connections.js';
import { createMeteringClient, type MarketplaceMeteringClient } from './marketplace/client.js';
import { marketplaceOffRoutes, marketplaceRoutes } from './marketplace/routes.js';
import { meteringAdminRoutes } from './marketplace/admin-routes.js';
import { RedisExportLease, StoreExportLease, type ExportLease } from './marketplace/lease.js';
import { createMarketplaceMetrics, type MarketplaceMetrics } from './marketplace/metrics.js';
import { MeteringScheduler } from './marketplace/scheduler.js';
import { SnsVerifier } from './marketplace/sns.js';
import { AppError, ERRORS, definitionForStatus } from './errors.js';
import { answerClientError, answerFrameworkError, RouteMethods, sendMethodNotAllowed, unsupportedMediaTypeMessage } from './http-errors.js';
import { dashboardRoutes } from './dashboard/plugin.js';
import { installDashboardAuth } from './dashboard/install.js';
import { healthRoutes } from './health/routes.js';
import { withKeyRedaction } from './logging.js';
import { MemoryApiKeyCache, RedisApiKeyCache, type ApiKeyCache } from './tenancy/api-key-cache.js';
import { auditRoutes } from './tenancy/audit.js';
import { installAuthentication } from './tenancy/authentication.js';
import { IdentityTokenVerifier } from './tenancy/identity-provider.js';
import { FailedAuthThrottle, MemoryRateLimiter, RedisRateLimiter, type RateLimiter } from './tenancy/rate-limit.js';
import { openRedis } from './tenancy/redis-client.js';
import { telemetryRoutes } from './telemetry/plugin.js';
import { jobRoutes } from './jobs/plugin.js';
import { bootstrapTenancy, type BootstrapResult } from './tenancy/bootstrap.js';
import { AdmissionGate } from './machines/admission.js';
import { loadPackagedModel, type NativeModelFactory } from './machines/model.js';
import { nativeRoutes } from './native/plugin.js';
import { meterDetections } from './tenancy/metering.js';
import { tenancyRoutes } from './tenancy/routes.js';
import { dailyUsageRoutes } from './tenancy/usage-daily-routes.js';
import { adminRoutes } from './admin/routes.js';
import { KeyManager } from './tenancy/key-management.js';
import { keyRoutes } from './tenancy/key-routes.js';
import { installQuota } from './tenancy/quota.js';
import { vendorRoutes } from './vendor/plugin.js';
import { feedbackRoutes } from './feedback/routes.js';
import { episodeRoutes } from './webhooks/episodes.js';
import { webhookRoutes } from './webhooks/routes.js';
import { WebhookDispatcher, type Lookup } from '@adp/alerts';

declare module 'fastify' {
  interface FastifyInstance {
    /** What the first-start bootstrap did on THIS start (plaintext keys only on the first one). */
    readonly bootstrap: BootstrapResult;
    /** The platform store; the app closes it in onClose. */
    readonly store: Store;
  }
}

export interface BuildAppOptions {
  /** Fastify logger: false (default) for none, true or pino options for one. */
  readonly logger?: FastifyServerOptions['logger'];
  /**
   * The store to use instead of opening the embedded one under `config.dataDir`. The app takes
   * ownership: it closes the store when the app closes (or when building fails).
   */
  readonly store?: Store;
  /**
   * Builds the learned model for the native routes, on their first request. Default: the
   * packaged model (@adp/model). Tests pass a shared or fake one.
   */
  readonly model?: NativeModelFactory;
  /**
   * The telemetry bus (in-process or Kafka): POST /v1/telemetry publishes through a producer it
   * opens here (and closes on close). Absent: that route answers 503. The caller owns the bus.
   */
  readonly bus?: Pick<Bus, 'producer'>;
  /**
   * Stored per-point results: GET /v1/machines/{id}/results reads them (absent: 503), and GET
   * /v1/machines and GET /v1/status/{id} add each machine's telemetry summary (absent: null). The
   * caller owns it.
   */
  readonly results?: ResultStore;
  /** Detection jobs' records and results (POST /v1/jobs and the routes under it; absent: 503). The caller owns it. */
  readonly jobs?: JobStore;
  /** The workers' checkpoints: DELETE /v1/machines/{id} removes the machine's. The caller owns it. */
  readonly checkpoints?: CheckpointStore;
  /**
   * Fan-out between replicas: baseline changes (every replica drops its cached predictor) and key
   * revocations (every replica drops its cache entry). Absent: one replica. The caller owns it.
   */
  readonly notifier?: Notifier;
  /**
   * The key-lookup cache and the rate limiter, instead of what the configuration picks (Redis
   * with REDIS_URL, else memory). `rateLimiter: null` turns rate limiting off.
   */
  readonly authCache?: ApiKeyCache;
  readonly rateLimiter?: RateLimiter | null;
  /** What /readyz asks besides the store (the scale-out servers: `Streaming.checks`). Default none. */
  readonly readiness?: readonly DependencyCheck[];
  /** The failed-authentication throttle, instead of one built from AUTH_FAILURES_PER_MINUTE (tests pass a clock). */
  readonly authFailureThrottle?: FailedAuthThrottle;
  /** The native API's admission gate, instead of one built from MODEL_CALLS_MAX_RUNNING and MODEL_CALLS_MAX_QUEUED. */
  readonly modelCalls?: AdmissionGate;
  /**
   * The marketplace metering client, instead of one built from the MARKETPLACE_* variables (tests
   * pass one with static credentials). Used only with MARKETPLACE_PRODUCT_CODE. The caller owns it.
   */
  readonly marketplaceClient?: MarketplaceMeteringClient;
  /** The hourly export's lease, instead of Redis (REDIS_URL) or the store's. */
  readonly meteringLease?: ExportLease;
  /** The marketplace metric, instead of the global meter's (tests). */
  readonly marketplaceMetrics?: MarketplaceMetrics;
  /** Clock in epoch ms for key expiry and the monthly quota, instead of the system clock (tests). */
  readonly nowMs?: () => number;
  /**
   * The bus the workers publish alerts on: with WEBHOOK_DISPATCHER the app consumes it and
   * delivers to the webhook targets (stopped before the app closes). Absent: no deliveries of
   * alerts from this process (tests and redeliveries still work). The caller owns it.
   */
  readonly alertsBus?: Bus;
  /** Name resolution for the webhook address check, instead of the system's (tests). */
  readonly webhookLookup?: Lookup;
}

/** The platform's own error body: the same wrapper as the vendor gateway's 401 (`error.code`, `error.message`). */
const PlatformError = Type.Object(
  { error: Type.Object({ code: Type.String(), message: Type.String() }) },
  { description: 'Missing or invalid API key (the vendor gateway\'s shape), or another platform error' },
);

const RateLimited = Type.Object(
  { error: Type.Object({ code: Type.String(), message: Type.String() }) },
  {
    description:
      "More than RATE_LIMIT_PER_MINUTE requests by this key's organization this minute (code RateLimitExceeded), or AUTH_FAILURES_PER_MINUTE failed authentications from this address (code AuthenticationThrottled); Retry-After says when to retry. Code '429' (the vendor gateway's) on vendor paths.",
  },
);

const OpenApiDocument = Type.Object(
  { openapi: Type.String(), info: Type.Unknown(), paths: Type.Unknown() },
  { additionalProperties: true, description: 'OpenAPI 3.1 document generated from the route schemas' },
);

export async function buildApp(config: ApiConfig, options: BuildAppOptions = {}): Promise<FastifyInstance> {
  const store = options.store ?? (await openStores({ dataDir: config.dataDir }));
  let bootstrap: BootstrapResult;
  let app: FastifyInstance;
  try {
    bootstrap = await bootstrapTenancy(store, { dataDir: config.dataDir, bootstrapApiKey: config.bootstrapApiKey });
    // Path parameters up to 512 characters reach the routes (native machine ids are up to 128
    // and get a coded 400 beyond); Fastify's default of 100 would answer longer ones itself.
    app = Fastify({
      logger: withKeyRedaction(options.logger),
      bodyLimit: config.bodyLimitBytes,
      routerOptions: { maxParamLength: 512 },
      frameworkErrors: answerFrameworkError,
      clientErrorHandler: answerClientError,
      requestTimeout: config.requestTimeoutMs,
      keepAliveTimeout: config.keepAliveTimeoutMs,
      http: {
        headersTimeout: config.headersTimeoutMs,
        requestTimeout: config.requestTimeoutMs,
        keepAliveTimeout: config.keepAliveTimeoutMs,
        // Node checks both timeouts on this interval (30 s by default, which would let a slow
        // client outlive a short timeout by that much).
        connectionsCheckingInterval: Math.max(25, Math.min(1_000, Math.floor(config.requestTimeoutMs / 4))),
      },
    });
    limitConnections(app.server, config.maxConnections);
  } catch (err) {
    await store.close().catch(() => undefined);
    throw err;
  }

  // From here on the store is closed by the app's onClose, also when building fails below.
  app.decorate('bootstrap', bootstrap);
  app.decorate('store', store);
  app.addHook('onClose', async () => {
    await store.close();
  });

  try {
    // JSON only (text/plain is a 415, as documented), and an empty JSON body reads as no body:
    // many HTTP clients send `Content-Type: application/json` on every request, DELETE included.
    // Set before any plugin registers, so every plugin inherits it (the vendor routes set their own).
    const jsonParser = app.getDefaultJsonParser('error', 'error');
    app.removeContentTypeParser(['application/json', 'text/plain']);
    app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
      const text = typeof body === 'string' ? body : body.toString('utf8');
      if (text.trim() === '') {
        done(null, undefined);
        return;
      }
      jsonParser(request, text, done);
    });

    // Which methods each path serves, so an unserved method on a known path is a 405, not a 404.
    const routeMethods = new RouteMethods();
    app.addHook('onRoute', (route) => {
      routeMethods.add(route.url, route.method);
    });

    await app.register(swagger, {
      openapi: {
        openapi: '3.1.0',
        info: {
          title: 'Anomaly detection service',
          version: '0.1.0',
          description:
            'Time-series anomaly and changepoint detection. The /anomalydetector routes are drop-in compatible with Azure AI Anomaly Detector (univariate).',
        },
        components: {
          securitySchemes: {
            subscriptionKey: { type: 'apiKey', in: 'header', name: 'Ocp-Apim-Subscription-Key' },
            serviceKey: { type: 'apiKey', in: 'header', name: 'X-Service-Key' },
            bearerKey: {
              type: 'http',
              scheme: 'bearer',
              description: "The API key as a bearer token; on /v1/ routes also an identity provider's JWT (OIDC_ISSUER)",
            },
            adminToken: { type: 'http', scheme: 'bearer', description: 'ADMIN_TOKEN, for the /admin routes only' },
          },
        },
        security: [{ subscriptionKey: [] }, { serviceKey: [] }, { bearerKey: [] }],
      },
    });

    // Every non-public route documents the 401 and 429 it can answer; the authentication hook
    // sends those bodies itself.
    app.addHook('onRoute', (route) => {
      if (route.config?.public === true) return;
      const schema = route.schema ?? {};
      const response = (schema.response ?? {}) as Record<string, unknown>;
      // A route that validates its params, query or body can answer a 400 in our shape (the vendor
      // routes declare their own); the document says so even where the route does not list it.
      const validates = schema.params !== undefined || schema.querystring !== undefined || schema.body !== undefined;
      const badRequest = validates && !route.url.startsWith('/anomalydetector') && !('400' in response) ? { 400: PlatformError } : {};
      route.schema = {
        ...schema,
        response: {
          ...response,
          ...badRequest,
          ...('401' in response ? {} : { 401: PlatformError }),
          ...('429' in response ? {} : { 429: RateLimited }),
        },
      };
    });

    app.setErrorHandler((error: FastifyError, request, reply) => {
      const { statusCode, code, message } = describeError(error, request.headers['content-type']);
      if (statusCode >= 500) request.log.error({ err: error }, 'request failed');
      else request.log.info({ code, message }, 'request rejected');
      if (statusCode === 503) reply.header('retry-after', '1');
      // Sent as text so the body keeps this shape whatever schema the route declares.
      return reply
        .code(statusCode)
        .type('application/json; charset=utf-8')
        .send(JSON.stringify({ error: { code, message } }));
    });

    app.setNotFoundHandler((request, reply) => {
      const allowed = routeMethods.allowed(request.url.split('?')[0] ?? '');
      if (allowed.length > 0) return sendMethodNotAllowed(request, reply, allowed);
      const route = `${request.method} ${request.url.split('?')[0] ?? ''}`.slice(0, 200);
      return reply
        .code(404)
        .type('application/json; charset=utf-8')
        .send(JSON.stringify({ error: { code: ERRORS.NotFound.code, message: `Route ${route} not found` } }));
    });

    // Redis (REDIS_URL) backs the key cache and the rate limiter unless the caller brought its own.
    const scheduledExport = config.marketplace?.exportSchedule === true && store.metering !== undefined;
    const needsRedis =
      options.authCache === undefined ||
      (options.rateLimiter === undefined && config.rateLimitPerMinute > 0) ||
      (config.marketplace !== undefined && options.meteringLease === undefined);
    const redis = config.redisUrl !== undefined && needsRedis ? await openRedis({ url: config.redisUrl, log: app.log }) : null;
    if (redis) {
      app.addHook('onClose', async () => {
        await closeRedis(redis);
      });
    }
    const authCache =
      options.authCache ??
      (redis ? new RedisApiKeyCache(redis, config.redisKeyPrefix, config.authCacheTtlMs) : new MemoryApiKeyCache(10_000, config.authCacheTtlMs));
    let rateLimiter: RateLimiter | null = null;
    if (options.rateLimiter !== undefined) rateLimiter = options.rateLimiter;
    else if (config.rateLimitPerMinute > 0) {
      rateLimiter = redis
        ? new RedisRateLimiter(redis, config.redisKeyPrefix, config.rateLimitPerMinute)
        : new MemoryRateLimiter(config.rateLimitPerMinute);
    }
    const failureThrottle =
      options.authFailureThrottle ?? (config.authFailuresPerMinute > 0 ? new FailedAuthThrottle(config.authFailuresPerMinute, undefined, options.nowMs) : undefined);
    const dashboardAuth = await installDashboardAuth(app, config, store, failureThrottle ?? null, options.nowMs);
    const identityTokens = config.oidc ? { verifier: new IdentityTokenVerifier(config.oidc), orgClaim: config.oidc.orgClaim } : undefined;
    const authenticator = installAuthentication(app, {
      store,
      cacheTtlMs: config.authCacheTtlMs,
      cache: authCache,
      negativeCacheTtlMs: config.authNegativeCacheTtlMs,
      failuresPerMinute: config.authFailuresPerMinute,
      ...(failureThrottle ? { failureThrottle } : {}),
      ...(dashboardAuth ? { sessions: dashboardAuth.sessions } : {}),
      rateLimiter,
      rateLimitPerMinute: config.rateLimitPerMinute,
      ...(options.notifier ? { notifier: options.notifier } : {}),
      ...(options.nowMs ? { nowMs: options.nowMs } : {}),
      ...(identityTokens ? { identityTokens } : {}),
    });
    installQuota(app, { store, freeTierPointsPerMonth: config.freeTierPointsPerMonth, ...(options.nowMs ? { nowMs: options.nowMs } : {}) });
    if (options.notifier) {
      const unsubscribe = await authenticator.listenForRevocations(options.notifier);
      app.addHook('onClose', async () => {
        await unsubscribe();
      });
    }

    await app.register(healthRoutes, { store, ...(options.readiness ? { checks: options.readiness } : {}) });
    app.get(
      '/openapi.json',
      {
        config: { public: true },
        schema: {
          summary: "This service's OpenAPI document",
          tags: ['meta'],
          security: [],
          response: { 200: OpenApiDocument },
        },
      },
      async () => app.swagger(),
    );
    await app.register(tenancyRoutes, { store, freeTierPointsPerMonth: config.freeTierPointsPerMonth, ...(options.nowMs ? { nowMs: options.nowMs } : {}) });
    await app.register(dailyUsageRoutes, { store, ...(options.nowMs ? { nowMs: options.nowMs } : {}) });
    const keys = new KeyManager(store, authenticator, options.nowMs);
    await app.register(keyRoutes, { keys });
    let marketplaceClient = options.marketplaceClient;
    if (config.marketplace && !marketplaceClient) {
      const owned = createMeteringClient(config.marketplace);
      app.addHook('onClose', async () => {
        owned.destroy();
      });
      marketplaceClient = owned;
    }
    const adminExtensions =
      config.marketplace && marketplaceClient
        ? [
            meteringAdminRoutes(
              store.metering
                ? { store, metering: store.metering, client: marketplaceClient, productCode: config.marketplace.productCode, nowMs: options.nowMs ?? Date.now }
                : null,
            ),
          ]
        : [];
    if (dashboardAuth) adminExtensions.push(dashboardAuth.adminRoutes);
    await app.register(adminRoutes, { adminToken: config.adminToken, store, keys, authenticator, extensions: adminExtensions });
    // Leases between replicas (the hourly export, a subscriber's first key): Redis, else the store.
    const leaseNamed = (name: string): ExportLease | null => {
      if (redis) return new RedisExportLease(redis, `${config.redisKeyPrefix}lease:${name}`);
      return store.leases ? new StoreExportLease(store.leases, name, options.nowMs ?? Date.now) : null;
    };
    if (config.marketplace && marketplaceClient && store.metering && scheduledExport) {
      const nowMs = options.nowMs ?? Date.now;
      let lease = options.meteringLease ?? leaseNamed('metering-export');
      if (lease === null) {
        // Every replica then exports each hour: still billed once (see export.ts), at the cost of duplicate sends.
        app.log.warn('marketplace metering: no lease (set REDIS_URL); every replica runs the hourly export');
        lease = { acquire: () => Promise.resolve({ release: () => Promise.resolve() }) };
      }
      const scheduler = new MeteringScheduler({
        export: { store, metering: store.metering, client: marketplaceClient, productCode: config.marketplace.productCode, nowMs, log: app.log },
        lease,
        delayMs: config.marketplace.exportDelayMs,
        metrics: options.marketplaceMetrics ?? createMarketplaceMetrics(),
        log: app.log,
      });
      app.addHook('onReady', async () => scheduler.start());
      app.addHook('preClose', async () => scheduler.stop());
    }
    await app.register(dashboardRoutes, { webDir: config.dashboardDir });
    if (dashboardAuth) await app.register(dashboardAuth.routes);
    await app.register(auditRoutes, { audit: store.audit });
    if (config.marketplace && marketplaceClient) {
      const marketplace = config.marketplace;
      const nowMs = options.nowMs ?? Date.now;
      const notifications =
        marketplace.snsTopicArn === undefined
          ? undefined
          : {
              topicArn: marketplace.snsTopicArn,
              productCode: marketplace.productCode,
              verifier: new SnsVerifier({ hostPattern: marketplace.snsHostPattern, timeoutMs: marketplace.timeoutMs, nowMs }),
              hostPattern: marketplace.snsHostPattern,
              timeoutMs: marketplace.timeoutMs,
              metering: store.metering ? { store, metering: store.metering, client: marketplaceClient, productCode: marketplace.productCode, nowMs } : null,
              authenticator,
            };
      await app.register(marketplaceRoutes, { config: marketplace, client: marketplaceClient, store, keys, leaseNamed, ...(notifications ? { notifications } : {}) });
    } else {
      await app.register(marketplaceOffRoutes);
    }

    const hourlyCounting = config.marketplace ? { nowMs: options.nowMs ?? Date.now } : undefined;
    const detectionMeter = meterDetections(store, hourlyCounting);
    await app.register(vendorRoutes, {
      onDetected: detectionMeter.onDetected,
      drain: detectionMeter.drain,
      bodyLimitBytes: config.bodyLimitBytes,
      detectionThreads: config.vendorDetectionThreads,
    });
    await app.register(nativeRoutes, {
      store,
      model: options.model ?? loadPackagedModel,
      predictorCacheSize: config.predictorCacheSize,
      modelCalls: options.modelCalls ?? new AdmissionGate({ maxRunning: config.modelCallsMaxRunning, maxQueued: config.modelCallsMaxQueued }),
      ...(options.notifier ? { notifier: options.notifier } : {}),
      ...(options.results ? { results: options.results } : {}),
      ...(options.checkpoints ? { checkpoints: options.checkpoints } : {}),
      ...(hourlyCounting ? { hourlyCounting } : {}),
    });
    const webhooks = config.webhooks;
    const dispatcher = store.alerting
      ? new WebhookDispatcher({
          ...(options.alertsBus ? { bus: options.alertsBus } : {}),
          store: store.alerting,
          config: {
            topic: webhooks.alertsTopic,
            groupId: 'adp-webhooks',
            allowPrivate: webhooks.allowPrivate,
            timeoutMs: webhooks.timeoutMs,
            concurrencyPerTarget: webhooks.concurrencyPerTarget,
            retry: { retries: webhooks.retries, minDelayMs: webhooks.retryMinDelayMs, maxDelayMs: webhooks.retryMaxDelayMs, factor: 2 },
            publicUrl: webhooks.publicUrl,
            deliveryThread: webhooks.deliveryThread,
          },
          logger: app.log.child({ component: 'webhooks' }),
          ...(options.webhookLookup ? { lookup: options.webhookLookup } : {}),
        })
      : null;
    await app.register(webhookRoutes, {
      dispatcher,
      allowPrivate: webhooks.allowPrivate,
      ...(options.nowMs ? { nowMs: options.nowMs } : {}),
      ...(options.webhookLookup ? { lookup: options.webhookLookup } : {}),
    });
    await app.register(episodeRoutes);
    await app.register(feedbackRoutes, {
      ...(options.results ? { results: options.results } : {}),
      ...(options.notifier ? { notifier: options.notifier } : {}),
      ...(options.nowMs ? { nowMs: options.nowMs } : {}),
    });
    if (dispatcher) {
      // Stopped before the store closes: what is in flight stays pending for the next start.
      app.addHook('preClose', async () => dispatcher.stop());
      if (options.alertsBus && webhooks.dispatcher) await dispatcher.start();
    }
    await app.register(telemetryRoutes, {
      store,
      maxPoints: config.telemetryMaxPoints,
      topic: config.telemetryTopic,
      ...(options.bus ? { bus: options.bus } : {}),
      ...(options.results ? { results: options.results } : {}),
    });
    await app.register(jobRoutes, {
      store,
      ...config.jobs,
      ...(options.jobs ? { jobs: options.jobs } : {}),
      ...(options.bus ? { bus: options.bus } : {}),
      ...(hourlyCounting ? { hourlyCounting } : {}),
      ...(options.nowMs ? { nowMs: options.nowMs } : {}),
    });

    await app.ready();
  } catch (err) {
    await app.close().catch(() => undefined);
    throw err;
  }
  return app;
}

/** Status, code and client-safe message for any error reaching the app-wide handler. */
function describeError(error: FastifyError, contentType: string | undefined): { statusCode: number; code: string; message: string } {
  if (error instanceof AppError) {
    const message = error.statusCode >= 500 && error.code === ERRORS.InternalError.code ? 'Internal server error' : error.message;
    return { statusCode: error.statusCode, code: error.code, message };
  }
  if (isStoreError(error)) {
    return {
      statusCode: ERRORS.ServiceUnavailable.statusCode,
      code: ERRORS.ServiceUnavailable.code,
      message: 'The service cannot reach its store right now. Retry shortly.',
    };
  }
  const statusCode = typeof error.statusCode === 'number' && error.statusCode >= 400 && error.statusCode < 600 ? error.statusCode : 500;
  const definition = definitionForStatus(statusCode);
  if (error.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') {
    return { statusCode, code: definition.code, message: unsupportedMediaTypeMessage(contentType) };
  }
  // Fastify's own 4xx messages (bad JSON, body too large, schema validation) are safe to show.
  const message = statusCode < 500 ? error.message : 'Internal server error';
  return { statusCode, code: definition.code, message };
}
