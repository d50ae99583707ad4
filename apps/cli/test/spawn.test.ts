// The real process: exit statuses, stderr messages and no stack traces.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { syntheticCsv } from './synthetic.js';

const repoRoot = fileURLToPath(new URL('../../../', import.meta.url));
const mainTs = join(repoRoot, 'apps/cli/src/main.ts');

interface Outcome {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

function detect(args: string[], stdin?: string): Promise<Outcome> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', mainTs, ...args], { cwd: repoRoot });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(stdin ?? '');
  });
}

function expectNoStack(o: Outcome) {
  expect(o.stderr).not.toMatch(/\n\s+at /);
  expect(o.stderr.trim().split('\n')).toHaveLength(1);
}

let dir = '';
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'adp-cli-'));
  writeFileSync(join(dir, 'good.csv'), syntheticCsv({ points: 48, period: 12, spikes: [40] }, '\r\n'));
  const bad = syntheticCsv({ points: 48, period: 12 }).split('\n');
  bad[9] = '2024-01-01T08:00:00.000Z,twelve';
  writeFileSync(join(dir, 'bad.csv'), bad.join('\n'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('detect as a process', () => {
  it('exits 0 and writes JSON lines', async () => {
    const o = await detect([join(dir, 'good.csv'), '--period', '12']);
    expect(o.stderr).toBe('');
    expect(o.code).toBe(0);
    const lines = o.stdout.trim().split('\n');
    expect(lines).toHaveLength(48);
    expect(JSON.parse(lines[40] as string)).toMatchObject({ isAnomaly: true });
  });

  it('reads standard input for `-`', async () => {
    const o = await detect(['-', '--mode', 'last'], syntheticCsv({ points: 30, period: 12 }));
    expect(o.code).toBe(0);
    expect(o.stdout.trim().split('\n')).toHaveLength(1);
  });

  it('exits 1 for a missing file', async () => {
    const o = await detect([join(dir, 'nope.csv')]);
    expect(o.code).toBe(1);
    expect(o.stderr).toMatch(/^detect: cannot read .*nope\.csv: no such file/);
    expect(o.stdout).toBe('');
    expectNoStack(o);
  });

  it('exits 1 for a non-numeric value, naming its line', async () => {
    const o = await detect([join(dir, 'bad.csv')]);
    expect(o.code).toBe(1);
    expect(o.stderr).toBe('detect: line 10: value "twelve" is not a finite number\n');
    expectNoStack(o);
  });

  it('exits 2 for an unknown flag, an unknown mode and a bad number', async () => {
    const results = await Promise.all([
      detect([join(dir, 'good.csv'), '--verbose']),
      detect([join(dir, 'good.csv'), '--mode', 'batch']),
      detect([join(dir, 'good.csv'), '--sensitivity', 'lots']),
    ]);
    for (const o of results) {
      expect(o.code).toBe(2);
      expectNoStack(o);
    }
    expect(results[0]?.stderr).toMatch(/unknown option --verbose/);
    expect(results[1]?.stderr).toMatch(/--mode: "batch" is not valid/);
    expect(results[2]?.stderr).toMatch(/--sensitivity: "lots" is not valid/);
  });
});
