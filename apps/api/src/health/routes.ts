// Liveness and readiness, for orchestrators. Both are public (no API key) and cheap.
// /healthz says the process serves HTTP; it never touches dependencies, so a slow store does not
// get the process restarted. /readyz says whether to send traffic: it pings the store and every
// other server the process depends on (Kafka, the ClickHouse results, Redis, where configured), all
// at once, and names the first failing one in `checks` order, the store first.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { Store } from '@adp/store';
import type { DependencyCheck } from '@adp/streaming';

export interface HealthRoutesOptions {
  readonly store: Store;
  /** The other dependencies, each asked on every probe. Default none (the embedded pieces are in this process). */
  readonly checks?: readonly DependencyCheck[];
  /** A store ping slower than this counts as unavailable, in milliseconds. Default 2000. */
  readonly pingTimeoutMs?: number;
}

const Live = Type.Object({ status: Type.Literal('ok') }, { description: 'The process serves HTTP' });
const Ready = Type.Object({ status: Type.Literal('ready') }, { description: 'Ready for traffic' });
const Unavailable = Type.Object({
  status: Type.Literal('unavailable'),
  /** Which dependency failed and how, without secrets. */
  reason: Type.String(),
}, { description: 'Not ready: a dependency is failing' });

export const healthRoutes: FastifyPluginAsyncTypebox<HealthRoutesOptions> = async (app, options) => {
  const pingTimeoutMs = options.pingTimeoutMs ?? 2000;

  app.get(
    '/healthz',
    {
      config: { public: true },
      schema: {
        summary: 'Liveness: the process serves HTTP',
        tags: ['health'],
        security: [],
        response: { 200: Live },
      },
    },
    async () => ({ status: 'ok' as const }),
  );

  app.get(
    '/readyz',
    {
      config: { public: true },
      schema: {
        summary: 'Readiness: the store and every configured server (Kafka, ClickHouse results, Redis) answer',
        tags: ['health'],
        security: [],
        response: { 200: Ready, 503: Unavailable },
      },
    },
    async (request, reply) => {
      const checks: readonly DependencyCheck[] = [{ name: 'store', ping: () => options.store.ping() }, ...(options.checks ?? [])];
      // A check that throws instead of rejecting still counts as failed, never as a 500.
      const outcomes = await Promise.allSettled(
        checks.map((check) => withTimeout(Promise.resolve().then(() => check.ping()), pingTimeoutMs)),
      );
      const failed = outcomes.findIndex((outcome) => outcome.status === 'rejected');
      const outcome = outcomes[failed];
      if (outcome?.status !== 'rejected') return { status: 'ready' as const };
      const name = checks[failed]?.name ?? 'unknown';
      request.log.warn({ err: outcome.reason, dependency: name }, 'readiness check failed');
      return reply.code(503).send({ status: 'unavailable' as const, reason: `${name}: ${describe(outcome.reason)}` });
    },
  );
};

/** A dependency that did not answer in time (the probe's own failure, safe to show). */
class NoAnswer extends Error {
  constructor(timeoutMs: number) {
    super(`no answer within ${timeoutMs} ms`);
  }
}

function withTimeout<T>(promise: Promise<T>, timeoutMs: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new NoAnswer(timeoutMs)), timeoutMs);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** The error's code, or the timeout; any other message may carry an address or credentials: logged only. */
function describe(err: unknown): string {
  if (err && typeof err === 'object' && 'code' in err && typeof err.code === 'string') return err.code;
  return err instanceof NoAnswer ? err.message : 'failed';
}
