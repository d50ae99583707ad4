// `npm run api-types`: builds the API on an empty embedded store, reads its OpenAPI document and
// rewrites packages/api-types/src/index.ts from it (openapi-types.ts).
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildApp } from './app.js';
import { loadConfig } from './config.js';
import { apiTypesSource } from './openapi-types.js';

export const API_TYPES_FILE = fileURLToPath(new URL('../../../packages/api-types/src/index.ts', import.meta.url));

/** The API's OpenAPI document, from an app on an empty embedded store. */
export async function openApiDocument(): Promise<Record<string, unknown>> {
  const dataDir = await mkdtemp(path.join(tmpdir(), 'adp-api-types-'));
  try {
    const app = await buildApp(loadConfig({ DATA_DIR: dataDir, LOG_LEVEL: 'silent' }));
    try {
      return app.swagger() as unknown as Record<string, unknown>;
    } finally {
      await app.close();
    }
  } finally {
    await rm(dataDir, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  await writeFile(API_TYPES_FILE, await apiTypesSource(await openApiDocument()));
  process.stdout.write(`wrote ${path.relative(process.cwd(), API_TYPES_FILE)}\n`);
}
