// The process: configuration from the environment, pino logging, listen, graceful shutdown.
// `npm start` runs this file. The app, the streaming pieces and the embedded worker are opened by
// openPlatform (./platform.ts) and are testable without it. With API_WORKERS above 1 this process
// is the primary of a cluster of such processes (./cluster.ts).
import cluster from 'node:cluster';
import { loadWorkerConfig, WorkerConfigError, type WorkerConfig } from '@adp/stream-worker';
import { isShutdownMessage, runPrimary } from './cluster.js';
import { loadConfig, type ApiConfig } from './config.js';
import { shutdownObservability } from './instrumentation.js';
import { ConfigError } from './errors.js';
import { openPlatform } from './platform.js';
import type { BootstrapResult } from './tenancy/bootstrap.js';

async function main(): Promise<void> {
  let config: ApiConfig;
  let workerConfig: WorkerConfig | undefined;
  try {
    config = loadConfig(process.env);
    // The worker's own variables (WORKER_*, TELEMETRY_PARTITIONS, ...): the embedded worker runs
    // with them, and without it the API still creates the telemetry topic with TELEMETRY_PARTITIONS.
    workerConfig = loadWorkerConfig(process.env);
  } catch (err) {
    if (err instanceof ConfigError || err instanceof WorkerConfigError) {
      process.stderr.write(`${err instanceof WorkerConfigError ? `Invalid configuration: ${err.message}` : err.message}\n`);
      process.exit(1);
    }
    throw err;
  }
  if (config.apiWorkers > 1 && cluster.isPrimary) {
    await runPrimary({ workers: config.apiWorkers, shutdownGraceMs: config.shutdownGraceMs, log: (line) => process.stdout.write(`${line}\n`) });
    return;
  }

  const platform = await openPlatform(config, {
    logger: {
      level: config.logLevel,
      // Keys never reach the logs, whatever a serializer decides to include.
      redact: {
        paths: ['req.headers["ocp-apim-subscription-key"]', 'req.headers["x-service-key"]', 'req.headers.authorization'],
        censor: '[redacted]',
      },
    },
    ...(workerConfig ? { worker: workerConfig } : {}),
  });
  const { app } = platform;

  let stopping = false;
  const stop = (signal: NodeJS.Signals, fromPrimary = false): void => {
    // A cluster's primary asks too when a terminal's Ctrl-C has signalled every process: not a second signal.
    if (stopping && fromPrimary) return;
    if (stopping) {
      app.log.warn({ signal }, 'second signal: exiting now');
      process.exit(1);
    }
    stopping = true;
    app.log.info({ signal, graceMs: config.shutdownGraceMs }, 'shutting down');
    const deadline = setTimeout(() => {
      app.log.error('graceful shutdown took too long: exiting');
      process.exit(1);
    }, config.shutdownGraceMs);
    deadline.unref();
    platform
      // Half the grace period for the worker to catch up with the backlog; whatever it does not
      // reach (or a hard exit at the deadline) is left in the durable bus for the next start.
      .close({ drainMs: Math.floor(config.shutdownGraceMs / 2) })
      .then(
        () => 0,
        (err: unknown) => {
          app.log.error({ err }, 'shutdown failed');
          return 1;
        },
      )
      // The spans of the shutdown itself are exported before the process ends.
      .then(async (code) => {
        await shutdownObservability();
        process.exit(code);
      });
  };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
  if (cluster.isWorker) {
    process.on('message', (message: unknown) => {
      if (isShutdownMessage(message)) stop(message.signal, true);
    });
  }

  try {
    await app.listen({ host: config.host, port: config.port });
  } catch (err) {
    // The keys are in the store and the file already; without this line they would be nowhere on screen.
    if (app.bootstrap.keysFile !== null) {
      process.stderr.write(`The API keys created on this start are saved in ${app.bootstrap.keysFile} (every start names that file).\n`);
    }
    throw err;
  }
  // In a cluster the first worker's start is the one that creates keys; the others would repeat its notices.
  if (!cluster.isWorker || cluster.worker?.id === 1) printBootstrap(app.bootstrap);
  if (app.bootstrapAccount !== null) {
    const { email, password, file } = app.bootstrapAccount;
    const lines = [
      '',
      `  Dashboard: http://${config.host.includes(':') ? `[${config.host}]` : config.host}:${listeningPort(app.server.address(), config.port)}/dashboard/ (sign in as below)`,
      `  Dashboard account created for the default organization: ${email}, password`,
      `    ${password}`,
      `  Saved in ${file} (mode 0600). Shown only this once; create more accounts with`,
      '  POST /admin/v1/organizations/{org_id}/users (docs/identity-and-audit.md).',
      '',
    ];
    process.stdout.write(`${lines.join('\n')}\n`);
  }
}

/** The port the server listens on (PORT=0 picks one). */
function listeningPort(address: string | { port: number } | null, configured: number): number {
  return typeof address === 'object' && address !== null ? address.port : configured;
}

/** Prints the keys created on this start, once; later starts name the file they are saved in while it exists. */
function printBootstrap(bootstrap: BootstrapResult): void {
  if (bootstrap.configuredKey?.created === true) {
    process.stdout.write(`\n  Created BOOTSTRAP_API_KEY (a ${bootstrap.configuredKey.kind} key) for the default organization.\n\n`);
  }
  if (bootstrap.earlierKeysFile !== null) {
    const lines = [
      '',
      `  The first start's API keys are saved in ${bootstrap.earlierKeysFile} (mode 0600).`,
      '  Delete that file once they are kept somewhere safe; until then every start names it.',
      '',
    ];
    process.stdout.write(`${lines.join('\n')}\n`);
  }
  if (bootstrap.createdKeys.length === 0) return;
  const lines = [
    '',
    '  First start: created the default organization and its API keys.',
    '',
    ...bootstrap.createdKeys.map((issued) => `    ${issued.kind.padEnd(4)}  ${issued.key}`),
    '',
    `  Saved in ${bootstrap.keysFile ?? '(not saved)'} (mode 0600).`,
    '  They are shown only this once and stored only as hashes; every start names the',
    '  file until you delete it. Send one in the Ocp-Apim-Subscription-Key header',
    '  (or X-Service-Key, or Authorization: Bearer).',
    '',
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
}

main().catch((err: unknown) => {
  process.stderr.write(`The API failed to start: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
