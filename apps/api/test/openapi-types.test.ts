// @adp/api-types is generated from the OpenAPI document (npm run api-types): the committed files
// must be what the document gives now, and each type must be the route's answer.
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { apiTypesFiles } from '../src/openapi-types.js';
import { API_TYPES_DIR, openApiDocument } from '../src/openapi-types-main.js';

let generated: Map<string, string>;
beforeAll(async () => {
  generated = await apiTypesFiles(await openApiDocument());
});

describe('@adp/api-types', () => {
  it('is current with the OpenAPI document (run `npm run api-types` after changing a response schema)', async () => {
    expect((await readdir(API_TYPES_DIR)).sort()).toEqual([...generated.keys()].sort());
    for (const [name, source] of generated) expect(await readFile(path.join(API_TYPES_DIR, name), 'utf8'), name).toBe(source);
  });

  it("names each answer's own fields, exports each type from the index, and fails on a route the document lacks", async () => {
    expect(generated.get('machines.ts')).toMatch(/\/\*\* GET \/v1\/machines: 200\. \*\/\nexport interface MachinesResponse \{\n/);
    expect(generated.get('detection.ts')).toMatch(/export interface MultivariateDetectResponse \{[^]*?\n  drivers: \{/);
    expect(generated.get('detection.ts')).not.toMatch(/export interface DetectResponse \{[^}]*\n  drivers:/);
    expect(generated.get('index.ts')).toContain("export type { BaselineResponse, MachineStatusResponse, MachinesResponse, ResultsResponse } from './machines.js';\n");
    await expect(apiTypesFiles({ paths: {} })).rejects.toThrow('the OpenAPI document has no POST /v1/detect 200 JSON answer');
  });
});
