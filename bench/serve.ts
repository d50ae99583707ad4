// The server side of the benchmark, run as a child process so that the load generator and the
// server do not share one event loop. The parent sends the settings over IPC; the child builds the
// app exactly as the production entry point would, listens on a free loopback port and reports it.
import type { AddressInfo } from 'node:net';
import { buildApp, loadConfig } from '@adp/api';

export interface ServeRequest {
  readonly type: 'start';
  readonly dataDir: string;
  readonly apiKey: string;
  /** pino level, as LOG_LEVEL gives it to server.ts. */
  readonly logLevel: string;
}

export type ServeReply =
  | { readonly type: 'listening'; readonly port: number }
  | { readonly type: 'failed'; readonly message: string }
  | { readonly type: 'closed' };

function reply(message: ServeReply): void {
  process.send?.(message);
}

type App = Awaited<ReturnType<typeof buildApp>>;
let app: App | undefined;

process.on('message', (message: ServeRequest | { type: 'close' }) => {
  if (message.type === 'start') {
    void (async () => {
      try {
        const config = loadConfig({
          DATA_DIR: message.dataDir,
          HOST: '127.0.0.1',
          PORT: '0',
          BOOTSTRAP_API_KEY: message.apiKey,
          LOG_LEVEL: message.logLevel,
        });
        // Logging as server.ts sets it up, so the figures include the per-request log lines a
        // production server writes (to this process's stdout, which the parent discards).
        app = await buildApp(config, { logger: { level: config.logLevel } });
        await app.listen({ host: '127.0.0.1', port: 0 });
        reply({ type: 'listening', port: (app.server.address() as AddressInfo).port });
      } catch (err) {
        reply({ type: 'failed', message: err instanceof Error ? err.message : String(err) });
      }
    })();
  } else {
    void (async () => {
      await app?.close();
      reply({ type: 'closed' });
      process.disconnect();
    })();
  }
});
