// The audit log's port: an append-only record of who changed what in an organization, when and
// from where. Events are never updated or deleted by the platform (a machine's deletion leaves its
// baseline's history in place). Both adapters (embedded/duckdb-audit.ts, clickhouse/clickhouse-
// audit.ts) validate events here, so they refuse exactly the same input.
import { StoreError } from './errors.js';

/** Who acted: an API key, an identity-provider subject, the operator (admin API) or the platform itself. */
export const AUDIT_ACTOR_KINDS = ['key', 'jwt', 'admin', 'system'] as const;
export type AuditActorKind = (typeof AUDIT_ACTOR_KINDS)[number];

export interface AuditActor {
  readonly kind: AuditActorKind;
  /** The key id, the token's `sub`, the operator's name or the component's. */
  readonly id: string;
}

export interface AuditEvent {
  /** Unique per event; the caller generates it (a UUID). */
  readonly eventId: string;
  readonly orgId: string;
  /** When it happened, millisecond precision. */
  readonly at: Date;
  readonly actor: AuditActor;
  /** `noun.verb`, lower case: `baseline.created`, `key.revoked`, ... */
  readonly action: string;
  /** What was acted on, e.g. `machine:pump-7` or `key:key_...`. */
  readonly target: string;
  /** The client's address as the server saw it; null when there was no request (system events). */
  readonly sourceIp: string | null;
}

export interface AuditListOptions {
  /** Events at or after this time. */
  readonly from?: Date;
  /** Events strictly before this time. */
  readonly to?: Date;
  /** Most events in the page, 1..AUDIT_PAGE_MAX. */
  readonly limit: number;
  /** `nextCursor` of the previous page: the page goes on after that page's last event. */
  readonly cursor?: string;
}

export interface AuditPage {
  /** Newest first (by time, then by event id, descending). */
  readonly events: readonly AuditEvent[];
  /** Null on the last page. Opaque; pass it back unchanged with the same from/to. */
  readonly nextCursor: string | null;
}

export interface AuditStore {
  /** Appends one event; resolves once it is stored. */
  record(event: AuditEvent): Promise<void>;
  /** One page of the organization's events, newest first. Never another organization's. */
  list(orgId: string, options: AuditListOptions): Promise<AuditPage>;
}

/** Largest page `list` serves. */
export const AUDIT_PAGE_MAX = 1000;

/** Where a page ended: the last event's time and id. Events after it sort strictly below. */
export interface AuditPosition {
  readonly atMs: number;
  readonly eventId: string;
}

const ACTION = /^[a-z][a-z0-9_]{0,31}\.[a-z][a-z0-9_]{0,31}$/;
const MAX_ID_LENGTH = 256;
const MAX_TARGET_LENGTH = 512;
/** An IPv6 address with a zone id stays well below this. */
const MAX_IP_LENGTH = 64;

function invalid(operation: string, problem: string): never {
  throw new StoreError('STORE_INVALID_ARGUMENT', operation, problem);
}

function boundedText(operation: string, name: string, value: unknown, maxLength: number): void {
  if (typeof value !== 'string' || value.length === 0 || value.length > maxLength) {
    invalid(operation, `${name} must be a string of 1 to ${maxLength} characters`);
  }
}

/** Epoch milliseconds of a valid Date from 1970 on. */
export function auditTimeMs(operation: string, name: string, at: Date): number {
  const ms = at instanceof Date ? at.getTime() : Number.NaN;
  if (!Number.isSafeInteger(ms) || ms < 0) invalid(operation, `${name} must be a valid date after 1970`);
  return ms;
}

/** Refuses an event either adapter could not store faithfully. */
export function validateAuditEvent(event: AuditEvent): void {
  const operation = 'recordAudit';
  boundedText(operation, 'eventId', event.eventId, MAX_ID_LENGTH);
  boundedText(operation, 'orgId', event.orgId, MAX_ID_LENGTH);
  auditTimeMs(operation, 'at', event.at);
  if (!(AUDIT_ACTOR_KINDS as readonly unknown[]).includes(event.actor?.kind)) {
    invalid(operation, `actor.kind must be one of ${AUDIT_ACTOR_KINDS.join(', ')}`);
  }
  boundedText(operation, 'actor.id', event.actor.id, MAX_ID_LENGTH);
  if (typeof event.action !== 'string' || !ACTION.test(event.action)) {
    invalid(operation, 'action must be noun.verb in lower case (a-z 0-9 _)');
  }
  boundedText(operation, 'target', event.target, MAX_TARGET_LENGTH);
  if (event.sourceIp !== null) boundedText(operation, 'sourceIp', event.sourceIp, MAX_IP_LENGTH);
}

/** The checked bounds of a `list` call, with the cursor decoded. */
export interface AuditQuery {
  readonly fromMs: number | null;
  readonly toMs: number | null;
  readonly limit: number;
  readonly after: AuditPosition | null;
}

export function auditQuery(orgId: string, options: AuditListOptions): AuditQuery {
  const operation = 'listAudit';
  boundedText(operation, 'orgId', orgId, MAX_ID_LENGTH);
  if (!Number.isSafeInteger(options.limit) || options.limit < 1 || options.limit > AUDIT_PAGE_MAX) {
    invalid(operation, `limit must be an integer from 1 to ${AUDIT_PAGE_MAX}`);
  }
  let after: AuditPosition | null = null;
  if (options.cursor !== undefined) {
    after = decodeAuditCursor(options.cursor);
    if (after === null) invalid(operation, 'the cursor is not one this store issued');
  }
  return {
    fromMs: options.from === undefined ? null : auditTimeMs(operation, 'from', options.from),
    toMs: options.to === undefined ? null : auditTimeMs(operation, 'to', options.to),
    limit: options.limit,
    after,
  };
}

/** The cursor after `event`: base64url of `<epoch ms>.<event id>`. */
export function encodeAuditCursor(event: AuditEvent): string {
  return Buffer.from(`${event.at.getTime()}.${event.eventId}`, 'utf8').toString('base64url');
}

/** The position a cursor names, or null when it is not one `encodeAuditCursor` could have made. */
export function decodeAuditCursor(cursor: string): AuditPosition | null {
  if (typeof cursor !== 'string' || cursor.length > 2 * MAX_ID_LENGTH || !/^[A-Za-z0-9_-]+$/.test(cursor)) return null;
  const text = Buffer.from(cursor, 'base64url').toString('utf8');
  const match = /^(\d{1,16})\.(.+)$/s.exec(text);
  if (!match) return null;
  const atMs = Number(match[1]);
  const eventId = match[2] ?? '';
  if (!Number.isSafeInteger(atMs) || eventId.length > MAX_ID_LENGTH) return null;
  return { atMs, eventId };
}

/** The page from up to `limit + 1` rows read newest first: the extra row only says there is more. */
export function auditPage(rows: readonly AuditEvent[], limit: number): AuditPage {
  const events = rows.slice(0, limit);
  const last = events[events.length - 1];
  return { events, nextCursor: rows.length > limit && last ? encodeAuditCursor(last) : null };
}
