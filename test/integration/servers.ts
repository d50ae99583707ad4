// Where the integration tier finds its real servers, and whether a test file may run against them.
// Addresses come from the environment (the variables `infra/servers.sh` prints), with the scripts'
// defaults when unset. A file asks `serverGate(name)` at load time:
//   - the server answers            -> its tests run;
//   - it does not and CI=true       -> the file fails, naming the script that starts it;
//   - it does not, outside CI       -> its tests are skipped with a message saying how to start it.
// Each test also gets its own names (`isolatedName`) so tests never share a key, database or topic.
import { randomBytes } from 'node:crypto';
import { connect } from 'node:net';

export type ServerName = 'redis' | 'clickhouse' | 'kafka';

export interface ServerAddress {
  readonly name: ServerName;
  /** The environment variable the address comes from. */
  readonly envVar: string;
  /** As the client takes it: `redis://host:port`, `http://host:port`, `host:port[,host:port]`. */
  readonly value: string;
  /** The endpoint probed for reachability (the first broker for Kafka). */
  readonly host: string;
  readonly port: number;
}

export type ServerGate =
  | { readonly run: true; readonly address: ServerAddress }
  | { readonly run: false; readonly address: ServerAddress; readonly reason: string };

const SERVERS = {
  redis: { envVar: 'REDIS_URL', fallback: 'redis://127.0.0.1:6379', script: 'infra/redis.sh' },
  clickhouse: { envVar: 'CLICKHOUSE_URL', fallback: 'http://127.0.0.1:8123', script: 'infra/clickhouse.sh' },
  kafka: { envVar: 'KAFKA_BROKERS', fallback: '127.0.0.1:9092', script: 'infra/kafka.sh' },
} as const satisfies Record<ServerName, { envVar: string; fallback: string; script: string }>;

/** How long a TCP connect may take before the server counts as unreachable (loopback: instant). */
const PROBE_TIMEOUT_MS = 2_000;

export function serverAddress(name: ServerName, env: NodeJS.ProcessEnv = process.env): ServerAddress {
  const { envVar, fallback } = SERVERS[name];
  const value = env[envVar]?.trim() || fallback;
  const endpoint = name === 'kafka' ? `tcp://${value.split(',')[0]?.trim() ?? ''}` : value;
  let url: URL;
  try {
    url = new URL(endpoint);
  } catch {
    throw new Error(`${envVar}=${JSON.stringify(value)} is not a valid ${name} address (expected like ${fallback})`);
  }
  const port = Number(url.port);
  if (!url.hostname || !Number.isInteger(port) || port <= 0) {
    throw new Error(`${envVar}=${JSON.stringify(value)} has no host and port (expected like ${fallback})`);
  }
  // URL keeps the brackets of an IPv6 literal; net.connect wants the bare address.
  return { name, envVar, value, host: url.hostname.replace(/^\[(.*)\]$/, '$1'), port };
}

/** True when a TCP connection to host:port opens within the timeout. */
export function reachable(host: string, port: number, timeoutMs = PROBE_TIMEOUT_MS): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host, port });
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}

/**
 * Decides whether a test file runs against `name`. Throws (failing the file) when the server is
 * unreachable and CI=true; otherwise returns a gate for `describe.skipIf(!gate.run)`.
 */
export async function serverGate(name: ServerName, env: NodeJS.ProcessEnv = process.env): Promise<ServerGate> {
  const address = serverAddress(name, env);
  if (await reachable(address.host, address.port)) {
    return { run: true, address };
  }
  const { script } = SERVERS[name];
  const reason =
    `${name} is not reachable at ${address.value} (${address.envVar}). ` +
    `Start it with \`bash ${script}\` (or all three with \`bash infra/servers.sh\`).`;
  if (env.CI === 'true' || env.CI === '1') {
    throw new Error(`CI=true and ${reason}`);
  }
  console.warn(`[integration] skipping the ${name} tests: ${reason}`);
  return { run: false, address, reason };
}

/** A `describe` title that carries the skip reason, so a skipped block says why in the report. */
export function gateTitle(title: string, gate: ServerGate): string {
  return gate.run ? title : `${title} (skipped: ${gate.reason})`;
}

/**
 * A name no other test (or earlier run) uses: `<prefix>_<time>_<random>`, lower-case letters,
 * digits and underscores only, so it is also a valid ClickHouse identifier, Kafka topic and group
 * id, and Redis key prefix without quoting.
 */
export function isolatedName(prefix: string): string {
  if (!/^[a-z][a-z0-9_]{0,30}$/.test(prefix)) {
    throw new Error(`isolatedName: prefix ${JSON.stringify(prefix)} must match [a-z][a-z0-9_]{0,30}`);
  }
  return `${prefix}_${Date.now().toString(36)}_${randomBytes(4).toString('hex')}`;
}

/** Kafka, ClickHouse and Redis together, for tests that need the whole scale-out stack. */
export interface AllServersGate {
  /** Every server is reachable. */
  readonly run: boolean;
  /** `title`, or with the first unreachable server's skip reason. */
  readonly title: string;
  readonly urls: { readonly kafkaBrokers: string; readonly clickhouseUrl: string; readonly redisUrl: string };
}

export async function allServersGate(title: string): Promise<AllServersGate> {
  const kafka = await serverGate('kafka');
  const clickhouse = await serverGate('clickhouse');
  const redis = await serverGate('redis');
  const skipped = [kafka, clickhouse, redis].find((gate) => !gate.run);
  return {
    run: skipped === undefined,
    title: gateTitle(title, skipped ?? kafka),
    urls: { kafkaBrokers: kafka.address.value, clickhouseUrl: clickhouse.address.value, redisUrl: redis.address.value },
  };
}
