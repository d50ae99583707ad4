// @adp/api-types is generated from the OpenAPI document (npm run api-types): the committed file
// must be what the document gives now, and each type must be the route's answer.
import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { apiTypesSource } from '../src/openapi-types.js';
import { API_TYPES_FILE, openApiDocument } from '../src/openapi-types-main.js';

describe('@adp/api-types', () => {
  it('is current with the OpenAPI document (run `npm run api-types` after changing a response schema)', async () => {
    const document = await openApiDocument();
    expect(await readFile(API_TYPES_FILE, 'utf8')).toBe(await apiTypesSource(document));
  });

  it("names each answer's own fields, and fails on a route the document lacks", async () => {
    const source = await apiTypesSource(await openApiDocument());
    expect(source).toMatch(/\/\*\* GET \/v1\/machines: 200\. \*\/\nexport interface MachinesResponse \{\n/);
    expect(source).toMatch(/export interface MultivariateDetectResponse \{[^]*?\n  drivers: \{/);
    expect(source).not.toMatch(/export interface DetectResponse \{[^}]*\n  drivers:/);
    await expect(apiTypesSource({ paths: {} })).rejects.toThrow('the OpenAPI document has no POST /v1/detect 200 JSON answer');
  });
});
