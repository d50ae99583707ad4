// The README's examples, run as a user runs them: each shell block (found by the request it makes)
// goes to bash, with curl and python3, against the platform `npm start` opens (embedded store, the
// in-process bus and worker) on a loopback port, with only `localhost:8080` and `$KEY` replaced;
// the answer is compared with the one the README prints beside it. A README whose examples no
// longer answer what it says fails here. Blocks run in the README's order where state carries
// over (usage counts the calls before it; the results appear after the telemetry).
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { marginMultiplier } from '@adp/detection';
import { loadWorkerConfig } from '@adp/stream-worker';
import { loadConfig } from '../../apps/api/src/config.js';
import { openPlatform, type Platform } from '../../apps/api/src/platform.js';
import {
  answerComment,
  blockAfter,
  booleanClaims,
  commandAvailable,
  fencedBlocks,
  indexList,
  mismatches,
  MODEL_OUTPUTS,
  parseDocumentedJson,
  runShell,
  stringClaims,
  theBlock,
  truncatedNumbers,
  type FencedBlock,
  type ShellTarget,
} from './readme.js';
import { randomTestKey } from './server.js';

const read = (path: string): string => readFileSync(fileURLToPath(new URL(`../../${path}`, import.meta.url)), 'utf8');
/**
 * The README's blocks, then those of the reference pages it sends readers to (the vendor API's,
 * streaming's and detection jobs'): one list, so each example is found once wherever it lives, and
 * an answer is the block after its request in the same page.
 */
const blocks = ['README.md', 'docs/api.md', 'docs/streaming.md', 'docs/jobs.md'].flatMap((path) => fencedBlocks(read(path)));
/** The native API's reference, whose examples continue from those of README and docs. */
const nativeBlocks = fencedBlocks(read('apps/api/src/native/README.md'));
/** Keys whose values differ on every run: only their type is compared. */
const VOLATILE = new Set(['created_at', 'updated_at', 'baseline_created_at', 'duration_seconds']);

const inCi = process.env['CI'] === 'true';
const missing = ['bash', 'curl', 'python3'].filter((command) => !commandAvailable(command));
if (missing.length > 0 && !inCi) console.warn(`Skipping the README's examples: ${missing.join(', ')} not found`);

/** The answer a block prints, checked against the README's next block (a JSON answer). */
function expectDocumentedAnswer(output: string, documented: FencedBlock, modelOutputs: ReadonlySet<string> = MODEL_OUTPUTS): void {
  expect(documented.lang, `the block at README line ${documented.line}`).toBe('json');
  expect(mismatches(JSON.parse(output), parseDocumentedJson(documented.text), VOLATILE, '$', modelOutputs)).toEqual([]);
}

/**
 * A baselined machine's stored rows: where the learned verdict flags a point, its margins and
 * severity come from the learned z-score (docs/streaming.md), so they move with onnxruntime's
 * arithmetic as the z-score does.
 */
const BASELINED_ROW_OUTPUTS: ReadonlySet<string> = new Set([...MODEL_OUTPUTS, 'upper_margin', 'lower_margin', 'severity']);

const onlyLastDetect = (text: string): boolean => text.includes('last/detect') && text.includes('{"value":30}') && !text.includes('healthz');

describe('the comparison of answers with the README', () => {
  it('reads numbers to the digits the README shows, full doubles exactly, and "..." as a prefix', () => {
    const documented = parseDocumentedJson('{"a":105.96,"b":[0,0.52],"c":10.821229099596552,"d":"key_...","e":true}');
    const exact = { a: 105.955, b: [0, 0.5249], c: 10.821229099596552, d: 'key_7f3a', e: true };
    expect(mismatches(exact, documented)).toEqual([]);
    expect(mismatches({ ...exact, a: 105.966 }, documented)).toEqual(['$.a: 105.966 where the README shows 105.96']);
    expect(mismatches({ ...exact, b: [0, 0.53] }, documented)).toEqual(['$.b[1]: 0.53 where the README shows 0.52']);
    expect(mismatches({ ...exact, c: 10.821229099596553 }, documented)).toHaveLength(1);
    expect(mismatches({ ...exact, d: 'org_7f3a' }, documented)).toEqual(['$.d: "org_7f3a" does not start with "key_"']);
    expect(mismatches({ ...exact, e: false }, documented)).toEqual(['$.e: false where the README shows true']);
    const { e: _dropped, ...withoutE } = exact;
    expect(mismatches(withoutE, documented)).toEqual(['$: keys a,b,c,d where the README shows a,b,c,d,e']);
    expect(mismatches({ ...exact, b: [0] }, documented)).toEqual(['$.b: 1 elements where the README shows 2']);
  });

  it('reads the learned model\'s numbers within 5 % of the README\'s, and the engine\'s exactly', () => {
    const documented = parseDocumentedJson(
      '{"stats":{"energy_mean":0.0000677,"final_loss":0.00021},"results":[{"energy":0.021631579537503606,"z_score":254.23131399147505,"expected_value":54.52377450980389},{"z_score":1.5898073658648093}],"energies":[0.5,0.25]}',
    );
    // What another x86 CPU's onnxruntime answered (the small z-score is that machine's too).
    const otherCpu = {
      stats: { energy_mean: 0.0000681, final_loss: 0.000214 },
      results: [{ energy: 0.0218, z_score: 251.9, expected_value: 54.52377450980389 }, { z_score: 1.6334832577131686 }],
      energies: [0.51, 0.24],
    };
    expect(mismatches(otherCpu, documented)).toEqual([]);
    // Beyond the tolerance a model output differs; an engine output differs in its last digit.
    expect(mismatches({ ...otherCpu, stats: { ...otherCpu.stats, energy_mean: 0.0000720 } }, documented)).toEqual([
      '$.stats.energy_mean: 0.000072 where the README shows 0.0000677',
    ]);
    expect(mismatches({ ...otherCpu, results: [{ ...otherCpu.results[0]!, z_score: 270 }, otherCpu.results[1]!] }, documented)).toHaveLength(1);
    expect(mismatches({ ...otherCpu, results: [otherCpu.results[0]!, { z_score: 1.8 }] }, documented)).toHaveLength(1);
    expect(mismatches({ ...otherCpu, energies: [0.5, 0.3] }, documented)).toEqual(['$.energies[1]: 0.3 where the README shows 0.25']);
    const engineOff = { ...otherCpu.results[0]!, expected_value: 54.52377450980389 + 1e-9 };
    expect(mismatches({ ...otherCpu, results: [engineOff, otherCpu.results[1]!] }, documented)).toHaveLength(1);
  });

  it('keeps timestamps and other strings with digits as strings', () => {
    expect(parseDocumentedJson('{"t":"2024-01-01T00:00:00Z","n":-1.5e-3}')).toEqual({ t: '2024-01-01T00:00:00Z', n: { $number: '-1.5e-3' } });
  });

  it('reads the claims of a "# ->" comment and index lists', () => {
    const comment = answerComment('curl x\n# -> "expectedValue":22.3547...,"isAnomaly":true,\n#    "engine":"fine-tuned", isAnomaly true at 200 and 400-402\nnext');
    expect(truncatedNumbers(comment)).toEqual(new Map([['expectedValue', '22.3547']]));
    expect(booleanClaims(comment)).toEqual(new Map([['isAnomaly', true]]));
    expect(stringClaims(comment)).toEqual(new Map([['engine', 'fine-tuned']]));
    expect(indexList('200 and 400-402')).toEqual([200, 400, 401, 402]);
    expect(() => indexList('200 or 400')).toThrow('not an index or a range');
  });

  it('finds exactly one block and numbers its lines', () => {
    const found = fencedBlocks('text\n```sh\ncurl a\n```\n\n```json\n{}\n```\n');
    expect(found).toEqual([
      { lang: 'sh', text: 'curl a', line: 3 },
      { lang: 'json', text: '{}', line: 7 },
    ]);
    expect(theBlock(found, 'sh', 'curl').line).toBe(3);
    expect(() => theBlock(found, 'sh', 'wget')).toThrow('found 0');
  });
});

describe.skipIf(missing.length > 0 && !inCi)("the README's examples against the platform npm start opens", () => {
  let platform: Platform | undefined;
  let dataDir: string;
  let workDir: string;
  let target: ShellTarget;

  beforeAll(async () => {
    if (missing.length > 0) throw new Error(`the README's examples need ${missing.join(', ')} on the PATH`);
    dataDir = await mkdtemp(join(tmpdir(), 'adp-readme-data-'));
    workDir = await mkdtemp(join(tmpdir(), 'adp-readme-work-'));
    const key = randomTestKey();
    // Only these variables: the embedded store, bus and worker, whatever the test process's environment holds.
    const env = { DATA_DIR: dataDir, HOST: '127.0.0.1', PORT: '0', BOOTSTRAP_API_KEY: key, LOG_LEVEL: 'warn' };
    const config = loadConfig(env);
    platform = await openPlatform(config, { logger: { level: config.logLevel }, worker: loadWorkerConfig(env) });
    await platform.app.listen({ host: config.host, port: config.port });
    const { port } = platform.app.server.address() as AddressInfo;
    target = { hostPort: `127.0.0.1:${port}`, key, cwd: workDir };
  });
  afterAll(async () => {
    await platform?.close();
    await rm(dataDir, { recursive: true, force: true });
    await rm(workDir, { recursive: true, force: true });
  });

  it('entire-series detection answers the README’s numbers (rounded as it shows them)', async () => {
    const block = theBlock(blocks, 'sh', (text) => text.includes('entire/detect') && text.includes('"value":180'));
    const [output] = await runShell(block.text, target);
    expectDocumentedAnswer(output!, blockAfter(blocks, block));
  });

  it('last-point detection answers the README’s doubles exactly', async () => {
    const block = theBlock(blocks, 'sh', onlyLastDetect);
    const [output] = await runShell(block.text, target);
    expectDocumentedAnswer(output!, blockAfter(blocks, block));
  });

  it('changepoint detection marks the point the README names, and only it', async () => {
    const block = theBlock(blocks, 'sh', 'changepoint/detect');
    const [output] = await runShell(block.text, target);
    const answer = JSON.parse(output!) as { period: number; isChangePoint: boolean[]; confidenceScores: number[] };
    const named = /at point (\d+): `isChangePoint` is true there and only there/.exec(read('README.md'));
    expect(named, 'the sentence after the changepoint example').not.toBeNull();
    expect(answer.isChangePoint.flatMap((flag, index) => (flag ? [index] : []))).toEqual([Number(named![1])]);
    expect(answer.period).toBe(0);
    expect(answer.confidenceScores).toHaveLength(answer.isChangePoint.length);
  });

  it('usage after those three calls is the README’s', async () => {
    const block = theBlock(blocks, 'sh', (text) => text.trim() === 'curl -s localhost:8080/v1/usage -H "X-Service-Key: $KEY"');
    const [output] = await runShell(block.text, target);
    expectDocumentedAnswer(output!, blockAfter(blocks, block));
  });

  it('the first SDK example runs as written, as a .mjs file under plain node', async () => {
    const block = theBlock(blocks, 'js', '@azure-rest/ai-anomaly-detector');
    // Inside the repository, so that node finds the SDK in its node_modules as a user's project would.
    const cache = fileURLToPath(new URL('../../.cache/', import.meta.url));
    await mkdir(cache, { recursive: true });
    const folder = await mkdtemp(join(cache, 'readme-sdk-'));
    try {
      const file = join(folder, 'detect.mjs');
      await writeFile(file, block.text.replaceAll('localhost:8080', target.hostPort));
      const { stdout } = await promisify(execFile)(process.execPath, [file], { env: { PATH: process.env['PATH'] ?? '', KEY: target.key } });
      // What the comment on its last line says it prints.
      const printed = /console\.log\(res\.body\.isAnomaly\); \/\/ (true|false)$/m.exec(block.text);
      expect(printed, 'the example ends by printing isAnomaly with its answer as a comment').not.toBeNull();
      expect(stdout.trim()).toBe(printed![1]);
    } finally {
      await rm(folder, { recursive: true, force: true });
    }
  });

  it('the quick start answers what it prints, the same as the last-point example it repeats', async () => {
    const block = theBlock(blocks, 'sh', (text) => text.includes('healthz') && text.includes('last/detect'));
    const [health, last] = await runShell(block.text, target);
    // One answer a line, in the order of the calls.
    const printed = blockAfter(blocks, block);
    const [printedHealth, printedLast, ...more] = printed.text.split('\n');
    expect(more).toEqual([]);
    expectDocumentedAnswer(health!, { ...printed, text: printedHealth! });
    expectDocumentedAnswer(last!, { ...printed, text: printedLast! });
    expect(JSON.parse(health!)).toEqual({ status: 'ok' });
    expectDocumentedAnswer(last!, blockAfter(blocks, theBlock(blocks, 'sh', onlyLastDetect)));
  });

  it('the hung sensor is reported at its twelfth equal reading, and not with 11 or with rounded readings', async () => {
    const block = theBlock(blocks, 'sh', 'hung.json');
    const comment = answerComment(block.text);
    const [output] = await runShell(block.text, target);
    const answer = JSON.parse(output!) as Record<string, unknown>;
    const numbers = truncatedNumbers(comment);
    expect([...numbers.keys()]).toEqual(['expectedValue', 'upperMargin', 'severity']);
    for (const [name, digits] of numbers) {
      const decimals = digits.split('.')[1]!.length;
      expect(Math.abs((answer[name] as number) - Number(digits)), name).toBeLessThan(10 ** -decimals);
    }
    expect(booleanClaims(comment)).toEqual(new Map([['isAnomaly', true], ['isPositiveAnomaly', true]]));
    for (const [name, value] of booleanClaims(comment)) expect(answer[name], name).toBe(value);

    // The two variants the comment names: 10 repeats, and readings rounded to one decimal.
    expect(comment).toContain('With 10 repeats (11 equal readings), or with readings rounded to one decimal');
    expect(block.text).toContain('[values[-1]] * 11');
    expect(block.text).toContain('random.random() * 3, 3)');
    const [fewer] = await runShell(block.text.replace('[values[-1]] * 11', '[values[-1]] * 10'), target);
    const [rounded] = await runShell(block.text.replace('random.random() * 3, 3)', 'random.random() * 3, 1)'), target);
    expect((JSON.parse(fewer!) as { isAnomaly: boolean }).isAnomaly).toBe(false);
    expect((JSON.parse(rounded!) as { isAnomaly: boolean }).isAnomaly).toBe(false);
  });

  it('pastRange silences the drift the README sends, and not with a range above it', async () => {
    const block = theBlock(blocks, 'sh', 'drift-seen.json');
    const first = answerComment(block.text);
    const second = answerComment(block.text.slice(block.text.indexOf('# ->') + 4));
    const [alone, seen] = await runShell(block.text, target);
    const answer = JSON.parse(alone!) as Record<string, unknown>;
    expect(booleanClaims(first)).toEqual(new Map([['isAnomaly', true], ['isNegativeAnomaly', true]]));
    for (const [name, value] of booleanClaims(first)) expect(answer[name], name).toBe(value);
    const numbers = truncatedNumbers(first);
    expect([...numbers.keys()]).toEqual(['severity']);
    const digits = numbers.get('severity')!;
    expect(Math.abs((answer.severity as number) - Number(digits))).toBeLessThan(10 ** -digits.split('.')[1]!.length);
    // The same request with the range: not reported, the band unchanged.
    expect(booleanClaims(second)).toEqual(new Map([['isAnomaly', false]]));
    const quiet = JSON.parse(seen!) as Record<string, unknown>;
    expect(quiet).toEqual({ ...answer, isAnomaly: false, isNegativeAnomaly: false, severity: 0 });
    // "With "min": 97, true."
    expect(second).toContain('With "min": 97, true.');
    const [above] = await runShell(block.text.replace("'min': 90", "'min': 97"), target);
    expect(JSON.parse(above!)).toEqual(answer);
  });

  it('the error example answers the README’s status, headers and body', async () => {
    const block = theBlock(blocks, 'sh', '"series":[{"value":1},{"value":2}]');
    const [output] = await runShell(block.text, target);
    const documented = blockAfter(blocks, block).text;
    const split = (text: string): { head: string[]; body: string } => {
      const [head, body] = text.replaceAll('\r\n', '\n').split('\n\n');
      return { head: head!.split('\n').map((line) => line.toLowerCase()), body: body!.trim() };
    };
    const got = split(output!);
    const want = split(documented);
    expect(got.head[0]).toBe(want.head[0]);
    for (const header of want.head.slice(1)) expect(got.head).toContain(header);
    expect(JSON.parse(got.body)).toEqual(JSON.parse(want.body));
  });

  it('the native example flags and classifies the points its comment names', async () => {
    const block = theBlock(blocks, 'sh', '/v1/baseline');
    const comment = answerComment(block.text);
    const outputs = await runShell(block.text, target);
    const detections = outputs.map((text) => JSON.parse(text) as Record<string, unknown>).filter((answer) => 'regimes' in answer);
    expect(detections).toHaveLength(1);
    const detection = detections[0] as { isAnomaly: boolean[]; regimes: string[] } & Record<string, unknown>;
    for (const [name, value] of stringClaims(comment)) expect(detection[name], name).toBe(value);
    expect([...stringClaims(comment).keys()]).toEqual(['engine', 'model_version']);

    const flagged = /isAnomaly true at ([\d\s,-]+(?:and [\d\s,-]+)*)/.exec(comment);
    expect(flagged, comment).not.toBeNull();
    // The named points are the engine's events; any other flag is the machine's baseline's (its
    // learned score beyond the band at the request's sensitivity), whose points near the band
    // differ between CPUs, so only their rule is checked: the learned score (z-score plus the
    // shape score within) is at most the z-score plus the centred shape score the answer carries.
    const claimed = indexList(flagged![1]!);
    const flags = detection.isAnomaly.flatMap((flag, index) => (flag ? [index] : []));
    for (const index of claimed) expect(flags, `point ${index}`).toContain(index);
    const zScores = detection['z_scores'] as number[];
    const shapeScores = detection['shape_scores'] as number[];
    expect(shapeScores).toHaveLength(zScores.length);
    for (const index of flags.filter((i) => !claimed.includes(i))) {
      expect((zScores[index] ?? 0) + Math.max(0, shapeScores[index] ?? 0), `point ${index}`).toBeGreaterThan(marginMultiplier(95));
    }

    const runs = [...comment.matchAll(/(HEALTHY|ACTIVE|TRANSITION|SHOCK|UNKNOWN) (?:at )?(\d+)(?:-(\d+))?/g)];
    expect(runs.length).toBeGreaterThanOrEqual(5);
    let end = 0;
    for (const [, regime, from, to] of runs) {
      for (let index = Number(from); index <= Number(to ?? from); index++) expect(detection.regimes[index], `point ${index}`).toBe(regime);
      end = Number(to ?? from) + 1;
    }
    expect(comment).toContain('alternates between ACTIVE and HEALTHY');
    // After the named runs the regimes follow z-scores near the thresholds, which differ a little
    // between CPUs: only the mix is claimed.
    const rest = new Set(detection.regimes.slice(end));
    expect(rest.has('ACTIVE') && rest.has('HEALTHY'), [...rest].join()).toBe(true);
    expect([...rest].filter((regime) => !['ACTIVE', 'HEALTHY', 'SHOCK'].includes(regime))).toEqual([]);
    // The files the example wrote are where a user would find them.
    expect(JSON.parse(await readFile(join(workDir, 'recent.json'), 'utf8')).series).toHaveLength(detection.regimes.length);
  });

  it('telemetry is accepted, and its stored results and machine summary are the README’s', async () => {
    const send = theBlock(blocks, 'sh', 'telemetry.json');
    const [accepted] = await runShell(send.text, target);
    expectDocumentedAnswer(accepted!, blockAfter(blocks, send));

    // Results appear a moment later (the README says so): ask again until they are all stored.
    const results = theBlock(blocks, 'sh', '/results?from=');
    const machines = theBlock(blocks, 'sh', (text) => text.trim() === 'curl -s "localhost:8080/v1/machines?include=telemetry" -H "X-Service-Key: $KEY"');
    const stored = async (): Promise<boolean> => {
      const [list] = await runShell(machines.text, target);
      const machine = (JSON.parse(list!) as { machines: { telemetry: { points: number } | null }[] }).machines[0];
      return machine?.telemetry?.points === 300;
    };
    const deadline = Date.now() + 60_000;
    while (!(await stored()) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 250));
    const [page] = await runShell(results.text, target);
    expectDocumentedAnswer(page!, blockAfter(blocks, results));
    const [list] = await runShell(machines.text, target);
    expectDocumentedAnswer(list!, blockAfter(blocks, machines));
  });

  it('the detection job of 100,000 points is judged and its first page holds the episode the README prints', async () => {
    const block = theBlock(blocks, 'sh', (text) => text.includes('job.json') && text.includes("['episodes']"));
    // The block prints through python3, not curl: close its output as the curl wrapper does.
    const [output] = await runShell(`${block.text}\nprintf '\\n\\036\\n'`, target);
    expectDocumentedAnswer(output!, blockAfter(blocks, block));
  });

  it("the native reference's baseline, its telemetry, machine list, results and delete answer what it prints", async () => {
    const baseline = theBlock(nativeBlocks, 'bash', 'healthy-18.json');
    const [created] = await runShell(baseline.text, target);
    expectDocumentedAnswer(created!, blockAfter(nativeBlocks, baseline));
    // The tolerance for the model's statistics still catches a README 10 % off.
    const printedStats = blockAfter(nativeBlocks, baseline).text;
    const mutated = printedStats.replace(/"energy_mean":([\d.]+)/, (_, digits: string) => `"energy_mean":${(Number(digits) * 1.1).toPrecision(3)}`);
    expect(mutated).not.toBe(printedStats);
    expect(mismatches(JSON.parse(created!), parseDocumentedJson(mutated), VOLATILE)).toEqual([expect.stringContaining('$.stats.energy_mean')]);

    const send = theBlock(nativeBlocks, 'bash', 'telemetry-18.json');
    const [accepted] = await runShell(send.text, target);
    expect(JSON.parse(accepted!)).toEqual({ accepted: 300, machine_id: 'pump-18' });

    const machines = theBlock(nativeBlocks, 'bash', (text) => text.trim() === 'curl -s "http://localhost:8080/v1/machines?include=telemetry" -H "X-Service-Key: $KEY"');
    const both = async (): Promise<boolean> => {
      const [list] = await runShell(machines.text, target);
      const known = (JSON.parse(list!) as { machines: { telemetry: { points: number } | null }[] }).machines;
      return known.length === 2 && known.every((machine) => machine.telemetry?.points === 300);
    };
    const deadline = Date.now() + 60_000;
    while (!(await both()) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 250));
    const [list] = await runShell(machines.text, target);
    expectDocumentedAnswer(list!, blockAfter(nativeBlocks, machines));

    const results = theBlock(nativeBlocks, 'bash', (text) => text.includes('/results?from=') && !text.includes('cursor='));
    const [page] = await runShell(results.text, target);
    expectDocumentedAnswer(page!, blockAfter(nativeBlocks, results), BASELINED_ROW_OUTPUTS);

    const remove = theBlock(nativeBlocks, 'bash', '-X DELETE');
    const [deleted] = await runShell(remove.text, target);
    // Its answer is printed as a comment line under the call.
    const printed = remove.text.split('\n').find((line) => line.startsWith('# {'));
    expect(printed, 'the DELETE block\'s answer comment').toBeDefined();
    expect(JSON.parse(deleted!)).toEqual(JSON.parse(printed!.slice(2)));
  });
});
