// The lint rule that keeps deployables apart (eslint.config.js, adp/app-boundaries), run through
// ESLint's own API with the repository's configuration on code that crosses a boundary and code
// that does not.
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ESLint } from 'eslint';
import { describe, expect, it } from 'vitest';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const eslint = new ESLint({ cwd: root });

/** The app-boundaries messages for `code` as if it were the file `file` (relative to the root). */
async function boundaryErrors(file: string, code: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath: path.join(root, file) });
  return result!.messages.filter((m) => m.ruleId === 'adp/app-boundaries').map((m) => m.message);
}

describe('adp/app-boundaries', () => {
  it("refuses an app importing another app's package", async () => {
    expect(await boundaryErrors('apps/api/src/x.ts', "export { startWorker } from '@adp/worker';\n")).toEqual([
      'apps/api imports the app @adp/worker: move what both need into packages/ (an app imports no other app)',
    ]);
    expect(await boundaryErrors('apps/cli/src/x.ts', "import { buildApp } from '@adp/api';\nbuildApp;\n")).toHaveLength(1);
    expect(await boundaryErrors('apps/api/src/dashboard/x.ts', "export { buildDashboard } from '@adp/dashboard';\n")).toEqual([
      'apps/api imports the app @adp/dashboard: move what both need into packages/ (an app imports no other app)',
    ]);
  });

  it("refuses a relative path into another app's folder from any depth, as import, export or import()", async () => {
    const code = [
      "import type { DetectResponse } from '../../api/src/native/schemas.js';",
      "export * from '../../../apps/worker/src/main.js';",
      "await import('../../cli/src/main.js');",
      'export type { DetectResponse };',
      '',
    ].join('\n');
    expect(await boundaryErrors('apps/dashboard/web/api-types.ts', code)).toEqual([
      "apps/dashboard reaches into apps/api: import a package (packages/, pipelines/) or the app's public entry instead",
      "apps/dashboard reaches into apps/worker: import a package (packages/, pipelines/) or the app's public entry instead",
      "apps/dashboard reaches into apps/cli: import a package (packages/, pipelines/) or the app's public entry instead",
    ]);
  });

  it("refuses the benchmarks and evaluations reaching into an app's src, and packages importing an app", async () => {
    expect(await boundaryErrors('eval/src/x.ts', "import { buildApp } from '../../apps/api/src/app.js';\nbuildApp;\n")).toEqual([
      "eval/ reaches into apps/api: import a package (packages/, pipelines/) or the app's public entry instead",
    ]);
    expect(await boundaryErrors('packages/stream-worker/src/x.ts', "import { buildApp } from '@adp/api';\nbuildApp;\n")).toEqual([
      'packages/ imports the app @adp/api: packages and pipelines import no app',
    ]);
  });

  it("allows an app's own files, packages, an app's public entry from bench/ and eval/, and the system tests", async () => {
    expect(await boundaryErrors('apps/api/src/native/x.ts', "import { a } from '../dashboard/sessions.js';\nimport { b } from '@adp/stream-worker';\nimport { c } from '@adp/web-bundle';\nexport { a, b, c };\n")).toEqual([]);
    expect(await boundaryErrors('apps/api/test/x.test.ts', "import { buildApp } from '../src/app.js';\nimport { d } from '@adp/api';\nexport { buildApp, d };\n")).toEqual([]);
    expect(await boundaryErrors('bench/x.ts', "import { buildApp } from '@adp/api';\nexport { buildApp };\n")).toEqual([]);
    expect(await boundaryErrors('test/integration/x.test.ts', "import { openPlatform } from '../../apps/api/src/platform.js';\nexport { openPlatform };\n")).toEqual([]);
  });
});
