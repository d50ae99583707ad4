// Builds the dashboard's browser bundle in memory with esbuild's JS API, so `npm start` serves it
// with no build step of its own: the API's dashboard plugin calls this on the first page request.
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const WEB_DIR = fileURLToPath(new URL('../web/', import.meta.url));

export interface DashboardAsset {
  readonly contentType: string;
  readonly body: Buffer;
}

/** The files under /dashboard/, by name: `index.html`, `app.js`, `app.css`. */
export type DashboardBundle = ReadonlyMap<string, DashboardAsset>;

/** The bundle could not be built (a broken checkout or install); `cause` has esbuild's errors. */
export class DashboardBuildError extends Error {
  override name = 'DashboardBuildError';
}

export async function buildDashboard(): Promise<DashboardBundle> {
  try {
    const [result, html] = await Promise.all([
      build({
        absWorkingDir: WEB_DIR,
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
      readFile(`${WEB_DIR}index.html`),
    ]);
    const assets = new Map<string, DashboardAsset>([['index.html', { contentType: 'text/html; charset=utf-8', body: html }]]);
    for (const file of result.outputFiles) {
      const name = file.path.slice(file.path.lastIndexOf('/') + 1);
      // esbuild names the CSS of both entries after them; app.css (the uPlot styles the script
      // imports would land there) does not occur because main.ts imports no CSS.
      if (name === 'app.js') assets.set('app.js', { contentType: 'text/javascript; charset=utf-8', body: Buffer.from(file.contents) });
      if (name === 'style.css') assets.set('app.css', { contentType: 'text/css; charset=utf-8', body: Buffer.from(file.contents) });
    }
    if (!assets.has('app.js') || !assets.has('app.css')) throw new DashboardBuildError('esbuild produced no app.js or style.css');
    return assets;
  } catch (error) {
    if (error instanceof DashboardBuildError) throw error;
    throw new DashboardBuildError('the dashboard bundle could not be built', { cause: error });
  }
}
