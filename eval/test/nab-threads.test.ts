import { rm } from 'node:fs/promises';
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
import { nabSubset, SHORTEST_FILES } from './nab-subset.js';

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
// The two shortest files of the split, as a corpus of their own.
const FILES = SHORTEST_FILES;

describe('NAB detection threads', () => {
  let dir: string;
  let corpus: NabCorpus;
  beforeAll(async () => {
    dir = await nabSubset(FILES, 'nab-threads-');
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
