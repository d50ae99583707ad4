// The caller's own tenancy view. Needs a key like every non-public route.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { Store } from '@adp/store';

export interface TenancyRoutesOptions {
  readonly store: Store;
}

/**
 * Every detection endpoint's usage label, in the order `GET /v1/usage` lists them. They are all
 * listed, with zeros when unused, so clients need not know which ones were called.
 */
export const USAGE_ENDPOINTS = ['entire/detect', 'last/detect', 'changepoint/detect', 'v1/detect', 'v1/baseline', 'telemetry'] as const;

const EndpointUsage = Type.Object({
  endpoint: Type.String({ description: `Usage label: ${USAGE_ENDPOINTS.join(', ')}.` }),
  total_points: Type.Integer({ minimum: 0, description: 'Points the calls carried.' }),
  call_count: Type.Integer({ minimum: 0, description: 'Successful calls.' }),
});

const Usage = Type.Object(
  {
    org_id: Type.String(),
    key_id: Type.String(),
    key_kind: Type.Union([Type.Literal('live'), Type.Literal('test')]),
    /** Points and calls since the organization was created, all endpoints. */
    total_points: Type.Integer({ minimum: 0 }),
    call_count: Type.Integer({ minimum: 0 }),
    usage: Type.Array(EndpointUsage, { description: 'One record per endpoint label, zeros included.' }),
  },
  { description: "The caller's key and its organization's usage" },
);

const UsageQuery = Type.Object(
  {
    kind: Type.Optional(
      Type.Union([Type.Literal('live'), Type.Literal('test')], {
        description: 'Only the usage of keys of this kind (test keys are never billed). Default: both kinds together.',
      }),
    ),
  },
  { additionalProperties: false },
);

export const tenancyRoutes: FastifyPluginAsyncTypebox<TenancyRoutesOptions> = async (app, options) => {
  app.get(
    '/v1/usage',
    {
      schema: {
        summary: "Usage of the caller's organization, per endpoint",
        tags: ['tenancy'],
        querystring: UsageQuery,
        response: { 200: Usage },
      },
    },
    async (request) => {
      const usage = await options.store.usageFor(request.auth.orgId, request.query.kind ? { keyKind: request.query.kind } : {});
      const recorded = new Map(usage.byEndpoint.map((entry) => [entry.endpoint, entry]));
      // The known labels first in their fixed order, then any other label the store holds.
      const labels = [...USAGE_ENDPOINTS, ...[...recorded.keys()].filter((label) => !(USAGE_ENDPOINTS as readonly string[]).includes(label))];
      return {
        org_id: usage.orgId,
        key_id: request.auth.keyId,
        key_kind: request.auth.keyKind,
        total_points: usage.points,
        call_count: usage.calls,
        usage: labels.map((endpoint) => ({
          endpoint,
          total_points: recorded.get(endpoint)?.points ?? 0,
          call_count: recorded.get(endpoint)?.calls ?? 0,
        })),
      };
    },
  );
};
