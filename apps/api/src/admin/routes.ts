// The operators' API: organizations and their keys. Off unless ADMIN_TOKEN is set; then every
// /admin route needs `Authorization: Bearer <ADMIN_TOKEN>` (an API key never works here). Unset,
// every /admin path answers 404, as if the routes did not exist. The routes skip API-key
// authentication (`public`) and check the admin token in their own hook.
import { createHash, randomUUID, timingSafeEqual } from 'node:crypto';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import type { Organization, Store } from '@adp/store';
import { AppError, ERRORS } from '../errors.js';
import { audit } from '../tenancy/audit.js';
import type { ApiKeyAuthenticator } from '../tenancy/authentication.js';
import type { KeyManager } from '../tenancy/key-management.js';
import { CreateKeyBody, ErrorBody, IssuedKey, KeyList, KeyView } from '../tenancy/key-schemas.js';

export interface AdminRoutesOptions {
  /** ADMIN_TOKEN; undefined turns the admin API off. */
  readonly adminToken: string | undefined;
  readonly store: Store;
  readonly keys: KeyManager;
  readonly authenticator: ApiKeyAuthenticator;
  /** Further admin routes (other capabilities'), registered behind the same token check. */
  readonly extensions?: readonly FastifyPluginAsync[];
}

const NAME_MAX_LENGTH = 200;

const PlanSchema = Type.Union([Type.Literal('free'), Type.Literal('paid')]);

const OrganizationView = Type.Object({
  org_id: Type.String(),
  name: Type.String(),
  plan: PlanSchema,
  external_id: Type.Union([Type.String(), Type.Null()]),
  created_at: Type.String({ format: 'date-time' }),
  disabled_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
});

const CreatedOrganization = Type.Object(
  { ...OrganizationView.properties, keys: Type.Array(IssuedKey, { description: 'One live and one test key, shown this once.' }) },
  { description: 'The new organization and its first keys.' },
);

const CreateOrganizationBody = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: NAME_MAX_LENGTH }),
    plan: Type.Union([Type.Literal('free'), Type.Literal('paid')], { description: 'free: FREE_TIER_POINTS_PER_MONTH a month; paid: no quota.' }),
    external_id: Type.Optional(
      Type.String({ minLength: 1, maxLength: NAME_MAX_LENGTH, description: "Your own id for it (e.g. an identity provider's); unique." }),
    ),
  },
  { additionalProperties: false },
);

/** Who the audit log names for an admin API call: whoever holds ADMIN_TOKEN. */
const ADMIN_ACTOR = { kind: 'admin', id: 'admin' } as const;

const OrgParams = Type.Object({ org_id: Type.String({ maxLength: 128 }) });
const OrgKeyParams = Type.Object({ org_id: Type.String({ maxLength: 128 }), key_id: Type.String({ maxLength: 128 }) });

function organizationView(organization: Organization) {
  return {
    org_id: organization.id,
    name: organization.name,
    plan: organization.plan,
    external_id: organization.externalId,
    created_at: organization.createdAt.toISOString(),
    disabled_at: organization.disabledAt?.toISOString() ?? null,
  };
}

/** SHA-256 of the token: equal-length digests for timingSafeEqual, whatever the input's length. */
function digest(text: string): Buffer {
  return createHash('sha256').update(text, 'utf8').digest();
}

function sendError(reply: FastifyReply, definition: (typeof ERRORS)[keyof typeof ERRORS], message: string): FastifyReply {
  return reply
    .code(definition.statusCode)
    .type('application/json; charset=utf-8')
    .send(JSON.stringify({ error: { code: definition.code, message } }));
}

export const adminRoutes: FastifyPluginAsyncTypebox<AdminRoutesOptions> = async (app, options) => {
  const publicRoute = { public: true } as const;
  const { adminToken, store, keys } = options;

  if (adminToken === undefined) {
    app.all('/admin/*', { config: publicRoute, schema: { hide: true } }, async (request, reply) =>
      sendError(reply, ERRORS.NotFound, `Route ${`${request.method} ${request.url.split('?')[0] ?? ''}`.slice(0, 200)} not found`),
    );
    return;
  }

  const expected = digest(adminToken);
  app.addHook('onRequest', async (request: FastifyRequest, reply: FastifyReply) => {
    const header = request.headers.authorization;
    const bearer = typeof header === 'string' ? /^Bearer\s+(\S+)\s*$/i.exec(header)?.[1] : undefined;
    if (bearer === undefined) {
      request.log.info({ code: ERRORS.AdminUnauthorized.code }, 'admin request without a token');
      return sendError(reply, ERRORS.AdminUnauthorized, 'The admin API needs Authorization: Bearer <ADMIN_TOKEN>.');
    }
    if (!timingSafeEqual(digest(bearer), expected)) {
      request.log.info({ code: ERRORS.AdminUnauthorized.code }, 'admin request with a wrong token');
      return sendError(reply, ERRORS.AdminUnauthorized, 'The admin token is not valid.');
    }
    return undefined;
  });

  const requireOrganization = async (orgId: string): Promise<Organization> => {
    const organization = await store.getOrganization(orgId);
    if (!organization) throw new AppError(ERRORS.OrganizationNotFound, `No organization ${JSON.stringify(orgId)}.`);
    return organization;
  };
  const requireEnabled = async (orgId: string): Promise<Organization> => {
    const organization = await requireOrganization(orgId);
    if (organization.disabledAt !== null) {
      throw new AppError(ERRORS.OrganizationDisabled, `Organization ${JSON.stringify(orgId)} is disabled; its keys cannot change.`);
    }
    return organization;
  };
  const TAGS = ['admin'];
  const security = [{ adminToken: [] }];
  const errors = { 400: ErrorBody, 401: ErrorBody, 404: ErrorBody, 409: ErrorBody };

  app.post(
    '/admin/v1/organizations',
    {
      config: publicRoute,
      schema: { summary: 'Create an organization with a live and a test key', tags: TAGS, security, body: CreateOrganizationBody, response: { 201: CreatedOrganization, ...errors } },
    },
    async (request, reply) => {
      const { name, plan, external_id: externalId } = request.body;
      // Checked, not guaranteed: two creations with the same external id at the same moment can
      // both pass (the ClickHouse store has no unique constraints).
      if (externalId !== undefined && (await store.findOrganizationByExternalId(externalId))) {
        throw new AppError(ERRORS.ExternalIdTaken, `Another organization has the external id ${JSON.stringify(externalId)}.`);
      }
      const orgId = `org_${randomUUID().replaceAll('-', '')}`;
      const organization = await store.createOrganization(orgId, name, { plan, externalId: externalId ?? null });
      const live = await keys.create(orgId, 'live', 'initial');
      const test = await keys.create(orgId, 'test', 'initial');
      const on = { orgId, actor: ADMIN_ACTOR };
      await audit(request, 'organization.created', `organization:${orgId}`, on);
      await audit(request, 'key.created', `key:${live.key_id}`, on);
      await audit(request, 'key.created', `key:${test.key_id}`, on);
      return reply.code(201).send({ ...organizationView(organization), keys: [live, test] });
    },
  );

  app.get(
    '/admin/v1/organizations',
    { config: publicRoute, schema: { summary: 'Every organization', tags: TAGS, security, response: { 200: Type.Object({ organizations: Type.Array(OrganizationView) }), ...errors } } },
    async () => ({ organizations: (await store.listOrganizations()).map(organizationView) }),
  );

  app.get(
    '/admin/v1/organizations/:org_id',
    { config: publicRoute, schema: { summary: 'One organization', tags: TAGS, security, params: OrgParams, response: { 200: OrganizationView, ...errors } } },
    async (request) => organizationView(await requireOrganization(request.params.org_id)),
  );

  app.post(
    '/admin/v1/organizations/:org_id/disable',
    {
      config: publicRoute,
      schema: { summary: 'Disable an organization: all its keys stop working at once', tags: TAGS, security, params: OrgParams, response: { 200: OrganizationView, ...errors } },
    },
    async (request) => {
      const orgId = request.params.org_id;
      await requireOrganization(orgId);
      // Disabling a disabled organization changes nothing and records nothing.
      if (await store.disableOrganization(orgId)) {
        await audit(request, 'organization.disabled', `organization:${orgId}`, { orgId, actor: ADMIN_ACTOR });
      }
      // Every replica drops the organization's cached keys; their next use reads the disabled mark.
      await options.authenticator.invalidate((await store.listApiKeys(orgId)).map((key) => key.keyHash));
      return organizationView(await requireOrganization(orgId));
    },
  );

  app.post(
    '/admin/v1/organizations/:org_id/keys',
    {
      config: publicRoute,
      schema: { summary: "Issue a key for an organization (shown once)", tags: TAGS, security, params: OrgParams, body: CreateKeyBody, response: { 201: IssuedKey, ...errors } },
    },
    async (request, reply) => {
      const orgId = request.params.org_id;
      await requireEnabled(orgId);
      const issued = await keys.create(orgId, request.body.kind, request.body.name ?? '');
      await audit(request, 'key.created', `key:${issued.key_id}`, { orgId, actor: ADMIN_ACTOR });
      return reply.code(201).send(issued);
    },
  );

  app.get(
    '/admin/v1/organizations/:org_id/keys',
    { config: publicRoute, schema: { summary: "An organization's keys (never the secrets)", tags: TAGS, security, params: OrgParams, response: { 200: KeyList, ...errors } } },
    async (request) => {
      await requireOrganization(request.params.org_id);
      return { keys: [...(await keys.list(request.params.org_id))] };
    },
  );

  app.delete(
    '/admin/v1/organizations/:org_id/keys/:key_id',
    { config: publicRoute, schema: { summary: "Revoke an organization's key at once", tags: TAGS, security, params: OrgKeyParams, response: { 200: KeyView, ...errors } } },
    async (request) => {
      const orgId = request.params.org_id;
      await requireOrganization(orgId);
      const { key, changed } = await keys.revoke(orgId, request.params.key_id);
      if (changed) await audit(request, 'key.revoked', `key:${key.key_id}`, { orgId, actor: ADMIN_ACTOR });
      return key;
    },
  );

  for (const extension of options.extensions ?? []) await app.register(extension);

  // Anything else under /admin: 404 for a caller with the token, 401 for one without (the hook).
  app.all('/admin/*', { config: publicRoute, schema: { hide: true } }, async (request, reply) =>
    sendError(reply, ERRORS.NotFound, `Route ${`${request.method} ${request.url.split('?')[0] ?? ''}`.slice(0, 200)} not found`),
  );
};
