// Builds a web client's browser bundle in memory with esbuild's JS API, so a server can serve it
// with no build step of its own: the API's dashboard plugin calls this on the first page request,
// with the directory of the dashboard's sources (its DASHBOARD_DIR setting).
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { build } from 'esbuild';

export interface WebAsset {
  readonly contentType: string;
  readonly body: Buffer;
}

/** The files a client is served, by name: `index.html`, `app.js`, `app.css`. */
export type WebBundle = ReadonlyMap<string, WebAsset>;

/** The bundle could not be built (a broken checkout or install); `cause` has esbuild's errors. */
export class WebBundleError extends Error {
  override name = 'WebBundleError';
}

/**
 * The bundle of the client in `webDir`: `index.html` as it is, `main.ts` and what it imports
 * (workspace packages and npm dependencies included) as `app.js`, `style.css` as `app.css`.
 */
export async function buildWebBundle(webDir: string): Promise<WebBundle> {
  try {
    const [result, html] = await Promise.all([
      build({
        absWorkingDir: webDir,
        entryPoints: { app: 'main.ts', style: 'style.css' },
        bundle: true,
        write: false,
        outdir: 'out',
        format: 'esm',
        target: 'es2022',
        minify: true,
        legalComments: 'none',
        logLevel: 'silent',
      }),
      readFile(path.join(webDir, 'index.html')),
    ]);
    const assets = new Map<string, WebAsset>([['index.html', { contentType: 'text/html; charset=utf-8', body: html }]]);
    for (const file of result.outputFiles) {
      const name = path.basename(file.path);
      // esbuild names the CSS of both entries after them; app.css (the styles the script imports
      // would land there) does not occur while main.ts imports no CSS.
      if (name === 'app.js') assets.set('app.js', { contentType: 'text/javascript; charset=utf-8', body: Buffer.from(file.contents) });
      if (name === 'style.css') assets.set('app.css', { contentType: 'text/css; charset=utf-8', body: Buffer.from(file.contents) });
    }
    if (!assets.has('app.js') || !assets.has('app.css')) throw new WebBundleError('esbuild produced no app.js or style.css');
    return assets;
  } catch (error) {
    if (error instanceof WebBundleError) throw error;
    throw new WebBundleError(`the web bundle of ${webDir} could not be built`, { cause: error });
  }
}
