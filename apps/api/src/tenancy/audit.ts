// The audit log at the HTTP edge: `audit(request, action, target)` records who did what, from
// where, and `GET /v1/audit` lists an organization's own events, newest first.
//
// A failed audit write is logged (error level, with the event) and does not fail the request: the
// change it describes has already happened, and answering 503 would invite a retry that repeats
// the change.
import { randomBytes } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { parseIsoTimestamp } from '@adp/detection';
import { AUDIT_PAGE_MAX, decodeAuditCursor, type AuditActor, type AuditEvent, type AuditStore } from '@adp/store';
import { AppError, ERRORS } from '../errors.js';

/** What the platform records (docs/identity-and-audit.md lists when each is recorded). */
export type AuditAction =
  | 'baseline.created'
  | 'baseline.updated'
  | 'baseline.deleted'
  | 'machine.deleted'
  | 'key.created'
  | 'key.revoked'
  | 'key.rotated'
  | 'organization.created'
  | 'organization.disabled'
  | 'user.created'
  | 'session.created'
  | 'webhook.created'
  | 'webhook.updated'
  | 'webhook.deleted'
  | 'webhook.secret_rotated'
  | 'feedback.created'
  | 'feedback.deleted';

export interface AuditOptions {
  /** The organization the event belongs to. Default: the caller's (`request.auth.orgId`). */
  readonly orgId?: string;
  /**
   * Who acted. Default: the caller's key (`key`, its id) or identity-provider subject (`jwt`, the
   * token's `sub`). Requests without `request.auth` (the admin API) must say.
   */
  readonly actor?: AuditActor;
}

/** The caller as the audit log names them, or null when the request has no authenticated caller. */
export function auditActorOf(request: FastifyRequest): AuditActor | null {
  const auth = (request.auth as typeof request.auth | null) ?? null;
  if (auth === null) return null;
  // A dashboard session is a person signed in: recorded as an identity (`jwt`), its id the
  // provider's subject or the local account's user id, as the audit log's kinds have no other.
  return auth.via === 'key' ? { kind: 'key', id: auth.keyId } : { kind: 'jwt', id: auth.subject };
}

/**
 * Records `action` on `target` (e.g. `machine:pump-7`, `key:key_...`, `organization:org_...`)
 * in the app's audit log, by the request's caller, from the request's address. Never rejects.
 */
export async function audit(request: FastifyRequest, action: AuditAction, target: string, options: AuditOptions = {}): Promise<void> {
  const auditLog: AuditStore = request.server.store.audit;
  const actor = options.actor ?? auditActorOf(request);
  const orgId = options.orgId ?? (request.auth as typeof request.auth | null)?.orgId;
  if (!actor || !orgId) {
    request.log.error({ action, target }, 'audit event without an actor or organization; not recorded');
    return;
  }
  const at = new Date();
  const event: AuditEvent = { eventId: newEventId(at), orgId, at, actor, action, target, sourceIp: request.ip || null };
  try {
    await auditLog.record(event);
  } catch (err) {
    request.log.error({ err, audit: { ...event, at: event.at.toISOString() } }, 'audit event could not be recorded');
  }
}

let eventSequence = 0;

/**
 * A unique event id that sorts like the events of this process: the time, a counter, then random
 * bits. The log orders events of one millisecond by id, so two changes a client makes in a row
 * are listed in the order they happened.
 */
function newEventId(at: Date): string {
  eventSequence = (eventSequence + 1) % 0x1000000;
  return `${at.getTime().toString(16).padStart(12, '0')}${eventSequence.toString(16).padStart(6, '0')}${randomBytes(8).toString('hex')}`;
}

const AuditEventBody = Type.Object({
  event_id: Type.String(),
  org_id: Type.String(),
  at: Type.String({ description: 'When it happened, ISO 8601 UTC with milliseconds.' }),
  actor: Type.Object({
    kind: Type.Union([Type.Literal('key'), Type.Literal('jwt'), Type.Literal('admin'), Type.Literal('system')], {
      description: 'key: an API key (id: its key_id); jwt: an identity-provider token (id: its sub); admin: the admin API; system: the platform.',
    }),
    id: Type.String(),
  }),
  action: Type.String({
    description:
      'baseline.created, baseline.updated, baseline.deleted, machine.deleted, key.created, key.revoked, key.rotated, organization.created, organization.disabled',
  }),
  target: Type.String({ description: 'What was acted on: machine:<machine_id>, key:<key_id>, organization:<org_id>.' }),
  source_ip: Type.Union([Type.String(), Type.Null()], { description: "The client's address as the server saw it." }),
});

const AuditPageBody = Type.Object(
  {
    events: Type.Array(AuditEventBody),
    next_cursor: Type.Union([Type.String(), Type.Null()], {
      description: 'Pass as `cursor` (with the same from/to) for the next, older page; null on the last page.',
    }),
  },
  { description: "The caller's organization's audit events, newest first" },
);

const AuditQuery = Type.Object(
  {
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: AUDIT_PAGE_MAX, default: 100, description: 'Events per page.' })),
    cursor: Type.Optional(Type.String({ minLength: 1, maxLength: 1024, description: "The previous page's next_cursor." })),
    from: Type.Optional(Type.String({ maxLength: 64, description: 'Only events at or after this ISO 8601 time.' })),
    to: Type.Optional(Type.String({ maxLength: 64, description: 'Only events before this ISO 8601 time.' })),
  },
  { additionalProperties: false },
);

const AuditError = Type.Object({ error: Type.Object({ code: Type.String(), message: Type.String() }) });

export interface AuditRoutesOptions {
  readonly audit: AuditStore;
}

export const auditRoutes: FastifyPluginAsyncTypebox<AuditRoutesOptions> = async (app, options) => {
  app.get(
    '/v1/audit',
    {
      schema: {
        summary: "The caller's organization's audit log, newest first, in pages",
        tags: ['tenancy'],
        querystring: AuditQuery,
        response: { 200: AuditPageBody, 400: AuditError, 503: AuditError },
      },
    },
    async (request) => {
      const { limit = 100, cursor, from, to } = request.query;
      const fromMs = from === undefined ? undefined : timeParameter('from', from);
      const toMs = to === undefined ? undefined : timeParameter('to', to);
      if (fromMs !== undefined && toMs !== undefined && fromMs > toMs) {
        throw new AppError(ERRORS.BadRequest, "'from' must not be after 'to'.");
      }
      if (cursor !== undefined && decodeAuditCursor(cursor) === null) {
        throw new AppError(ERRORS.BadRequest, "'cursor' is not a next_cursor this service issued.");
      }
      const page = await options.audit.list(request.auth.orgId, {
        limit,
        ...(cursor === undefined ? {} : { cursor }),
        ...(fromMs === undefined ? {} : { from: new Date(fromMs) }),
        ...(toMs === undefined ? {} : { to: new Date(toMs) }),
      });
      return {
        events: page.events.map((event) => ({
          event_id: event.eventId,
          org_id: event.orgId,
          at: event.at.toISOString(),
          actor: { kind: event.actor.kind, id: event.actor.id },
          action: event.action,
          target: event.target,
          source_ip: event.sourceIp,
        })),
        next_cursor: page.nextCursor,
      };
    },
  );
};

function timeParameter(name: string, text: string): number {
  const ms = parseIsoTimestamp(text);
  if (ms === null || ms < 0) throw new AppError(ERRORS.BadRequest, `'${name}' must be an ISO 8601 date or date-time, e.g. 2025-01-31T00:00:00Z.`);
  return ms;
}
