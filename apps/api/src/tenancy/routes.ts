// The caller's own tenancy view. Needs a key like every non-public route.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { Store } from '@adp/store';

export interface TenancyRoutesOptions {
  readonly store: Store;
}

const Usage = Type.Object({
  orgId: Type.String(),
  keyId: Type.String(),
  keyKind: Type.Union([Type.Literal('live'), Type.Literal('test')]),
  /** Points and calls since the organization was created, all endpoints. */
  points: Type.Integer({ minimum: 0 }),
  calls: Type.Integer({ minimum: 0 }),
  byEndpoint: Type.Array(
    Type.Object({
      endpoint: Type.String(),
      points: Type.Integer({ minimum: 0 }),
      calls: Type.Integer({ minimum: 0 }),
    }),
  ),
}, { description: "The caller's key and its organization's usage" });

export const tenancyRoutes: FastifyPluginAsyncTypebox<TenancyRoutesOptions> = async (app, options) => {
  app.get(
    '/v1/usage',
    {
      schema: {
        summary: "Usage of the caller's organization, per endpoint",
        tags: ['tenancy'],
        response: { 200: Usage },
      },
    },
    async (request) => {
      const usage = await options.store.usageFor(request.auth.orgId);
      return {
        orgId: usage.orgId,
        keyId: request.auth.keyId,
        keyKind: request.auth.keyKind,
        points: usage.points,
        calls: usage.calls,
        byEndpoint: [...usage.byEndpoint],
      };
    },
  );
};
