// startObservability in a real child process: the SDK starts only when an OTEL_* variable asks for it,
// names the service, and shutdownObservability exports what was buffered.
import { execFile } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const run = promisify(execFile);
const here = path.dirname(fileURLToPath(import.meta.url));

// Starts the SDK as an app would, opens and ends one span through the API only, then shuts down.
const SCRIPT = `
import { trace } from '@opentelemetry/api';
import { shutdownObservability, startObservability } from '${path.resolve(here, '../src/index.ts')}';
startObservability('adp-test-app');
startObservability('ignored-second-call');
trace.getTracer('sdk-test').startActiveSpan('probe-span', (span) => span.end());
await shutdownObservability();
await shutdownObservability();
console.log('exited-cleanly');
`;

async function child(env: Record<string, string>): Promise<string> {
  const clean = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('OTEL_')));
  const { stdout } = await run(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', SCRIPT], {
    env: { ...clean, ...env },
    cwd: here,
    timeout: 60_000,
  });
  return stdout;
}

describe('startObservability', () => {
  it('exports spans with the default service name when an exporter is configured', async () => {
    const out = await child({ OTEL_TRACES_EXPORTER: 'console', OTEL_METRICS_EXPORTER: 'none' });
    expect(out).toContain("name: 'probe-span'");
    expect(out).toContain("'service.name': 'adp-test-app'");
    expect(out).toContain('exited-cleanly');
  });

  it('lets OTEL_SERVICE_NAME override the default', async () => {
    const out = await child({ OTEL_TRACES_EXPORTER: 'console', OTEL_METRICS_EXPORTER: 'none', OTEL_SERVICE_NAME: 'custom-name' });
    expect(out).toContain("'service.name': 'custom-name'");
  });

  it('starts nothing without OTEL_* settings, or with OTEL_SDK_DISABLED=true', async () => {
    const settings: Record<string, string>[] = [{}, { OTEL_TRACES_EXPORTER: 'console', OTEL_SDK_DISABLED: 'true' }];
    for (const env of settings) {
      const out = await child(env);
      expect(out).not.toContain('probe-span');
      expect(out).toContain('exited-cleanly');
    }
  });
});
