// The command-line detector's examples (README.md and apps/cli/README.md), run as a user runs them:
// each line to bash from the repository root, through `npm run`, on the file they name, which ships
// in examples/. The README's sentence after its block is held to what the commands print.
import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fencedBlocks, theBlock } from './readme.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const read = (file: string): string => readFileSync(join(ROOT, file), 'utf8');

async function bash(command: string): Promise<string> {
  const { stdout } = await promisify(execFile)('bash', ['-c', command], { cwd: ROOT, maxBuffer: 64 * 1024 * 1024 });
  return stdout;
}

interface Judged {
  readonly timestamp: string;
  readonly isAnomaly: boolean;
  readonly isChangePoint?: boolean;
}

/** The JSON lines of an output, npm's banner lines (not JSON) left out. */
const judgedLines = (stdout: string): Judged[] =>
  stdout.split('\n').filter((line) => line.startsWith('{')).map((line) => JSON.parse(line) as Judged);
const flagged = (lines: readonly Judged[], key: 'isAnomaly' | 'isChangePoint'): string[] =>
  lines.filter((line) => line[key] === true).map((line) => line.timestamp);

/** The commands of a shell block, one a line; placeholders such as `<file.csv>` are not commands. */
const commandsOf = (text: string): string[] => text.split('\n').filter((line) => line.trim() !== '' && !line.includes('<'));

/** The CSV file a command reads (as a `detect` argument or through `cat`). */
const fileOf = (command: string): string => /(\S+\.csv)(?:\s|$)/.exec(command)?.[1] ?? `no .csv file in: ${command}`;

describe("the README's command-line examples", () => {
  const readme = read('README.md');
  const commands = commandsOf(theBlock(fencedBlocks(readme), 'sh', 'npm run --silent detect --').text);
  const claims = /each command prints (\d+) lines, each flags the spike at `([^`]+)` and no other point,\s+and the changepoint mode marks the step at `([^`]+)` and no other point/.exec(readme);

  it('read a file the repository ships, and the README says what they answer', () => {
    expect(commands).toHaveLength(3);
    for (const command of commands) expect(existsSync(join(ROOT, fileOf(command))), command).toBe(true);
    expect(claims, 'the sentence after the block').not.toBeNull();
  });

  it.each(commands)('%s', async (command) => {
    const lines = judgedLines(await bash(command));
    expect(lines).toHaveLength(Number(claims![1]));
    expect(flagged(lines, 'isAnomaly')).toEqual([claims![2]]);
    if (command.includes('--mode changepoint')) expect(flagged(lines, 'isChangePoint')).toEqual([claims![3]]);
  });
});

describe("apps/cli/README.md's examples", () => {
  const commands = commandsOf(fencedBlocks(read('apps/cli/README.md'))[0]!.text);
  let out: string;
  beforeAll(async () => {
    out = await mkdtemp(join(tmpdir(), 'adp-readme-cli-'));
  });
  afterAll(async () => {
    await rm(out, { recursive: true, force: true });
  });

  it('read a file the repository ships', () => {
    expect(commands).toHaveLength(2);
    for (const command of commands) expect(existsSync(join(ROOT, fileOf(command))), command).toBe(true);
  });

  it('writes every point judged as the worker judges it to a file (written to a temporary folder here)', async () => {
    const command = commands.find((line) => line.includes('> judged.jsonl'))!;
    await bash(command.replace('> judged.jsonl', `> ${join(out, 'judged.jsonl')}`));
    const lines = judgedLines(await readFile(join(out, 'judged.jsonl'), 'utf8'));
    expect(lines).toHaveLength(336);
    expect(flagged(lines, 'isAnomaly')).toEqual(['2024-03-10T14:00:00Z']);
  });

  it('judges the last point of standard input', async () => {
    const lines = judgedLines(await bash(commands.find((line) => line.startsWith('cat '))!));
    expect(lines).toEqual([expect.objectContaining({ timestamp: '2024-03-14T23:00:00Z', isAnomaly: false })]);
  });
});
