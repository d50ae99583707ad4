// The marketplace's landing page (`/marketplace/landing`): a new subscriber arrives with a
// registration token, we resolve it to a customer and provision their organization and key. The
// answer is always a page for a person, never JSON and never a 500.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { isStoreError, type Store } from '@adp/store';
import type { MarketplaceConfig } from '../config.js';
import { AppError, ERRORS } from '../errors.js';
import type { KeyManager } from '../tenancy/key-management.js';
import { MAX_TOKEN_LENGTH, resolveCustomer, type MarketplaceMeteringClient } from './client.js';
import type { ExportLease } from './lease.js';
import { notificationRoutes, type NotificationOptions } from './notifications.js';
import { existingPage, problemPage, welcomePage } from './page.js';
import { provisionCustomer } from './provisioning.js';

/** The query parameter a marketplace redirect carries the token in. */
export const TOKEN_QUERY_PARAMETER = 'x-cloud-marketplace-token';
/** The form field AWS Marketplace posts the token in. */
export const TOKEN_FORM_FIELD = 'x-amzn-marketplace-token';

export interface MarketplaceRoutesOptions {
  readonly config: MarketplaceConfig;
  readonly client: MarketplaceMeteringClient;
  readonly store: Store;
  readonly keys: KeyManager;
  /** A lease between replicas by name; null where there is none (ClickHouse without Redis). */
  readonly leaseNamed?: (name: string) => ExportLease | null;
  /** `POST /marketplace/notifications`, when MARKETPLACE_SNS_TOPIC_ARN is set. */
  readonly notifications?: NotificationOptions;
}

/** The token from the form body or the query; null when neither has one. */
function registrationToken(request: FastifyRequest): string | null {
  const candidates: unknown[] = [];
  if (request.body !== null && typeof request.body === 'object') {
    const body = request.body as Record<string, unknown>;
    candidates.push(body[TOKEN_FORM_FIELD], body[TOKEN_QUERY_PARAMETER]);
  }
  const query = request.query as Record<string, unknown>;
  candidates.push(query[TOKEN_QUERY_PARAMETER], query[TOKEN_FORM_FIELD]);
  for (const candidate of candidates) {
    if (typeof candidate === 'string' && candidate.trim() !== '') return candidate.trim();
  }
  return null;
}

const PROBLEMS: Record<string, { readonly title: string; readonly explanation: string }> = {
  [ERRORS.MarketplaceTokenInvalid.code]: {
    title: 'This registration link is not valid',
    explanation:
      'The marketplace did not accept the registration token: it is missing, invalid or expired. Open the product from your marketplace subscriptions again ("Set up your account") to get a fresh link.',
  },
  [ERRORS.MarketplaceProductMismatch.code]: {
    title: 'This registration is for another product',
    explanation: 'The registration token belongs to a subscription to a different product. Open this product from your marketplace subscriptions.',
  },
  [ERRORS.MarketplaceCustomerDisabled.code]: {
    title: 'This subscription is disabled',
    explanation: 'The organization of this subscription has been disabled. Contact support if you believe this is a mistake.',
  },
};

const UNAVAILABLE = {
  title: 'Please try again in a moment',
  explanation: 'We could not complete your registration right now (the marketplace or our service is temporarily unavailable). Reload this page in a minute; nothing was charged twice.',
};

/**
 * While the marketplace is off (no MARKETPLACE_PRODUCT_CODE), its paths are unknown routes (404)
 * for everyone, without asking for an API key.
 */
export async function marketplaceOffRoutes(app: FastifyInstance): Promise<void> {
  app.all('/marketplace/*', { config: { public: true }, schema: { hide: true } }, async (request, reply) => {
    const route = `${request.method} ${request.url.split('?')[0] ?? ''}`.slice(0, 200);
    return reply
      .code(404)
      .type('application/json; charset=utf-8')
      .send(JSON.stringify({ error: { code: ERRORS.NotFound.code, message: `Route ${route} not found` } }));
  });
}

export async function marketplaceRoutes(app: FastifyInstance, options: MarketplaceRoutesOptions): Promise<void> {
  const { config, client, store, keys } = options;
  if (options.notifications) await notificationRoutes(app, options.notifications);

  // The marketplace posts an HTML form; only this plugin's routes read that content type.
  app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string', bodyLimit: 2 * MAX_TOKEN_LENGTH }, (_request, body, done) => {
    const text = typeof body === 'string' ? body : body.toString('utf8');
    done(null, Object.fromEntries(new URLSearchParams(text)));
  });

  const landing = async (request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> => {
    // The page may show a key: never cache it, never leak the URL (with its token) onwards.
    reply
      .type('text/html; charset=utf-8')
      .header('cache-control', 'no-store')
      .header('referrer-policy', 'no-referrer')
      .header('x-content-type-options', 'nosniff')
      .header('content-security-policy', "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'");
    try {
      const token = registrationToken(request);
      if (token === null || token.length > MAX_TOKEN_LENGTH) {
        throw new AppError(ERRORS.MarketplaceTokenInvalid, 'No usable registration token in the request.');
      }
      const customer = await resolveCustomer(client, token);
      if (customer.productCode !== config.productCode) {
        throw new AppError(ERRORS.MarketplaceProductMismatch, `The token is for product ${JSON.stringify(customer.productCode)}.`);
      }
      const { organization, liveKey } = await provisionCustomer(store, keys, customer, options.leaseNamed);
      request.log.info({ orgId: organization.id, externalId: organization.externalId, keyIssued: liveKey !== null }, 'marketplace subscriber landed');
      return await reply.code(200).send(liveKey === null ? existingPage(organization) : welcomePage(organization, liveKey));
    } catch (err) {
      const problem = err instanceof AppError ? PROBLEMS[err.code] : undefined;
      if (err instanceof AppError && problem !== undefined) {
        request.log.info({ code: err.code, message: err.message }, 'marketplace registration refused');
        return reply.code(err.statusCode).send(problemPage(problem.title, problem.explanation));
      }
      // The marketplace, the store or a bug: the subscriber can only retry, and the log says why.
      const expected =
        (err instanceof AppError && (err.code === ERRORS.MarketplaceUnavailable.code || err.code === ERRORS.ServiceUnavailable.code)) || isStoreError(err);
      request.log[expected ? 'warn' : 'error']({ err }, 'marketplace registration failed');
      return reply.code(503).header('retry-after', '5').send(problemPage(UNAVAILABLE.title, UNAVAILABLE.explanation));
    }
  };

  app.route({
    method: ['GET', 'POST'],
    url: '/marketplace/landing',
    config: { public: true },
    schema: {
      summary: "The marketplace's landing page: resolves the registration token and provisions the subscriber (HTML)",
      tags: ['marketplace'],
      security: [],
    },
    handler: landing,
  });
}
