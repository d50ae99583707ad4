// Reading the README's examples as a user reads them: its fenced blocks, the shell blocks run by
// bash with curl and python3 against a test server, and the answers it prints beside them
// compared with the answers the server gives. Used by readme-examples.test.ts.
import { spawn, spawnSync } from 'node:child_process';
import { printedAs } from '../markdown.js';

export interface FencedBlock {
  /** The info string after the opening fence (`sh`, `json`, or empty). */
  readonly lang: string;
  readonly text: string;
  /** 1-based line of the block's first content line in the file. */
  readonly line: number;
}

/** Every fenced block of a Markdown text (fences at the start of a line), in order. */
export function fencedBlocks(markdown: string): FencedBlock[] {
  const blocks: FencedBlock[] = [];
  let open: { lang: string; line: number; body: string[] } | null = null;
  markdown.split('\n').forEach((line, index) => {
    if (open === null) {
      const fence = /^```(\S*)\s*$/.exec(line);
      if (fence) open = { lang: fence[1]!, line: index + 2, body: [] };
    } else if (/^```\s*$/.test(line)) {
      blocks.push({ lang: open.lang, text: open.body.join('\n'), line: open.line });
      open = null;
    } else {
      open.body.push(line);
    }
  });
  if (open !== null) throw new Error(`unclosed fence opened before line ${(open as { line: number }).line}`);
  return blocks;
}

/** The one block of `lang` whose text satisfies `match` (a substring or a predicate); throws unless exactly one does. */
export function theBlock(blocks: readonly FencedBlock[], lang: string, match: string | ((text: string) => boolean)): FencedBlock {
  const test = typeof match === 'string' ? (text: string) => text.includes(match) : match;
  const found = blocks.filter((block) => block.lang === lang && test(block.text));
  if (found.length !== 1) {
    throw new Error(`expected one ${lang} block matching ${String(match)} in the README, found ${found.length}`);
  }
  return found[0]!;
}

/** The block right after `block` (the answer the README prints for it). */
export function blockAfter(blocks: readonly FencedBlock[], block: FencedBlock): FencedBlock {
  const next = blocks[blocks.indexOf(block) + 1];
  if (next === undefined) throw new Error(`no block after line ${block.line}`);
  return next;
}

/** Separates one curl call's output from the next in `runShell`'s standard output. */
const SEPARATOR = '\n\u001e\n';

export interface ShellTarget {
  /** `127.0.0.1:<port>`: what replaces `localhost:8080` in the script. */
  readonly hostPort: string;
  readonly key: string;
  /** Working directory (the files the scripts write, such as healthy.json, land there). */
  readonly cwd: string;
}

/**
 * Runs a README shell block as a user would, against `target`: `localhost:8080` becomes the test
 * server, `$KEY` its key (a line `export KEY=...` is left out), and every curl call's output comes
 * back as one element, in order. Rejects with bash's standard error when a command fails.
 * Asynchronous: the server under test may run in this very process.
 */
export async function runShell(script: string, target: ShellTarget): Promise<string[]> {
  const prelude = [
    'set -eo pipefail',
    // Each call's output, then a separator; a failing call fails the script.
    // printf writes SEPARATOR: a newline, the record separator (octal 036), a newline.
    `curl() { command curl --show-error --max-time 60 "$@" || return $?; printf '\\n\\036\\n'; }`,
  ].join('\n');
  const body = script
    .split('\n')
    .filter((line) => !/^\s*export KEY=/.test(line))
    .join('\n')
    .replaceAll('localhost:8080', target.hostPort);
  const child = spawn('bash', ['-c', `${prelude}\n${body}`], { cwd: target.cwd, env: { ...process.env, KEY: target.key } });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const status = await new Promise<number | null>((resolve, reject) => {
    child.on('error', reject);
    child.on('close', resolve);
  });
  if (status !== 0) throw new Error(`README script failed (exit ${status}): ${stderr}\n${script}`);
  const parts = stdout.split(SEPARATOR);
  parts.pop(); // after the last separator
  return parts;
}

/** Whether `command --version` runs (python3 and curl, which the README's examples use). */
export function commandAvailable(command: string): boolean {
  const run = spawnSync(command, ['--version'], { encoding: 'utf8' });
  return run.status === 0;
}

interface DocumentedNumber {
  readonly $number: string;
}

function isDocumentedNumber(value: unknown): value is DocumentedNumber {
  return typeof value === 'object' && value !== null && Object.keys(value).length === 1 && '$number' in value;
}

const STRING_OR_NUMBER = /"(?:[^"\\]|\\.)*"|-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?/g;

/**
 * Parses a JSON answer as the README prints it, keeping each number's text, so that a number the
 * README rounded ("numbers rounded here") is compared to the digits it shows and a full double
 * exactly.
 */
export function parseDocumentedJson(text: string): unknown {
  return JSON.parse(text.replace(STRING_OR_NUMBER, (token) => (token.startsWith('"') ? token : `{"$number":"${token}"}`)));
}

/**
 * Keys whose numbers come from the learned model (energies, z-scores, the baseline's statistics,
 * the fine-tune's loss). onnxruntime's float arithmetic differs from one CPU to another, and a
 * fine-tuned point's energy moves by up to about 2 % (measured between two x86 machines), so these
 * are compared within MODEL_TOLERANCE; the engine's numbers are plain JavaScript, the same on every
 * machine, and compared exactly.
 */
export const MODEL_OUTPUTS: ReadonlySet<string> = new Set([
  'energy',
  'energies',
  'z_score',
  'z_scores',
  'energy_mean',
  'energy_std',
  'energy_p99',
  'final_loss',
]);

/** Relative tolerance for MODEL_OUTPUTS, on top of the README's rounding: 5 %. */
export const MODEL_TOLERANCE = 0.05;

/**
 * What a z-score may differ by besides MODEL_TOLERANCE, in standard deviations: a z-score is an
 * energy minus the baseline's mean, so near the mean its relative error is far larger than the
 * energy's.
 */
export const Z_SCORE_SLACK = 0.1;

/** The key a path ends in, without array indices: `$.results[1].energy` -> `energy`, `$.energies[3]` -> `energies`. */
function lastKey(path: string): string {
  return path.slice(path.lastIndexOf('.') + 1).replace(/(\[\d+\])+$/, '');
}

/**
 * Where `actual` (a parsed answer) differs from `documented` (`parseDocumentedJson`): the same keys
 * and array lengths; a number equal to the README's digits once rounded to them (a number with 10
 * or more decimals, or an exponent, must be that double exactly), a model output (MODEL_OUTPUTS)
 * within MODEL_TOLERANCE of them (a z-score within Z_SCORE_SLACK more); a documented string ending in "..." only as a prefix (`key_...`);
 * anything else exactly. A key in `volatile` (a creation time, a duration: different on every run)
 * only needs a value of the same type. `modelOutputs` names the keys compared as model outputs
 * (a block whose margins and severities come from a baselined verdict adds those). Empty when they agree.
 */
export function mismatches(
  actual: unknown,
  documented: unknown,
  volatile: ReadonlySet<string> = new Set(),
  path = '$',
  modelOutputs: ReadonlySet<string> = MODEL_OUTPUTS,
): string[] {
  if (volatile.has(lastKey(path))) {
    const kind = (value: unknown): string => (isDocumentedNumber(value) ? 'number' : value === null ? 'null' : typeof value);
    return kind(actual) === kind(documented) ? [] : [`${path}: ${JSON.stringify(actual)} where the README shows a ${kind(documented)}`];
  }
  if (isDocumentedNumber(documented)) {
    const token = documented.$number;
    if (typeof actual !== 'number') return [`${path}: ${JSON.stringify(actual)} where the README shows the number ${token}`];
    const key = lastKey(path);
    const printed = Number(token);
    const slack = key === 'z_score' || key === 'z_scores' ? Z_SCORE_SLACK : 0;
    const agrees = modelOutputs.has(key)
      ? printedAs(token, actual) || Math.abs(actual - printed) <= MODEL_TOLERANCE * Math.abs(printed) + slack
      : printedAs(token, actual);
    return agrees ? [] : [`${path}: ${actual} where the README shows ${token}`];
  }
  if (typeof documented === 'string' && documented.endsWith('...')) {
    return typeof actual === 'string' && actual.startsWith(documented.slice(0, -3))
      ? []
      : [`${path}: ${JSON.stringify(actual)} does not start with ${JSON.stringify(documented.slice(0, -3))}`];
  }
  if (Array.isArray(documented)) {
    if (!Array.isArray(actual)) return [`${path}: ${JSON.stringify(actual)} where the README shows an array`];
    if (actual.length !== documented.length) return [`${path}: ${actual.length} elements where the README shows ${documented.length}`];
    return documented.flatMap((item, index) => mismatches(actual[index], item, volatile, `${path}[${index}]`, modelOutputs));
  }
  if (typeof documented === 'object' && documented !== null) {
    if (typeof actual !== 'object' || actual === null || Array.isArray(actual)) {
      return [`${path}: ${JSON.stringify(actual)} where the README shows an object`];
    }
    const want = Object.keys(documented).sort();
    const got = Object.keys(actual).sort();
    if (want.join() !== got.join()) return [`${path}: keys ${got.join(',')} where the README shows ${want.join(',')}`];
    return want.flatMap((key) =>
      mismatches((actual as Record<string, unknown>)[key], (documented as Record<string, unknown>)[key], volatile, `${path}.${key}`, modelOutputs),
    );
  }
  return actual === documented ? [] : [`${path}: ${JSON.stringify(actual)} where the README shows ${JSON.stringify(documented)}`];
}

/** The comment lines of a shell block from the first `# ->` on, joined: what the README says the block answers. */
export function answerComment(script: string): string {
  const lines = script.split('\n');
  const start = lines.findIndex((line) => line.trimStart().startsWith('# ->'));
  if (start < 0) throw new Error('no "# ->" comment in the block');
  const out: string[] = [];
  for (const line of lines.slice(start)) {
    if (!line.trimStart().startsWith('#')) break;
    out.push(line.trimStart().replace(/^#\s?(->)?\s*/, ''));
  }
  return out.join(' ');
}

/** `"name":12.34...` claims of a comment: the number's leading digits, truncated. */
export function truncatedNumbers(comment: string): Map<string, string> {
  return new Map([...comment.matchAll(/"(\w+)":(-?\d+\.\d+)\.\.\./g)].map((m) => [m[1]!, m[2]!]));
}

/** `"name":true|false` claims of a comment. */
export function booleanClaims(comment: string): Map<string, boolean> {
  return new Map([...comment.matchAll(/"(\w+)":(true|false)/g)].map((m) => [m[1]!, m[2] === 'true']));
}

/** `"name":"text"` claims of a comment. */
export function stringClaims(comment: string): Map<string, string> {
  return new Map([...comment.matchAll(/"(\w+)":"([^"]*)"/g)].map((m) => [m[1]!, m[2]!]));
}

/** Indices of a list such as `200 and 400-402` or `3, 7-9`. */
export function indexList(text: string): number[] {
  return text
    .split(/,|\band\b/)
    .map((part) => part.trim())
    .filter((part) => part !== '')
    .flatMap((part) => {
      const range = /^(\d+)(?:-(\d+))?$/.exec(part);
      if (!range) throw new Error(`not an index or a range: ${JSON.stringify(part)}`);
      const from = Number(range[1]);
      const to = range[2] === undefined ? from : Number(range[2]);
      return Array.from({ length: to - from + 1 }, (_, k) => from + k);
    });
}
