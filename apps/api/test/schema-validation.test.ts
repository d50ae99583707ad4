// The shared schema validation of the platform routes: each failure is one coded AppError whose
// message names the field by its path, in exact words. Through a small Fastify app (the routes'
// own schemas are covered by native-*, telemetry-* and jobs-* tests).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import Fastify, { type FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { AppError } from '../src/errors.js';
import { bodyValidator, useSchemaValidation } from '../src/schema-validation.js';

const CODES = { fields: { machine_id: 'InvalidMachineId', series: 'InvalidSeries' }, patterns: { '^[a-z]+$': 'lower-case letters' } } as const;

const Body = Type.Object(
  {
    machine_id: Type.String({ pattern: '^[a-z]+$' }),
    series: Type.Array(
      Type.Union([
        Type.Object({ value: Type.Number({ minimum: -10, maximum: 10 }) }),
        Type.Object({ channels: Type.Record(Type.String(), Type.Number(), { minProperties: 1 }) }),
      ]),
      { minItems: 2, maxItems: 3 },
    ),
    sensitivity: Type.Optional(Type.Union([Type.Integer({ minimum: 0, maximum: 99 }), Type.Null()])),
    ratio: Type.Optional(Type.Number({ exclusiveMinimum: 0, exclusiveMaximum: 0.5 })),
    mode: Type.Optional(Type.Enum(['auto', 'fixed'])),
    flag: Type.Optional(Type.Boolean()),
  },
  {
    additionalProperties: false,
    if: { required: ['mode'], properties: { mode: { const: 'fixed' } } },
    then: { required: ['fixed'], description: "when mode is 'fixed'" },
  },
);
const Query = Type.Object({ limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 50 })) });

let app: FastifyInstance;
beforeAll(async () => {
  app = Fastify();
  const routes = app.withTypeProvider<TypeBoxTypeProvider>();
  useSchemaValidation(app, CODES);
  app.setErrorHandler((error, _request, reply) => {
    const coded = error instanceof AppError ? error : null;
    return reply.code(coded?.statusCode ?? 500).send({ error: { code: coded?.code ?? 'not coded', message: (error as Error).message } });
  });
  routes.post('/things', { schema: { body: Body, querystring: Query } }, (request) => ({ body: request.body, query: request.query }));
  await app.ready();
});
afterAll(async () => {
  await app.close();
});

const valid = { machine_id: 'pump', series: [{ value: 1 }, { value: 2 }] };

async function refusal(body: unknown, url = '/things'): Promise<unknown> {
  const response = await app.inject({ method: 'POST', url, payload: body as object });
  expect(response.statusCode, response.body).toBe(400);
  return response.json();
}

describe('schema validation', () => {
  it('passes a valid body through unchanged and coerces query strings only', async () => {
    const response = await app.inject({ method: 'POST', url: '/things?limit=7', payload: { ...valid, sensitivity: null, flag: true } });
    expect(response.statusCode).toBe(200);
    expect(response.json()).toEqual({ body: { ...valid, sensitivity: null, flag: true }, query: { limit: 7 } });
  });

  it.each<[string, unknown, string, string]>([
    ['a missing field', { series: valid.series }, 'InvalidMachineId', 'machine_id is required (lower-case letters).'],
    ['a wrong type deep in an array', { ...valid, series: [{ value: 1 }, { value: '2' }] }, 'InvalidSeries', 'series[1].value must be a number from -10 to 10.'],
    ['an out-of-range number', { ...valid, series: [{ value: 11 }, { value: 2 }] }, 'InvalidSeries', 'series[0].value must be a number from -10 to 10.'],
    ['an extra field', { ...valid, colour: 'red' }, 'InvalidArgument', 'colour is not a field this request takes.'],
    ['a number sent as a string (no coercion of bodies)', { ...valid, sensitivity: '5' }, 'InvalidArgument', 'sensitivity must be an integer from 0 to 99.'],
    ['an integer out of range in a nullable field', { ...valid, sensitivity: 100 }, 'InvalidArgument', 'sensitivity must be an integer from 0 to 99.'],
    ['an exclusive range', { ...valid, ratio: 0.5 }, 'InvalidArgument', 'ratio must be a number > 0 and < 0.5.'],
    ['a boolean sent as 1', { ...valid, flag: 1 }, 'InvalidArgument', 'flag must be true or false.'],
    ['an unknown enum value', { ...valid, mode: 'guess' }, 'InvalidArgument', 'mode must be one of auto, fixed.'],
    ['a pattern', { ...valid, machine_id: 'Pump' }, 'InvalidMachineId', 'machine_id must be lower-case letters.'],
    ['too few items', { ...valid, series: [{ value: 1 }] }, 'InvalidSeries', 'series must have 2 to 3 items; it has 1.'],
    ['too many items', { ...valid, series: [{ value: 1 }, { value: 1 }, { value: 1 }, { value: 1 }] }, 'InvalidSeries', 'series must have 2 to 3 items; it has 4.'],
    ['the other form of a union, wrong', { ...valid, series: [{ value: 1 }, { channels: {} }] }, 'InvalidSeries', 'series[1].channels must have at least 1 entry; it has 0.'],
    ['neither form of a union', { ...valid, series: [{ value: 1 }, {}] }, 'InvalidSeries', 'series[1].value is required (a number from -10 to 10).'],
    ['a rule under a condition', { ...valid, mode: 'fixed' }, 'InvalidArgument', "fixed is required when mode is 'fixed'."],
    ['a body that is not an object', [valid], 'InvalidArgument', 'The request body must be a JSON object.'],
  ])('answers %s with its code and the field named', async (_name, body, code, message) => {
    expect(await refusal(body)).toEqual({ error: { code, message } });
  });

  it('names a query parameter as such', async () => {
    expect(await refusal(valid, '/things?limit=0')).toEqual({
      error: { code: 'InvalidArgument', message: "The 'limit' query parameter must be an integer from 1 to 50." },
    });
    expect(await refusal(valid, '/things?limit=ten')).toEqual({
      error: { code: 'InvalidArgument', message: "The 'limit' query parameter must be an integer from 1 to 50." },
    });
  });

  it('checks a body built outside Fastify with the same words', () => {
    const check = bodyValidator(Body, CODES);
    expect(check(valid)).toEqual(valid);
    expect(() => check({ ...valid, series: [{ value: 1 }, { value: 'x' }] })).toThrow(
      expect.objectContaining({ code: 'InvalidSeries', message: 'series[1].value must be a number from -10 to 10.' }),
    );
  });
});
