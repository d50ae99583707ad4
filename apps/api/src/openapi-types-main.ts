// `npm run api-types`: builds the API on an empty embedded store, reads its OpenAPI document and
// rewrites packages/api-types/src/ from it (openapi-types.ts).
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildApp } from './app.js';
import { loadConfig } from './config.js';
import { apiTypesFiles } from './openapi-types.js';

export const API_TYPES_DIR = fileURLToPath(new URL('../../../packages/api-types/src/', import.meta.url));

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
  const files = await apiTypesFiles(await openApiDocument());
  // A file of an area that is gone goes too.
  for (const name of await readdir(API_TYPES_DIR)) if (!files.has(name)) await rm(path.join(API_TYPES_DIR, name));
  for (const [name, source] of files) await writeFile(path.join(API_TYPES_DIR, name), source);
  process.stdout.write(`wrote ${[...files.keys()].join(', ')} in ${path.relative(process.cwd(), API_TYPES_DIR)}\n`);
}
