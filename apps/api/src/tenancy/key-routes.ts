// An organization's own keys: /v1/keys. Only keys with the key-management right may call these
// routes: live keys have it, test keys never do (403 KeyManagementForbidden).
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import { AppError, ERRORS } from '../errors.js';
import { audit } from './audit.js';
import type { KeyManager } from './key-management.js';
import { CreateKeyBody, DEFAULT_GRACE_SECONDS, ErrorBody, IssuedKey, KeyIdParams, KeyList, KeyView, RotateKeyBody, RotatedKey } from './key-schemas.js';

export interface KeyRoutesOptions {
  readonly keys: KeyManager;
}

function requireKeyManagement(request: FastifyRequest): string {
  if (request.auth.keyKind !== 'live') {
    throw new AppError(ERRORS.KeyManagementForbidden, 'Test keys cannot manage keys; call this route with a live key.');
  }
  return request.auth.orgId;
}

const TAGS = ['keys'];

export const keyRoutes: FastifyPluginAsyncTypebox<KeyRoutesOptions> = async (app, options) => {
  const { keys } = options;

  app.post(
    '/v1/keys',
    {
      schema: {
        summary: 'Issue a key for your organization (shown once)',
        tags: TAGS,
        body: CreateKeyBody,
        response: { 201: IssuedKey, 400: ErrorBody, 403: ErrorBody },
      },
    },
    async (request, reply) => {
      const orgId = requireKeyManagement(request);
      const issued = await keys.create(orgId, request.body.kind, request.body.name ?? '');
      await audit(request, 'key.created', `key:${issued.key_id}`);
      return reply.code(201).send(issued);
    },
  );

  app.get(
    '/v1/keys',
    {
      schema: {
        summary: "Your organization's keys, revoked ones included (never the secrets)",
        tags: TAGS,
        response: { 200: KeyList, 403: ErrorBody },
      },
    },
    async (request) => ({ keys: [...(await keys.list(requireKeyManagement(request)))] }),
  );

  app.delete(
    '/v1/keys/:key_id',
    {
      schema: {
        summary: 'Revoke a key at once, on every replica',
        tags: TAGS,
        params: KeyIdParams,
        response: { 200: KeyView, 403: ErrorBody, 404: ErrorBody, 409: ErrorBody },
      },
    },
    async (request) => {
      const { key, changed } = await keys.revoke(requireKeyManagement(request), request.params.key_id);
      if (changed) await audit(request, 'key.revoked', `key:${key.key_id}`);
      return key;
    },
  );

  app.post(
    '/v1/keys/:key_id/rotate',
    {
      // The body is optional: none at all means every default.
      preValidation: async (request) => {
        if (request.body === undefined || request.body === null) (request as { body: unknown }).body = {};
      },
      schema: {
        summary: 'Issue a successor of a key; the old one works for grace_seconds more',
        tags: TAGS,
        params: KeyIdParams,
        body: RotateKeyBody,
        response: { 201: RotatedKey, 400: ErrorBody, 403: ErrorBody, 404: ErrorBody, 409: ErrorBody },
      },
    },
    async (request, reply) => {
      const orgId = requireKeyManagement(request);
      const graceSeconds = request.body.grace_seconds ?? DEFAULT_GRACE_SECONDS;
      const { successor, previous } = await keys.rotate(orgId, request.params.key_id, graceSeconds);
      // The old key is the target; the successor is a key like any other, created by the same caller.
      await audit(request, 'key.rotated', `key:${previous.key_id}`);
      await audit(request, 'key.created', `key:${successor.key_id}`);
      return reply.code(201).send({ ...successor, previous });
    },
  );
};
