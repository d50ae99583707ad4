// The server side of the benchmark's jobs section: like ./serve.ts, a child process the parent
// drives over IPC, but the whole platform (openPlatform: the API, the bus, the job store and the
// job worker in this process, as `npm start` runs them), on the embedded default or, with the
// scale-out variables in `env`, on Kafka and ClickHouse.
import type { AddressInfo } from 'node:net';
import { loadWorkerConfig } from '@adp/stream-worker';
import { loadConfig, openPlatform, type Platform } from '@adp/api';

export interface ServePlatformRequest {
  readonly type: 'start';
  /** The platform's environment: DATA_DIR, BOOTSTRAP_API_KEY, LOG_LEVEL and any scale-out variables. */
  readonly env: Readonly<Record<string, string>>;
}

export type ServePlatformReply =
  | { readonly type: 'listening'; readonly port: number }
  | { readonly type: 'failed'; readonly message: string }
  | { readonly type: 'closed' };

function reply(message: ServePlatformReply): void {
  process.send?.(message);
}

let platform: Platform | undefined;

process.on('message', (message: ServePlatformRequest | { type: 'close' }) => {
  if (message.type === 'start') {
    void (async () => {
      try {
        const env = { HOST: '127.0.0.1', PORT: '0', ...message.env };
        const config = loadConfig(env);
        platform = await openPlatform(config, { worker: loadWorkerConfig(env), logger: { level: config.logLevel } });
        await platform.app.listen({ host: '127.0.0.1', port: 0 });
        reply({ type: 'listening', port: (platform.app.server.address() as AddressInfo).port });
      } catch (err) {
        reply({ type: 'failed', message: err instanceof Error ? err.message : String(err) });
      }
    })();
  } else {
    void (async () => {
      await platform?.close();
      reply({ type: 'closed' });
      process.disconnect();
    })();
  }
});
