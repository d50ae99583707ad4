// One delivery attempt: POST the body with its signature to the checked address, within a
// timeout, never following a redirect (a 3xx is a failed attempt: a redirect could lead anywhere,
// a private address included). The receiver's answer is read up to a small limit and dropped.
// Connections are kept open between attempts (DeliveryConnections), one pool per checked address,
// so a busy target costs no connection set-up per delivery.
import http from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';
import { resolveTarget, TargetRefused, type Lookup } from './address-guard.js';
import { signDelivery } from './signing.js';

export interface AttemptOutcome {
  readonly ok: boolean;
  readonly statusCode: number | null;
  readonly latencyMs: number;
  readonly error: string | null;
}

export interface AttemptRequest {
  readonly url: string;
  readonly body: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly timeoutMs: number;
  readonly allowPrivate: boolean;
  readonly lookup?: Lookup;
  /** Abandons the attempt (the dispatcher stopping); it then reports no answer. */
  readonly signal?: AbortSignal;
  /** Kept-open connections to reuse; absent: a connection of its own, closed after the answer. */
  readonly connections?: DeliveryConnections;
}

/**
 * Kept-alive connection pools, one per (protocol, checked address, port): a pooled socket only
 * ever goes to the address that was checked for it. Idle sockets close after `idleMs`; `close`
 * ends them all (the dispatcher stopping).
 */
export class DeliveryConnections {
  private readonly agents = new Map<string, http.Agent>();

  constructor(private readonly options: { readonly maxSocketsPerAddress: number; readonly idleMs: number }) {}

  agentFor(protocol: string, address: string, port: string): http.Agent {
    const key = `${protocol}//${address}:${port}`;
    let agent = this.agents.get(key);
    if (!agent) {
      const settings = { keepAlive: true, maxSockets: this.options.maxSocketsPerAddress, maxFreeSockets: this.options.maxSocketsPerAddress, timeout: this.options.idleMs };
      agent = protocol === 'https:' ? new https.Agent(settings) : new http.Agent(settings);
      this.agents.set(key, agent);
    }
    return agent;
  }

  close(): void {
    for (const agent of this.agents.values()) agent.destroy();
    this.agents.clear();
  }
}

const RESPONSE_BYTES_READ = 64 * 1024;

export async function attemptDelivery(request: AttemptRequest): Promise<AttemptOutcome> {
  const started = performance.now();
  const elapsed = (): number => Math.round((performance.now() - started) * 1000) / 1000;
  let target;
  try {
    target = await resolveTarget(request.url, { allowPrivate: request.allowPrivate, ...(request.lookup ? { lookup: request.lookup } : {}) });
  } catch (err) {
    const message = err instanceof TargetRefused ? `${err.code}: ${err.message}` : String(err);
    return { ok: false, statusCode: null, latencyMs: elapsed(), error: message };
  }
  // Connect to the address that was checked, whatever a second lookup would say.
  const pinned: LookupFunction = (_hostname, options, callback) => {
    if ((options as { all?: boolean }).all) (callback as (e: null, a: { address: string; family: number }[]) => void)(null, [{ address: target.address, family: target.family }]);
    else callback(null, target.address, target.family);
  };
  const client = target.url.protocol === 'https:' ? https : http;
  return new Promise<AttemptOutcome>((resolve) => {
    let settled = false;
    const finish = (outcome: Omit<AttemptOutcome, 'latencyMs'>): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      // The signal lives as long as the dispatcher: a listener left on it per attempt would pile up.
      request.signal?.removeEventListener('abort', abandon);
      resolve({ ...outcome, latencyMs: elapsed() });
    };
    const req = client.request(
      target.url,
      {
        method: 'POST',
        lookup: pinned,
        agent: request.connections ? request.connections.agentFor(target.url.protocol, target.address, target.url.port) : false,
        headers: {
          'content-type': 'application/json',
          'content-length': String(Buffer.byteLength(request.body)),
          'user-agent': 'adp-webhooks',
          ...request.headers,
        },
      },
      (res) => {
        const status = res.statusCode ?? 0;
        let read = 0;
        res.on('data', (chunk: Buffer) => {
          read += chunk.length;
          if (read > RESPONSE_BYTES_READ) res.destroy();
        });
        const done = (): void => {
          if (status >= 200 && status < 300) finish({ ok: true, statusCode: status, error: null });
          else if (status >= 300 && status < 400) finish({ ok: false, statusCode: status, error: `HTTP ${status}: redirects are not followed` });
          else finish({ ok: false, statusCode: status, error: `HTTP ${status}` });
        };
        res.on('end', done);
        res.on('close', done);
        res.on('error', done);
      },
    );
    const timer = setTimeout(() => {
      req.destroy();
      finish({ ok: false, statusCode: null, error: `no answer within ${request.timeoutMs} ms` });
    }, request.timeoutMs);
    req.on('error', (err) => finish({ ok: false, statusCode: null, error: err.message }));
    const abandon = (): void => {
      req.destroy();
      finish({ ok: false, statusCode: null, error: 'abandoned: the dispatcher stopped' });
    };
    if (request.signal?.aborted) abandon();
    else request.signal?.addEventListener('abort', abandon, { once: true });
    req.end(request.body);
  });
}

/** A delivery to sign and attempt: its target, body and the secrets in force at `atMs`. */
export interface SignedDelivery {
  readonly url: string;
  readonly body: string;
  /** The secrets in force at `atMs`: one signature each. */
  readonly secrets: readonly string[];
  /** The delivery id (`webhook-id`). */
  readonly messageId: string;
  readonly atMs: number;
  readonly timeoutMs: number;
  readonly allowPrivate: boolean;
}

/** Signs a delivery (Standard Webhooks headers) and attempts it; a secret that cannot sign throws. */
export function signAndAttempt(
  delivery: SignedDelivery,
  context: { readonly signal: AbortSignal; readonly connections: DeliveryConnections; readonly lookup?: Lookup },
): Promise<AttemptOutcome> {
  const headers = signDelivery(delivery.secrets, delivery.messageId, new Date(delivery.atMs), delivery.body);
  return attemptDelivery({
    url: delivery.url,
    body: delivery.body,
    headers: { ...headers },
    timeoutMs: delivery.timeoutMs,
    allowPrivate: delivery.allowPrivate,
    signal: context.signal,
    connections: context.connections,
    ...(context.lookup ? { lookup: context.lookup } : {}),
  });
}
