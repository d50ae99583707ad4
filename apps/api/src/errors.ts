// The API's coded error registry. Every error the app raises on purpose is an AppError built from
// one of these definitions: the code is stable (clients and dashboards may match on it), the
// status is what the HTTP edge answers, `retriable` says whether the same request may succeed
// later. Add a definition here instead of throwing strings; never match on `message`.
//
// The vendor-compatible routes keep their own wire codes (InvalidSeries, ...) in vendor/errors.ts;
// this registry covers the platform: configuration, tenancy, health and the generic HTTP edge.

export interface ErrorDefinition {
  /** Stable, PascalCase, unique across the registry (a unit test checks). */
  readonly code: string;
  /** HTTP status the edge answers with; 500 for errors that never reach a client. */
  readonly statusCode: number;
  readonly retriable: boolean;
}

export const ERRORS = {
  /** An environment variable is invalid; the process refuses to start. */
  ConfigInvalid: { code: 'ConfigInvalid', statusCode: 500, retriable: false },
  /** First-start key issuance failed (unwritable DATA_DIR, store failure). */
  BootstrapFailed: { code: 'BootstrapFailed', statusCode: 500, retriable: false },
  /** No key in any of the accepted headers. The wire body is the vendor gateway's (code "401"). */
  MissingSubscriptionKey: { code: 'MissingSubscriptionKey', statusCode: 401, retriable: false },
  /** Unknown, malformed or revoked key. The wire body is the vendor gateway's (code "401"). */
  InvalidSubscriptionKey: { code: 'InvalidSubscriptionKey', statusCode: 401, retriable: false },
  /**
   * An identity-provider token (Bearer JWT on a /v1/ route) was refused: unsigned, HMAC, expired,
   * not yet valid, wrong issuer or audience, unknown signing key, or no (known) organization claim.
   * The message says which.
   */
  InvalidIdentityToken: { code: 'InvalidIdentityToken', statusCode: 401, retriable: false },
  /** Malformed request outside the vendor routes (bad JSON, failed schema validation). */
  BadRequest: { code: 'BadRequest', statusCode: 400, retriable: false },
  /** Native API: `machine_id` missing or not 1..128 of A-Z a-z 0-9 . _ : - starting with a letter or digit. */
  InvalidMachineId: { code: 'InvalidMachineId', statusCode: 400, retriable: false },
  /** Native API: the series (or energies) is missing, too short or long, or has a malformed point. */
  InvalidSeries: { code: 'InvalidSeries', statusCode: 400, retriable: false },
  /**
   * POST /v1/telemetry: `points` missing, empty, longer than TELEMETRY_MAX_POINTS, or a point
   * with a bad timestamp, a non-finite number, or not exactly one of `value` and `channels`.
   */
  InvalidPoints: { code: 'InvalidPoints', statusCode: 400, retriable: false },
  /** Native API: another field has the wrong type or is out of range. */
  InvalidArgument: { code: 'InvalidArgument', statusCode: 400, retriable: false },
  /** Native API: the caller's organization has no baseline for this machine. */
  BaselineNotFound: { code: 'BaselineNotFound', statusCode: 404, retriable: false },
  /** Native API: the caller's organization has no machine of this id. */
  MachineNotFound: { code: 'MachineNotFound', statusCode: 404, retriable: false },
  /** Native API: the learned model could not be loaded or failed to run; the request may succeed on retry. */
  ModelUnavailable: { code: 'ModelUnavailable', statusCode: 503, retriable: true },
  /** No route for this method and path. */
  NotFound: { code: 'NotFound', statusCode: 404, retriable: false },
  /** The path exists under other methods; the `Allow` header lists them. */
  MethodNotAllowed: { code: 'MethodNotAllowed', statusCode: 405, retriable: false },
  /** Node closed the request for arriving too slowly (its request timeout). */
  RequestTimeout: { code: 'RequestTimeout', statusCode: 408, retriable: true },
  /** A path segment longer than the router reads (512 characters). */
  UriTooLong: { code: 'UriTooLong', statusCode: 414, retriable: false },
  /** Request line and headers larger than Node accepts (its max header size, 16 KiB by default). */
  RequestHeaderFieldsTooLarge: { code: 'RequestHeaderFieldsTooLarge', statusCode: 431, retriable: false },
  /** Body larger than BODY_LIMIT_BYTES. */
  PayloadTooLarge: { code: 'PayloadTooLarge', statusCode: 413, retriable: false },
  /** The key's organization made more than RATE_LIMIT_PER_MINUTE requests in this minute; `Retry-After` says when to retry. */
  RateLimitExceeded: { code: 'RateLimitExceeded', statusCode: 429, retriable: true },
  /**
   * The client address failed authentication more than AUTH_FAILURES_PER_MINUTE times this minute;
   * `Retry-After` says when to retry. The wire code on vendor paths is the gateway's "429".
   */
  AuthenticationThrottled: { code: 'AuthenticationThrottled', statusCode: 429, retriable: true },
  /** Admin API: no `Authorization: Bearer <ADMIN_TOKEN>`, or another token. */
  AdminUnauthorized: { code: 'AdminUnauthorized', statusCode: 401, retriable: false },
  /** Admin API: no organization of this id; GET /v1/usage/summary: the caller's was removed. */
  OrganizationNotFound: { code: 'OrganizationNotFound', statusCode: 404, retriable: false },
  /** Admin API: another organization has this external id. */
  ExternalIdTaken: { code: 'ExternalIdTaken', statusCode: 409, retriable: false },
  /** Admin API: the organization is disabled; its keys cannot be changed. */
  OrganizationDisabled: { code: 'OrganizationDisabled', statusCode: 409, retriable: false },
  /** /v1/keys: the calling key may not manage keys (test keys never may). */
  KeyManagementForbidden: { code: 'KeyManagementForbidden', statusCode: 403, retriable: false },
  /** The organization has no key of this id. */
  KeyNotFound: { code: 'KeyNotFound', statusCode: 404, retriable: false },
  /** Rotation of a key that is revoked, expired or already rotated. */
  KeyNotActive: { code: 'KeyNotActive', statusCode: 409, retriable: false },
  /** Revoking this key would leave the organization without a live key that does not expire. */
  LastLiveKey: { code: 'LastLiveKey', statusCode: 409, retriable: false },
  /**
   * A `free` organization used its FREE_TIER_POINTS_PER_MONTH data points this calendar month (UTC)
   * on live keys; `X-Quota-Renews-At` says when it renews. The wire code on vendor paths is "403".
   */
  QuotaExceeded: { code: 'QuotaExceeded', statusCode: 403, retriable: false },
  /** MAX_CONNECTIONS connections are open; written raw on the socket, which is then closed. */
  TooManyConnections: { code: 'TooManyConnections', statusCode: 503, retriable: true },
  /** MODEL_CALLS_MAX_RUNNING learned-model calls run and MODEL_CALLS_MAX_QUEUED wait; `Retry-After` says when to retry. */
  ServerBusy: { code: 'ServerBusy', statusCode: 503, retriable: true },
  /** Content type the route cannot parse. */
  UnsupportedMediaType: { code: 'UnsupportedMediaType', statusCode: 415, retriable: false },
  /** The web dashboard's bundle could not be built (a broken install); the log has esbuild's errors. */
  DashboardUnavailable: { code: 'DashboardUnavailable', statusCode: 503, retriable: false },
  /** Marketplace landing: no registration token, or the marketplace says it is invalid or expired. */
  MarketplaceTokenInvalid: { code: 'MarketplaceTokenInvalid', statusCode: 400, retriable: false },
  /** Marketplace landing: the token is a subscription to another product than MARKETPLACE_PRODUCT_CODE. */
  MarketplaceProductMismatch: { code: 'MarketplaceProductMismatch', statusCode: 400, retriable: false },
  /** Marketplace landing: the token's customer has a disabled organization here. */
  MarketplaceCustomerDisabled: { code: 'MarketplaceCustomerDisabled', statusCode: 403, retriable: false },
  /** The marketplace's metering service could not be reached or failed (throttling, outage, credentials). */
  MarketplaceUnavailable: { code: 'MarketplaceUnavailable', statusCode: 503, retriable: true },
  /** Marketplace notifications: the body is not an SNS message we handle (malformed, missing fields). */
  SnsMessageInvalid: { code: 'SnsMessageInvalid', statusCode: 400, retriable: false },
  /** Marketplace notifications: the SNS signature, its certificate URL or the topic is not one we trust. */
  SnsSignatureInvalid: { code: 'SnsSignatureInvalid', statusCode: 403, retriable: false },
  /** Metering export: the hour has not ended yet (only finished UTC hours are exported). */
  MeteringHourNotFinished: { code: 'MeteringHourNotFinished', statusCode: 409, retriable: true },
  /** Admin API: an account with this email exists (in any organization). */
  AccountExists: { code: 'AccountExists', statusCode: 409, retriable: false },
  /** Dashboard sign-in: unknown email or wrong password (which one is not said). */
  InvalidCredentials: { code: 'InvalidCredentials', statusCode: 401, retriable: false },
  /** A dashboard session cookie that is unknown, signed out, expired, or of a disabled organization. */
  InvalidSession: { code: 'InvalidSession', statusCode: 401, retriable: false },
  /** A state-changing call with the session cookie but without the session's X-CSRF-Token, or from another origin. */
  CsrfRejected: { code: 'CsrfRejected', statusCode: 403, retriable: false },
  /** Dashboard OIDC sign-in: not configured, or the provider's answer was refused (state, code, token, organization claim). */
  OidcSignInFailed: { code: 'OidcSignInFailed', statusCode: 400, retriable: false },
  /** Detection jobs: the caller's organization has no job of this id (another organization's job included). */
  JobNotFound: { code: 'JobNotFound', statusCode: 404, retriable: false },
  /** POST /v1/jobs: this Idempotency-Key was used by the organization for a job with other series or options. */
  IdempotencyKeyReused: { code: 'IdempotencyKeyReused', statusCode: 409, retriable: false },
  /** POST /v1/jobs: the organization has JOBS_MAX_ACTIVE_PER_ORG jobs queued or running; `Retry-After` says when to try again. */
  TooManyActiveJobs: { code: 'TooManyActiveJobs', statusCode: 429, retriable: true },
  /**
   * POST /v1/jobs: the job's points and the organization's points not judged yet would pass
   * JOBS_MAX_PENDING_POINTS_PER_ORG; `Retry-After` says when to try again.
   */
  TooManyPendingPoints: { code: 'TooManyPendingPoints', statusCode: 429, retriable: true },
  /** /v1/webhooks: the organization has no webhook target of this id. */
  WebhookNotFound: { code: 'WebhookNotFound', statusCode: 404, retriable: false },
  /** /v1/webhooks: the target has no delivery of this id in its log. */
  DeliveryNotFound: { code: 'DeliveryNotFound', statusCode: 404, retriable: false },
  /** /v1/webhooks: `url` is not an absolute http(s) URL, or it carries credentials. */
  WebhookUrlInvalid: { code: 'WebhookUrlInvalid', statusCode: 400, retriable: false },
  /** /v1/webhooks: `url`'s host resolves to a private, loopback or link-local address (WEBHOOK_ALLOW_PRIVATE is off). */
  WebhookUrlForbidden: { code: 'WebhookUrlForbidden', statusCode: 400, retriable: false },
  /** /v1/webhooks: `url`'s host does not resolve. */
  WebhookUrlUnresolvable: { code: 'WebhookUrlUnresolvable', statusCode: 400, retriable: true },
  /** /v1/webhooks: `events` is empty or names an event that does not exist. */
  UnknownWebhookEvent: { code: 'UnknownWebhookEvent', statusCode: 400, retriable: false },
  /** Feedback: `from`/`to` not ISO 8601 timestamps with `from` before `to`, or `label` unknown. */
  InvalidFeedback: { code: 'InvalidFeedback', statusCode: 400, retriable: false },
  /** Feedback: the machine has no feedback of this id. */
  FeedbackNotFound: { code: 'FeedbackNotFound', statusCode: 404, retriable: false },
  /** The store is unreachable or closing; the request may succeed on retry. */
  ServiceUnavailable: { code: 'ServiceUnavailable', statusCode: 503, retriable: true },
  /** A bug. The client sees a generic message; the log has the cause. */
  InternalError: { code: 'InternalError', statusCode: 500, retriable: false },
} as const satisfies Record<string, ErrorDefinition>;

export type ErrorName = keyof typeof ERRORS;
export type ErrorCode = (typeof ERRORS)[ErrorName]['code'];

export class AppError extends Error {
  override name = 'AppError';
  readonly code: ErrorCode;
  readonly statusCode: number;
  readonly retriable: boolean;

  constructor(definition: (typeof ERRORS)[ErrorName], message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = definition.code;
    this.statusCode = definition.statusCode;
    this.retriable = definition.retriable;
  }
}

/** A configuration variable is missing or invalid. `variable` names it (e.g. `PORT`). */
export class ConfigError extends AppError {
  override name = 'ConfigError';
  readonly variable: string;

  constructor(variable: string, problem: string) {
    super(ERRORS.ConfigInvalid, `Invalid configuration: ${variable} ${problem}`);
    this.variable = variable;
  }
}

/** The registry's codes, for the uniqueness test and for documentation. */
export function registeredErrorCodes(): readonly string[] {
  return Object.values(ERRORS).map((definition) => definition.code);
}

/** The AppError definition for an HTTP status raised by Fastify itself (parsing, limits). */
export function definitionForStatus(statusCode: number): (typeof ERRORS)[ErrorName] {
  switch (statusCode) {
    case 404:
      return ERRORS.NotFound;
    case 405:
      return ERRORS.MethodNotAllowed;
    case 408:
      return ERRORS.RequestTimeout;
    case 414:
      return ERRORS.UriTooLong;
    case 431:
      return ERRORS.RequestHeaderFieldsTooLarge;
    case 413:
      return ERRORS.PayloadTooLarge;
    case 415:
      return ERRORS.UnsupportedMediaType;
    case 429:
      return ERRORS.RateLimitExceeded;
    case 503:
      return ERRORS.ServiceUnavailable;
    default:
      return statusCode >= 400 && statusCode < 500 ? ERRORS.BadRequest : ERRORS.InternalError;
  }
}
