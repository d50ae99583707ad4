import { cp, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import * as detection from '@adp/detection';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type EngineApi, engineStreamingDetector, HARNESS_STREAM } from '../src/engine.js';
import { loadNabCorpus, type NabCorpus } from '../src/nab-data.js';
import { detectNab } from '../src/nab-run.js';
import { detectVariantsInThreads, runKey } from '../src/nab-threads.js';
import { shippedDetector } from '../src/shipped.js';
import { ENGINE_VARIANTS } from '../src/variants.js';

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const NAB_DIR = path.resolve(REPO, '../shared/datasets/nab_dev');
// The two shortest files of the split, as a corpus of their own.
const FILES = ['realAWSCloudwatch/iio_us-east-1_i-a2eb1cd9_NetworkIn.csv', 'realKnownCause/rogue_agent_key_hold.csv'];

describe('NAB detection threads', () => {
  let dir: string;
  let corpus: NabCorpus;
  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'nab-threads-'));
    const windows = JSON.parse(await readFile(path.join(NAB_DIR, 'labels', 'combined_windows.json'), 'utf8')) as Record<string, unknown>;
    await mkdir(path.join(dir, 'labels'), { recursive: true });
    await writeFile(path.join(dir, 'labels', 'combined_windows.json'), JSON.stringify(Object.fromEntries(FILES.map((f) => [f, windows[f]]))));
    await cp(path.join(NAB_DIR, 'config'), path.join(dir, 'config'), { recursive: true });
    for (const file of FILES) {
      await mkdir(path.dirname(path.join(dir, 'data', file)), { recursive: true });
      await cp(path.join(NAB_DIR, 'data', file), path.join(dir, 'data', file));
    }
    corpus = await loadNabCorpus(dir);
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('gives each run exactly the flags and plans of the in-process run, whichever thread ran it', async () => {
    const runs = [{ variant: 'default' }, { variant: 'no-new-level' }, { variant: 'no-familiar-range' }, { variant: 'default', sensitivity: 80 }];
    const keys = ['default', 'no-new-level', 'no-familiar-range', 'default@80'];
    const progress: string[] = [];
    const threaded = await detectVariantsInThreads({
      repoRoot: REPO,
      nabDir: dir,
      corpus,
      runs: ['default', 'no-new-level', 'no-familiar-range', { variant: 'default', sensitivity: 80 }],
      threads: 2,
      onFile: (run, file) => progress.push(`${run} ${file}`),
    });
    expect(runs.map(runKey)).toEqual(keys);
    expect([...threaded.keys()].sort()).toEqual([...keys].sort());
    for (const run of runs) {
      const variant = ENGINE_VARIANTS.find((v) => v.name === run.variant)!;
      const settings = run.sensitivity === undefined ? HARNESS_STREAM : { ...HARNESS_STREAM, sensitivity: run.sensitivity };
      const detector = engineStreamingDetector(detection as unknown as EngineApi, variant, settings);
      const here = detectNab(corpus, detector, { planOf: () => detector.lastPlan() });
      const there = threaded.get(runKey(run))!;
      expect(there.detections, runKey(run)).toEqual(here.detections);
      expect(there.plans, runKey(run)).toEqual(here.plans);
      expect(there.errors, runKey(run)).toEqual([undefined, undefined]);
      expect(there.detections.some((d) => d.detections.some(Boolean)), runKey(run)).toBe(true);
    }
    // A lower sensitivity flags fewer rows here (the runs really differ).
    const count = (key: string): number => threaded.get(key)!.detections.reduce((n, d) => n + d.detections.filter(Boolean).length, 0);
    expect(count('default@80')).toBeLessThan(count('default'));
    // Every file of every run reported its progress.
    expect(progress.sort()).toEqual(keys.flatMap((k) => FILES.map((f) => `${k} ${f}`)).sort());
  }, 120_000);

  it('runs the shipped rows in threads with the flags of the in-process run', async () => {
    const rows = ['shipped:stream', 'shipped:entire', 'window:1441'];
    const threaded = await detectVariantsInThreads({ repoRoot: REPO, nabDir: dir, corpus, runs: rows.map((row) => ({ row })), threads: 2 });
    for (const row of rows) {
      const built = shippedDetector(detection as unknown as EngineApi, row);
      const here = detectNab(corpus, built.detector, built.planOf === undefined ? {} : { planOf: built.planOf });
      const there = threaded.get(runKey({ row }))!;
      expect(there.detections, row).toEqual(here.detections);
      expect(there.plans, row).toEqual(here.plans);
      expect(there.errors, row).toEqual([undefined, undefined]);
    }
  }, 120_000);

  it('fails with the variant named when a thread cannot run it', async () => {
    await expect(
      detectVariantsInThreads({ repoRoot: REPO, nabDir: dir, corpus, runs: ['no-such-variant'], threads: 2 }),
    ).rejects.toThrow(/no-such-variant/);
  }, 60_000);
});
