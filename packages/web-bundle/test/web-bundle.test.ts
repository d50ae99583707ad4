import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { buildWebBundle, WebBundleError } from '../src/index.js';

describe('buildWebBundle', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'adp-web-bundle-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('serves index.html as written, main.ts and its imports as one app.js, style.css as app.css', async () => {
    await writeFile(path.join(dir, 'index.html'), '<script type="module" src="app.js"></script>');
    await writeFile(path.join(dir, 'greeting.ts'), "export const greeting: string = 'hello from the bundle';\n");
    await writeFile(path.join(dir, 'main.ts'), "import { greeting } from './greeting.js';\ndocument.title = greeting;\n");
    await writeFile(path.join(dir, 'style.css'), 'body { color: red; }\n');
    const bundle = await buildWebBundle(dir);
    expect([...bundle.keys()].sort()).toEqual(['app.css', 'app.js', 'index.html']);
    expect(bundle.get('index.html')).toEqual({ contentType: 'text/html; charset=utf-8', body: Buffer.from('<script type="module" src="app.js"></script>') });
    expect(bundle.get('app.js')!.contentType).toBe('text/javascript; charset=utf-8');
    expect(bundle.get('app.js')!.body.toString()).toContain('hello from the bundle');
    expect(bundle.get('app.js')!.body.toString()).not.toMatch(/^import /m);
    expect(bundle.get('app.css')).toEqual({ contentType: 'text/css; charset=utf-8', body: Buffer.from('body{color:red}\n') });
  });

  it('fails with a WebBundleError carrying the cause where the sources do not build', async () => {
    await writeFile(path.join(dir, 'index.html'), '<p>');
    await writeFile(path.join(dir, 'style.css'), '');
    await writeFile(path.join(dir, 'main.ts'), "import { missing } from './missing.js';\nmissing();\n");
    const failure = await buildWebBundle(dir).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(WebBundleError);
    expect((failure as WebBundleError).message).toBe(`the web bundle of ${dir} could not be built`);
    expect(String((failure as WebBundleError).cause)).toContain('missing.js');
  });
});
