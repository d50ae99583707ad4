// The peers' TypeScript side (eval/src/peers.ts, eval/src/peers-ucr.ts): parsing what the Python
// scripts write, scoring it with the harness's scorers, and the runner's wiring. No Python here:
// the scripts are replaced by a function that writes what they would.
import { mkdir, mkdtemp, readFile, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { scoreCorpus, windowDetectionValue, type NabProfile } from '../src/nab-scorer.js';
import type { NabCorpus } from '../src/nab-data.js';
import {
  committedPeerNab,
  NOT_SET_UP,
  parseNabPeerOutput,
  parsePeersArgs,
  parseUcrPeerOutput,
  peerJobs,
  peersTable,
  runPeers,
  scoreNabPeer,
  scoreUcrPeer,
  type ScriptRunner,
} from '../src/peers.js';
import { parseUcrFileName, ucrHit, ucrTopK } from '../src/peers-ucr.js';

const UCR_FILE = '004_UCR_Anomaly_DISTORTEDBIDMC1_2500_5400_5600.txt';

describe('UCR top-k (peers-ucr.ts)', () => {
  it('reads the training end and the anomaly from the file name', () => {
    expect(parseUcrFileName(UCR_FILE)).toEqual({ file: UCR_FILE, trainEnd: 2500, begin: 5400, end: 5600 });
    expect(() => parseUcrFileName('004_UCR_Anomaly_x_2500_5400.txt')).toThrow(SyntaxError);
    expect(() => parseUcrFileName('004_UCR_Anomaly_x_6000_5400_5600.txt')).toThrow(RangeError);
  });

  it('counts a hit strictly inside the tolerance: max(L, 100) either side', () => {
    // L = 201 > 100: hits are 5400 - 201 < P < 5600 + 201, i.e. 5200..5800.
    const label = parseUcrFileName(UCR_FILE);
    expect([5199, 5200, 5500, 5800, 5801].map((p) => ucrHit(label, p))).toEqual([false, true, true, true, false]);
    // L = 25 < 100: hits are 5703 - 100 < P < 5727 + 100.
    const short = parseUcrFileName('006_UCR_Anomaly_x_4000_5703_5727.txt');
    expect([5603, 5604, 5826, 5827].map((p) => ucrHit(short, p))).toEqual([false, true, true, false]);
  });

  it('top-k: a series counts when any of its first k locations hits', () => {
    const label = parseUcrFileName(UCR_FILE);
    const series = [
      { label, locations: [5500, 3000, 4000] },
      { label, locations: [3000, 5500, 4000] },
      { label, locations: [3000, 4000, 4500, 5500] },
      { label, locations: [] },
    ];
    expect(ucrTopK(series, 1)).toEqual({ k: 1, series: 4, hits: 1, accuracy: 0.25 });
    expect(ucrTopK(series, 3)).toEqual({ k: 3, series: 4, hits: 2, accuracy: 0.5 });
    expect(ucrTopK([], 1).accuracy).toBe(0);
  });
});

describe('parsing the scripts output', () => {
  const nab = (flagged: unknown, extra: object = {}) =>
    JSON.stringify({ peer: 'p', version: '1', elapsedMs: 5, files: [{ file: 'a/x.csv', rows: 10, flagged, errors: [] }], ...extra });

  it('takes flagged rows as ascending row indices of the file', () => {
    const out = parseNabPeerOutput(nab([1, 4, 9]));
    expect(out.files[0]).toEqual({ file: 'a/x.csv', rows: 10, flagged: [1, 4, 9], errors: [] });
    expect(out.complete).toBe(true);
    expect(parseNabPeerOutput(nab([], { complete: false })).complete).toBe(false);
  });

  it('refuses rows outside the file, unsorted or repeated rows and malformed entries', () => {
    expect(() => parseNabPeerOutput(nab([10]))).toThrow(RangeError);
    expect(() => parseNabPeerOutput(nab([-1]))).toThrow(RangeError);
    expect(() => parseNabPeerOutput(nab([4, 1]))).toThrow(RangeError);
    expect(() => parseNabPeerOutput(nab([4, 4]))).toThrow(RangeError);
    expect(() => parseNabPeerOutput(nab([1.5]))).toThrow(SyntaxError);
    expect(() => parseNabPeerOutput(JSON.stringify({ peer: 'p', version: '1', elapsedMs: 1 }))).toThrow(SyntaxError);
    expect(() => parseNabPeerOutput(JSON.stringify({ version: '1', elapsedMs: 1, files: [] }))).toThrow(SyntaxError);
  });

  it('takes UCR locations only from the test part', () => {
    const ucr = (locations: number[]) =>
      JSON.stringify({ peer: 'p', version: '1', elapsedMs: 1, series: [{ file: UCR_FILE, n: 9000, trainEnd: 2500, locations }] });
    expect(parseUcrPeerOutput(ucr([2501, 9000])).series[0]?.locations).toEqual([2501, 9000]);
    expect(() => parseUcrPeerOutput(ucr([2500]))).toThrow(RangeError);
    expect(() => parseUcrPeerOutput(ucr([9001]))).toThrow(RangeError);
  });
});

const PROFILES: NabProfile[] = [
  { name: 'standard', tpWeight: 1, fnWeight: 1, fpWeight: 0.11 },
  { name: 'reward_low_FP_rate', tpWeight: 1, fnWeight: 1, fpWeight: 0.22 },
  { name: 'reward_low_FN_rate', tpWeight: 1, fnWeight: 2, fpWeight: 0.11 },
];

/** Two 100-row files (probation 15 rows), one window each. */
function corpus(): NabCorpus {
  const file = (name: string) => ({
    file: name,
    timestampsMs: Array.from({ length: 100 }, (_, i) => i),
    values: new Array<number>(100).fill(0),
    windows: [{ startRow: 40, endRow: 49 }],
  });
  return { series: [file('a/one.csv'), file('a/two.csv')], profiles: PROFILES };
}

describe('scoreNabPeer', () => {
  it('scores the flags with nab-scorer.ts: a left-edge hit, a missed window, one false positive', () => {
    const output = parseNabPeerOutput(
      JSON.stringify({
        peer: 'p',
        version: '1',
        elapsedMs: 1,
        files: [
          { file: 'a/one.csv', rows: 100, flagged: [5, 40, 41], errors: [] },
          { file: 'a/two.csv', rows: 100, flagged: [20], errors: ['rows 0-99: failed'] },
        ],
      }),
    );
    const s = scoreNabPeer(corpus(), output);
    // standard: +1 (left edge of one.csv's window), -1 (two.csv's window missed), row 20 of
    // two.csv is before any window: -0.11. Row 5 is in the probation. Null -2, perfect +2.
    expect(s.scores[0]).toBeCloseTo((100 * (1 - 1 - 0.11 + 2)) / 4, 10);
    expect(windowDetectionValue({ startRow: 40, endRow: 49 }, 40, PROFILES[0]!)).toBeCloseTo(1, 12);
    // low FN: +1 - 2 - 0.11 against null -4 and perfect +2.
    expect(s.scores[2]).toBeCloseTo((100 * (1 - 2 - 0.11 + 4)) / 6, 10);
    const files = corpus().series.map((f, i) => ({
      file: f.file,
      rowCount: 100,
      windows: f.windows,
      detections: Array.from({ length: 100 }, (_, r) => (i === 0 ? [5, 40, 41] : [20]).includes(r)),
    }));
    expect(s.scores[1]).toBeCloseTo(scoreCorpus(files, PROFILES[1]!).score, 12);
    expect(s).toMatchObject({ files: 2, windowsDetected: 1, windows: 2, falsePositiveRows: 1, failedRequests: 1 });
    expect(s.flaggedShare).toBeCloseTo(4 / 200, 12);
  });

  it('needs every file of the corpus with its row count, unless the run was partial', () => {
    const one = parseNabPeerOutput(
      JSON.stringify({ peer: 'p', version: '1', elapsedMs: 1, files: [{ file: 'a/one.csv', rows: 100, flagged: [40] }] }),
    );
    expect(() => scoreNabPeer(corpus(), one)).toThrow(RangeError);
    expect(scoreNabPeer(corpus(), one, true)).toMatchObject({ files: 1, windowsDetected: 1, windows: 1 });
    const short = parseNabPeerOutput(
      JSON.stringify({ peer: 'p', version: '1', elapsedMs: 1, files: [{ file: 'a/one.csv', rows: 99, flagged: [] }] }),
    );
    expect(() => scoreNabPeer(corpus(), short, true)).toThrow(RangeError);
  });
});

describe('scoreUcrPeer', () => {
  it('scores top-1 and top-3 against the labels in the file names', () => {
    const out = parseUcrPeerOutput(
      JSON.stringify({
        peer: 'p',
        version: '1',
        elapsedMs: 1,
        series: [
          { file: UCR_FILE, n: 9000, trainEnd: 2500, locations: [5500] },
          { file: '006_UCR_Anomaly_x_4000_5703_5727.txt', n: 8000, trainEnd: 4000, locations: [7000, 5700, 4500] },
        ],
      }),
    );
    expect(scoreUcrPeer(out)).toEqual({ series: 2, top1: 0.5, top3: 1, hits1: 1, hits3: 2, failedRequests: 0 });
  });

  it('refuses a series read with another training end than its name gives', () => {
    const out = parseUcrPeerOutput(
      JSON.stringify({ peer: 'p', version: '1', elapsedMs: 1, series: [{ file: UCR_FILE, n: 9000, trainEnd: 2400, locations: [5500] }] }),
    );
    expect(() => scoreUcrPeer(out)).toThrow(RangeError);
  });
});

describe("the peers' rows in npm run eval's table (committedPeerNab)", () => {
  it('reads the NAB scores of the committed summary, none when it is absent, and refuses a malformed one', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'peers-'));
    const file = path.join(dir, 'peers.json');
    expect(await committedPeerNab(file)).toEqual([]);
    const summary = {
      date: '2026-11-26',
      results: [
        { peer: 'vendor', package: 'time-series-anomaly-detector', version: '0.4.0', nab: { scores: [-1337.2, -2768.7, -859.3] }, ucr: { top1: 0.32 } },
        { peer: 'stumpy', package: 'stumpy', version: '1.14.1', ucr: { top1: 0.66 } },
      ],
    };
    await writeFile(file, JSON.stringify(summary));
    expect(await committedPeerNab(file)).toEqual([
      { name: 'time-series-anomaly-detector, entire series (peer)', nab: [-1337.2, -2768.7, -859.3], date: '2026-11-26' },
    ]);
    // The committed summary has the vendor package's NAB row.
    const committed = await committedPeerNab(path.join(path.dirname(new URL(import.meta.url).pathname), '..', 'peers.json'));
    expect(committed.map((p) => p.name)).toEqual(['time-series-anomaly-detector, entire series (peer)']);
    await writeFile(file, JSON.stringify({ date: '2026-11-26', results: 'none' }));
    await expect(committedPeerNab(file)).rejects.toThrow(/expected results/);
    await writeFile(file, '{');
    await expect(committedPeerNab(file)).rejects.toThrow(SyntaxError);
  });
});

describe('options and jobs', () => {
  it('runs stumpy on UCR only and the vendor package on both datasets', () => {
    expect(peerJobs(['vendor', 'stumpy'], ['nab', 'ucr']).map((j) => `${j.peer}:${j.dataset}:${j.script}`)).toEqual([
      'vendor:nab:vendor.py',
      'vendor:ucr:vendor.py',
      'stumpy:ucr:stumpy_ucr.py',
    ]);
  });

  it('writes eval/peers.json only from an unfiltered run or to an explicit --out', () => {
    expect(parsePeersArgs([], '/r')).toMatchObject({ out: '/r/eval/peers.json', reuse: false, limit: null, venv: '/r/eval/.peers-venv' });
    expect(parsePeersArgs(['--limit', '2'], '/r').out).toBeNull();
    expect(parsePeersArgs(['--only', 'ucr'], '/r')).toMatchObject({ out: null, datasets: ['ucr'] });
    expect(parsePeersArgs(['--peer', 'stumpy', '--out', '/tmp/x.json'], '/r')).toMatchObject({ out: '/tmp/x.json', peers: ['stumpy'] });
    expect(parsePeersArgs(['--reuse'], '/r').reuse).toBe(true);
    expect(() => parsePeersArgs(['--peer', 'htm'], '/r')).toThrow(RangeError);
    expect(() => parsePeersArgs(['--only'], '/r')).toThrow(RangeError);
    expect(() => parsePeersArgs(['--limit', '0'], '/r')).toThrow(RangeError);
  });
});

describe('runPeers', () => {
  it('prints how to set the peers up and runs nothing when the environment is missing', async () => {
    const root = await mkdtemp(path.join(os.tmpdir(), 'peers-'));
    const printed: string[] = [];
    let ran = 0;
    const runner: ScriptRunner = () => {
      ran += 1;
      return Promise.resolve();
    };
    const opts = { ...parsePeersArgs([], root), venv: path.join(root, 'missing-venv') };
    expect(await runPeers(opts, root, runner, (l) => printed.push(l))).toBeNull();
    expect(printed).toEqual([NOT_SET_UP]);
    expect(NOT_SET_UP).toBe('peers not set up: bash eval/peers/setup.sh');
    expect(ran).toBe(0);
  });

  it('runs each script with the data and an output file, then scores what it wrote', async () => {
    const root = await mkdtemp(path.join(os.tmpdir(), 'peers-'));
    await mkdir(path.join(root, 'venv/bin'), { recursive: true });
    await writeFile(path.join(root, 'venv/bin/python'), '');
    const nabDir = path.join(root, 'data/nab_dev');
    await mkdir(path.join(nabDir, 'data/a'), { recursive: true });
    await mkdir(path.join(nabDir, 'labels'), { recursive: true });
    await mkdir(path.join(nabDir, 'config'), { recursive: true });
    const stamp = (i: number) => `2020-01-01 00:${String(i).padStart(2, '0')}:00`;
    await writeFile(path.join(nabDir, 'data/a/x.csv'), ['timestamp,value', ...Array.from({ length: 40 }, (_, i) => `${stamp(i)},1`)].join('\n'));
    await writeFile(path.join(nabDir, 'labels/combined_windows.json'), JSON.stringify({ 'a/x.csv': [[stamp(20), stamp(29)]] }));
    const costs = (fpWeight: number, fnWeight = 1) => ({ CostMatrix: { tpWeight: 1, fnWeight, fpWeight, tnWeight: 1 } });
    await writeFile(
      path.join(nabDir, 'config/profiles.json'),
      JSON.stringify({ standard: costs(0.11), reward_low_FP_rate: costs(0.22), reward_low_FN_rate: costs(0.11, 2) }),
    );
    const calls: string[] = [];
    const runner: ScriptRunner = async (python, script, args) => {
      calls.push(`${path.relative(root, python)} ${path.relative(root, script)} ${args.map((a) => (a.startsWith(root) ? path.relative(root, a) : a)).join(' ')}`);
      const out = args[args.indexOf('--out') + 1]!;
      const payload = args[0] === 'nab'
        ? { peer: 'vendor-pkg', version: '0.4.0', elapsedMs: 7, files: [{ file: 'a/x.csv', rows: 40, flagged: [20], errors: [] }] }
        : { peer: 'stumpy', version: '1.14.1', elapsedMs: 9, complete: false, series: [{ file: UCR_FILE, n: 9000, trainEnd: 2500, locations: [5300, 8000, 3000] }] };
      await writeFile(out, JSON.stringify(payload));
    };
    const opts = { ...parsePeersArgs(['--peer', 'vendor,stumpy', '--only', 'nab'], root), datasets: ['nab', 'ucr'] as const, dataDir: path.join(root, 'data'), venv: path.join(root, 'venv') };
    const run = await runPeers(opts, root, runner, () => undefined);
    expect(calls).toEqual([
      'venv/bin/python eval/peers/vendor.py nab --data data/nab_dev --out eval/.peers-out/vendor-nab.json',
      'venv/bin/python eval/peers/vendor.py ucr --data data/ucr_dev --out eval/.peers-out/vendor-ucr.json',
      'venv/bin/python eval/peers/stumpy_ucr.py --data data/ucr_dev --out eval/.peers-out/stumpy-ucr.json',
    ]);
    const vendor = run?.results.find((r) => r.peer === 'vendor');
    expect(vendor?.nab?.scores.map((v) => Number(v.toFixed(6)))).toEqual([100, 100, 100]);
    expect(vendor?.ucr).toMatchObject({ top1: 1, top3: 1 });
    const stumpy = run?.results.find((r) => r.peer === 'stumpy');
    expect(stumpy).toMatchObject({ package: 'stumpy', version: '1.14.1', stoppedEarly: ['ucr'] });
    expect(run?.table).toContain('| stumpy discord, test against train (peer) | — | — | — | 1.000 | 1.000 |');
    expect(run?.table).toContain('UCR stopped early: 1 series scored');
    expect(run?.table).toContain('| TimeVQVAE-AD (published) | — | — | — | 0.708 | 0.776 |');

    // --reuse scores the same outputs again without running anything.
    calls.length = 0;
    const again = await runPeers({ ...opts, reuse: true }, root, runner, () => undefined);
    expect(calls).toEqual([]);
    expect(again?.table).toBe(run?.table);
    expect(JSON.parse(await readFile(path.join(root, 'eval/.peers-out/vendor-nab.json'), 'utf8'))).toMatchObject({ peer: 'vendor-pkg' });
  });
});

describe('peersTable', () => {
  it('prints a dash where a peer has no figure', () => {
    expect(peersTable([{ name: 'x', ucrTop1: 0.5 }]).split('\n')[2]).toBe('| x | — | — | — | 0.500 | — |  |');
  });
});
