// docker-compose.yml checked without a Docker engine (none runs here): the file is read as Compose
// reads it (YAML merge keys, `${VAR:-default}` and `$$` interpolation with nothing set in the
// shell), and every name one part of the deployment gives another is checked against the part
// that has to answer to it: the apps' configuration loaders read every variable compose sets and
// accept the values; the addresses point at services, ports and users the servers' own settings
// declare; depends_on conditions are satisfiable; mounted files and the Dockerfile's workspaces
// exist; the load balancer reaches the replicas; the health checks ask for routes the API serves;
// the collector, Prometheus and Grafana configurations agree with each other and the dashboards.
// What this cannot check is whether the images start: that needs `docker compose up`.
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { STREAMING_METRIC_NAMES } from '@adp/streaming';
import { loadWorkerConfig } from '@adp/stream-worker';
import { afterAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { loadConfig } from '../../apps/api/src/config.js';
import { openPlatform, type Platform } from '../../apps/api/src/platform.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const read = (file: string): string => readFileSync(path.join(ROOT, file), 'utf8');

type Shell = Readonly<Record<string, string>>;

/** Compose's interpolation: `$$` is a literal `$`; `${A:-d}` is d when A is unset or empty; `${A}`. */
function interpolate(text: string, shell: Shell): string {
  return text.replace(/\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?-)([^}]*))?\}/g, (whole, name: string | undefined, op, fallback: string) => {
    if (whole === '$$') return '$';
    const value = shell[name!];
    if (op === ':-') return value === undefined || value === '' ? fallback : value;
    if (op === '-') return value === undefined ? fallback : value;
    return value ?? '';
  });
}

function interpolateAll(node: unknown, shell: Shell): unknown {
  if (typeof node === 'string') return interpolate(node, shell);
  if (Array.isArray(node)) return node.map((item) => interpolateAll(item, shell));
  if (node !== null && typeof node === 'object') {
    return Object.fromEntries(Object.entries(node).map(([key, value]) => [key, interpolateAll(value, shell)]));
  }
  return node;
}

interface Service {
  readonly image?: string;
  readonly build?: unknown;
  readonly hostname?: string;
  readonly command?: readonly string[];
  readonly environment?: Readonly<Record<string, string | number>>;
  readonly ports?: readonly string[];
  readonly volumes?: readonly string[];
  readonly configs?: readonly { source: string; target: string }[];
  readonly depends_on?: Readonly<Record<string, { condition: string }>> | readonly string[];
  readonly healthcheck?: { readonly test?: readonly string[]; readonly disable?: boolean };
  readonly profiles?: readonly string[];
}

interface Compose {
  readonly services: Readonly<Record<string, Service>>;
  readonly volumes: Readonly<Record<string, unknown>>;
  readonly configs: Readonly<Record<string, { content: string }>>;
}

function loadCompose(shell: Shell = {}): Compose {
  return interpolateAll(parse(read('docker-compose.yml'), { merge: true }), shell) as Compose;
}

const compose = loadCompose();
const services = compose.services;
const service = (name: string): Service => {
  const found = services[name];
  if (!found) throw new Error(`docker-compose.yml has no service ${name}`);
  return found;
};
const environment = (name: string): Record<string, string> =>
  Object.fromEntries(Object.entries(service(name).environment ?? {}).map(([k, v]) => [k, String(v)]));

/** Services built from this repository's Dockerfile (the API replicas, the workers, embedded). */
const APP_SERVICES = Object.keys(services).filter((name) => services[name]!.build !== undefined);
const API_SERVICES = APP_SERVICES.filter((name) => service(name).command?.includes('apps/api/src/server.ts'));

/** Loads a configuration from `env`, returning it and every variable the loader looked at. */
function recordReads<T>(env: Record<string, string>, load: (env: Record<string, string | undefined>) => T): { config: T; reads: Set<string> } {
  const reads = new Set<string>();
  const proxy = new Proxy(env, {
    get(target, key) {
      if (typeof key === 'string') reads.add(key);
      return Reflect.get(target, key) as unknown;
    },
  });
  return { config: load(proxy), reads };
}

/** Whether an OpenTelemetry package in node_modules reads this variable by name. */
const otelSources = ((): string => {
  const dir = path.join(ROOT, 'node_modules/@opentelemetry');
  const texts: string[] = [];
  const walk = (folder: string): void => {
    for (const entry of readdirSync(folder, { withFileTypes: true })) {
      const full = path.join(folder, entry.name);
      if (entry.isDirectory()) walk(full);
      else if (entry.name.endsWith('.js')) texts.push(readFileSync(full, 'utf8'));
    }
  };
  for (const pkg of readdirSync(dir)) {
    const src = path.join(dir, pkg, 'build/src');
    if (existsSync(src)) walk(src);
  }
  return texts.join('\n');
})();

const hostPort = (address: string): { host: string; port: number } => {
  const url = new URL(address.includes('://') ? address : `tcp://${address}`);
  return { host: url.hostname, port: Number(url.port) };
};

/** The container port of a `host:container` mapping. */
const containerPort = (mapping: string): number => Number(mapping.split(':').at(-1));

/** Whether `name` has a health check Compose can wait on (its own, or the Dockerfile's for built services). */
function hasHealthcheck(name: string): boolean {
  const s = service(name);
  if (s.healthcheck?.disable) return false;
  if (s.healthcheck?.test) return true;
  return s.build !== undefined && /^HEALTHCHECK /m.test(read('Dockerfile'));
}

describe('docker-compose.yml: services, dependencies and files', () => {
  it('has the services the deployment is made of', () => {
    expect(Object.keys(services).sort()).toEqual(
      ['api-1', 'api-2', 'api-embedded', 'api-lb', 'clickhouse', 'grafana', 'kafka', 'otel-collector', 'prometheus', 'redis', 'worker'].sort(),
    );
    expect(API_SERVICES.sort()).toEqual(['api-1', 'api-2', 'api-embedded']);
    expect((service('worker') as { deploy?: { replicas?: number } }).deploy?.replicas).toBe(2);
  });

  it('depends only on services that exist, and waits for health only where a health check runs', () => {
    for (const [name, s] of Object.entries(services)) {
      const deps = s.depends_on ?? {};
      const entries = Array.isArray(deps) ? deps.map((dep: string) => [dep, { condition: 'service_started' }] as const) : Object.entries(deps);
      for (const [dep, { condition }] of entries) {
        expect(services[dep], `${name} depends on ${dep}`).toBeDefined();
        expect(['service_started', 'service_healthy', 'service_completed_successfully']).toContain(condition);
        if (condition === 'service_healthy') expect(hasHealthcheck(dep), `${name} waits for ${dep} to be healthy`).toBe(true);
      }
    }
  });

  it('mounts files that exist, and named volumes and configs that are declared', () => {
    for (const [name, s] of Object.entries(services)) {
      for (const volume of s.volumes ?? []) {
        const source = volume.split(':')[0]!;
        if (source.startsWith('./')) expect(existsSync(path.join(ROOT, source)), `${name} mounts ${source}`).toBe(true);
        else expect(compose.volumes, `${name} uses volume ${source}`).toHaveProperty(source);
      }
      for (const config of s.configs ?? []) expect(compose.configs, `${name} uses config ${config.source}`).toHaveProperty(config.source);
    }
  });

  it('builds an image whose install step copies every workspace package', () => {
    const dockerfile = read('Dockerfile');
    const copied = [...dockerfile.matchAll(/^COPY (\S+)\/package\.json \S+$/gm)].map((m) => m[1]!).sort();
    const workspaces = (JSON.parse(read('package.json')) as { workspaces: string[] }).workspaces.flatMap((pattern) => {
      const parent = pattern.replace(/\/\*$/, '');
      return readdirSync(path.join(ROOT, parent))
        .filter((entry) => existsSync(path.join(ROOT, parent, entry, 'package.json')))
        .map((entry) => `${parent}/${entry}`);
    });
    expect(copied).toEqual(workspaces.sort());
  });

  it('runs commands whose files and scripts exist, with tsx a production dependency', () => {
    const pkg = JSON.parse(read('package.json')) as { scripts: Record<string, string>; dependencies: Record<string, string> };
    expect(pkg.dependencies).toHaveProperty('tsx');
    for (const name of APP_SERVICES) {
      const command = service(name).command ?? [];
      const words = command[0] === 'npm' && command[1] === 'run' ? pkg.scripts[command[2]!]!.split(/\s+/) : [...command];
      expect(words.length, `${name}'s command`).toBeGreaterThan(0);
      for (const word of words.filter((w) => w.endsWith('.ts'))) expect(existsSync(path.join(ROOT, word)), `${name} runs ${word}`).toBe(true);
    }
  });
});

describe("docker-compose.yml: the apps' environment", () => {
  const shells: { label: string; shell: Shell }[] = [
    { label: 'nothing set in the shell', shell: {} },
    { label: 'the documented variables set', shell: { BOOTSTRAP_API_KEY: `svc_test_${'a1'.repeat(16)}`, CLICKHOUSE_PASSWORD: 'pw-1' } },
  ];

  for (const { label, shell } of shells) {
    it(`is read and accepted by the API's and the worker's loaders (${label})`, () => {
      const withShell = loadCompose(shell);
      for (const name of APP_SERVICES) {
        const env = Object.fromEntries(Object.entries(withShell.services[name]!.environment ?? {}).map(([k, v]) => [k, String(v)]));
        const reads = new Set<string>();
        // The API process loads both (its embedded worker, and the telemetry topic's partitions).
        if (API_SERVICES.includes(name)) for (const key of recordReads(env, loadConfig).reads) reads.add(key);
        for (const key of recordReads(env, loadWorkerConfig).reads) reads.add(key);
        for (const key of Object.keys(env)) {
          if (key.startsWith('OTEL_')) expect(otelSources, `${name}: ${key} is read by no OpenTelemetry package`).toContain(`'${key}'`);
          else expect(reads.has(key), `${name} sets ${key}, which its configuration never reads`).toBe(true);
        }
      }
    });
  }

  it('binds every API container to all interfaces, as a published port needs (the app alone binds loopback)', () => {
    expect(loadConfig({}).host).toBe('127.0.0.1');
    for (const name of API_SERVICES) expect(loadConfig(environment(name)).host, name).toBe('0.0.0.0');
    expect(read('Dockerfile')).toMatch(/^ENV .*\bHOST=0\.0\.0\.0\b/m);
  });

  it('gives the API replicas and the workers the same servers, topic, database and prefixes', () => {
    const api = ['api-1', 'api-2'].map((name) => loadConfig(environment(name)));
    const worker = loadWorkerConfig(environment('worker'));
    for (const config of api) {
      expect(config.embeddedWorker).toBe(false);
      expect(config.kafkaBrokers).toEqual(worker.kafkaBrokers);
      expect(config.clickhouseUrl).toBe(worker.clickhouseUrl);
      expect(config.clickhouseDatabase).toBe(worker.clickhouseDatabase);
      expect(config.redisUrl).toBe(worker.redisUrl);
      expect(config.redisKeyPrefix).toBe(worker.redisKeyPrefix);
      expect(config.redisChannelPrefix).toBe(worker.redisChannelPrefix);
      expect(config.telemetryTopic).toBe(worker.telemetryTopic);
      expect(config.bootstrapApiKey).toBe(api[0]!.bootstrapApiKey);
    }
    // The embedded profile runs without any server.
    const embedded = loadConfig(environment('api-embedded'));
    expect([embedded.kafkaBrokers, embedded.clickhouseUrl, embedded.redisUrl, embedded.embeddedWorker]).toEqual([undefined, undefined, undefined, true]);
  });

  it('points at the servers as they are declared: broker listener, ClickHouse user and database, Redis, the collector', () => {
    const worker = loadWorkerConfig(environment('worker'));
    const kafka = environment('kafka');
    expect(worker.kafkaBrokers).toHaveLength(1);
    expect(kafka['KAFKA_ADVERTISED_LISTENERS']!.split(',')).toContain(`PLAINTEXT://${worker.kafkaBrokers![0]}`);
    expect(kafka['KAFKA_AUTO_CREATE_TOPICS_ENABLE']).toBe('false');

    const clickhouse = environment('clickhouse');
    const url = new URL(worker.clickhouseUrl!);
    expect([url.hostname, url.port]).toEqual([service('clickhouse').hostname, '8123']);
    expect(service('clickhouse').ports).toContain('8123:8123');
    expect(decodeURIComponent(url.username)).toBe(clickhouse['CLICKHOUSE_USER']);
    expect(decodeURIComponent(url.password)).toBe(clickhouse['CLICKHOUSE_PASSWORD']);
    expect(worker.clickhouseDatabase).toBe(clickhouse['CLICKHOUSE_DB']);

    expect(hostPort(worker.redisUrl!)).toEqual({ host: service('redis').hostname, port: 6379 });

    const collector = parse(read('infra/otel/collector.yaml')) as {
      receivers: { otlp: { protocols: { http: { endpoint: string } } } };
      exporters: { prometheus: { endpoint: string } };
    };
    for (const name of ['api-1', 'api-2', 'worker']) {
      const endpoint = new URL(environment(name)['OTEL_EXPORTER_OTLP_ENDPOINT']!);
      expect(endpoint.hostname, name).toBe('otel-collector');
      expect(Number(endpoint.port), name).toBe(hostPort(collector.receivers.otlp.protocols.http.endpoint).port);
      expect(environment(name)['OTEL_EXPORTER_OTLP_PROTOCOL']).toBe('http/protobuf');
    }
    const prometheus = parse(read('infra/otel/prometheus.yml')) as { scrape_configs: { static_configs: { targets: string[] }[] }[] };
    expect(prometheus.scrape_configs.flatMap((c) => c.static_configs.flatMap((s) => s.targets))).toEqual([
      `otel-collector:${hostPort(collector.exporters.prometheus.endpoint).port}`,
    ]);
  });
});

describe('docker-compose.yml: the load balancer and the health checks', () => {
  const nginx = compose.configs['nginx-api-lb']!.content;

  it('balances over the two API replicas on the port they listen on, and lets the API answer oversized bodies', () => {
    const [, upstreamName, upstreamBody] = /upstream (\w+) \{([^}]*)\}/.exec(nginx) ?? [];
    expect(nginx).toContain(`proxy_pass http://${upstreamName};`);
    const upstream = [...upstreamBody!.matchAll(/^\s*server (\S+?)(?:\s[^;]*)?;/gm)].map((m) => m[1]);
    const replicas = ['api-1', 'api-2'].map((name) => `${service(name).hostname}:${loadConfig(environment(name)).port}`);
    expect(upstream).toEqual(replicas);
    const listen = Number(/^\s*listen (\d+);/m.exec(nginx)?.[1]);
    expect(service('api-lb').ports?.map(containerPort)).toEqual([listen]);
    expect(service('api-lb').configs).toEqual([{ source: 'nginx-api-lb', target: '/etc/nginx/conf.d/default.conf' }]);
    // nginx's limit above the API's: the client gets the API's own 413 body, not nginx's page.
    const [, size, unit] = /client_max_body_size (\d+)([kmg]?);/i.exec(nginx) ?? [];
    const bytes = Number(size) * ({ '': 1, k: 1024, m: 1024 ** 2, g: 1024 ** 3 } as Record<string, number>)[(unit ?? '').toLowerCase()]!;
    expect(bytes).toBeGreaterThanOrEqual(loadConfig(environment('api-1')).bodyLimitBytes);
    // Variables nginx expands survived Compose's interpolation as nginx variables.
    expect(nginx).toContain('proxy_set_header Host $host;');
  });

  describe('on the embedded profile, booted from its own environment', () => {
    let platform: Platform;
    const dataDir = mkdtempSync(path.join(os.tmpdir(), 'adp-compose-'));
    afterAll(async () => {
      await platform?.close();
      rmSync(dataDir, { recursive: true, force: true });
    });

    it("answers every health check's URL: the replicas' /readyz, the image's and the load balancer's /healthz", async () => {
      const env = { ...environment('api-embedded'), DATA_DIR: dataDir, LOG_LEVEL: 'silent' };
      platform = await openPlatform(loadConfig(env), { worker: loadWorkerConfig(env) });
      const urls = [
        ...['api-1', 'api-2', 'api-lb'].map((name) => service(name).healthcheck!.test!.join(' ')),
        /^HEALTHCHECK .*$\n.*$/m.exec(read('Dockerfile'))![0],
      ].map((text) => /http:\/\/127\.0\.0\.1:[^/]+(\/[a-z]+)/.exec(text)?.[1]);
      expect(urls).toEqual(['/readyz', '/readyz', '/healthz', '/healthz']);
      for (const url of new Set(urls)) {
        const response = await platform.app.inject({ method: 'GET', url: url! });
        expect(response.statusCode, url).toBe(200);
      }
    });
  });
});

describe('Grafana, as provisioned in docker-compose.yml', () => {
  const grafana = service('grafana');
  const mounts = new Map((grafana.volumes ?? []).map((v) => [v.split(':')[1]!, v.split(':')[0]!]));
  const datasources = (
    parse(interpolate(read('infra/grafana/provisioning/datasources/datasources.yaml'), {})) as {
      datasources: { uid: string; type: string; url?: string; jsonData: Record<string, unknown> }[];
    }
  ).datasources;

  it('reads ClickHouse as the read-only user the server creates, and Prometheus at its service', () => {
    const clickhouse = datasources.find((d) => d.type === 'grafana-clickhouse-datasource')!;
    expect(clickhouse.jsonData).toMatchObject({ host: service('clickhouse').hostname, port: 8123, protocol: 'http', defaultDatabase: environment('clickhouse')['CLICKHOUSE_DB'] });
    const init = compose.configs['clickhouse-grafana-user']!.content;
    expect(init).toContain(`CREATE USER IF NOT EXISTS ${String(clickhouse.jsonData['username'])} `);
    expect(init).toContain(`GRANT SELECT ON ${environment('clickhouse')['CLICKHOUSE_DB']}.* TO ${String(clickhouse.jsonData['username'])};`);
    expect(environment('grafana')['GRAFANA_CLICKHOUSE_PASSWORD']).toBe(environment('clickhouse')['GRAFANA_CLICKHOUSE_PASSWORD']);
    const prometheus = datasources.find((d) => d.type === 'prometheus')!;
    expect(hostPort(prometheus.url!)).toEqual({ host: 'prometheus', port: containerPort(service('prometheus').ports![0]!) });
    expect(environment('grafana')['GF_PLUGINS_PREINSTALL_SYNC']).toBe(clickhouse.type);
  });

  it('loads the dashboards from the mounted folder, and they use only the provisioned data sources', () => {
    const provider = (
      parse(read('infra/grafana/provisioning/dashboards/dashboards.yaml')) as { providers: { options: { path: string } }[] }
    ).providers[0]!;
    expect(mounts.get(provider.options.path)).toBe('./infra/grafana/dashboards');
    expect(mounts.get('/etc/grafana/provisioning')).toBe('./infra/grafana/provisioning');
    const home = environment('grafana')['GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH']!;
    expect(existsSync(path.join(ROOT, 'infra/grafana/dashboards', path.relative(provider.options.path, home)))).toBe(true);
    const uids = new Set(datasources.map((d) => d.uid));
    for (const file of readdirSync(path.join(ROOT, 'infra/grafana/dashboards'))) {
      const text = read(`infra/grafana/dashboards/${file}`);
      const used = [...text.matchAll(/"datasource":\s*\{\s*"type":\s*"([^"]+)",\s*"uid":\s*"([^"]+)"/g)];
      expect(used.length, file).toBeGreaterThan(0);
      for (const [, type, uid] of used) {
        expect(uids.has(uid!), `${file} uses data source ${uid}`).toBe(true);
        expect(datasources.find((d) => d.uid === uid)!.type).toBe(type);
      }
    }
  });

  it("graphs every metric the workers export, by the names the collector's Prometheus exporter gives them", () => {
    const pipeline = JSON.parse(read('infra/grafana/dashboards/pipeline.json')) as { panels: { targets?: { expr?: string }[] }[] };
    const exprs = pipeline.panels.flatMap((p) => (p.targets ?? []).flatMap((t) => (t.expr ? [t.expr] : [])));
    // The exporter turns dots into underscores and may append a unit and `_total` (the regexes
    // in the dashboard allow both); histograms add _bucket, _sum and _count.
    const recorded = [...read('packages/streaming/src/metrics.ts').matchAll(/'([a-z]+(?:\.[a-z]+)+)': /g)].map((m) => m[1]!.replaceAll('.', '_'));
    expect(recorded).toContain('messaging_destination_partition_id');
    const bases = Object.values(STREAMING_METRIC_NAMES).map((name) => name.replaceAll('.', '_'));
    for (const base of bases) expect(exprs.some((e) => e.includes(base)), `a panel graphs ${base}`).toBe(true);
    for (const expr of exprs) {
      for (const [name] of expr.matchAll(/adp_[a-z_]+/g)) {
        expect(bases.some((base) => name.startsWith(base)), `${name} in ${expr}`).toBe(true);
      }
      // Label names: Prometheus's own, or an attribute the metrics record, dots as underscores.
      for (const [, labels] of expr.matchAll(/by \(([^)]*)\)/g)) {
        for (const label of labels!.split(',').map((l) => l.trim())) {
          expect(['job', 'instance', 'le', ...recorded], `label ${label} in ${expr}`).toContain(label);
        }
      }
    }
  });
});
