import { rm } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import * as detection from '@adp/detection';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type EngineApi, engineStreamingDetector, HARNESS_STREAM } from '../src/engine.js';
import { loadNabCorpus, type NabCorpus } from '../src/nab-data.js';
import { detectNab, scoreNab } from '../src/nab-run.js';
import { detectVariantsInThreads, runKey } from '../src/nab-threads.js';
import { shippedDetector } from '../src/shipped.js';
import { runSweep, SWEEP_ROW, sweepPoint } from '../src/sweep.js';
import { ENGINE_VARIANTS } from '../src/variants.js';
import { datasetTitle } from '../../test/datasets.js';
import { NAB, nabSubset, SHORTEST_FILES } from './nab-subset.js';

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
// The two shortest files of the split, as a corpus of their own.
const FILES = SHORTEST_FILES;

describe.skipIf(!NAB.run)(datasetTitle('NAB detection threads', NAB), () => {
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
    const runs = [{ variant: 'default' }, { variant: 'no-new-level' }, { variant: 'no-familiar-range' }];
    const keys = ['default', 'no-new-level', 'no-familiar-range'];
    const progress: string[] = [];
    const threaded = await detectVariantsInThreads({
      repoRoot: REPO,
      nabDir: dir,
      corpus,
      runs: ['default', 'no-new-level', 'no-familiar-range'],
      threads: 2,
      onFile: (run, file) => progress.push(`${run} ${file}`),
    });
    expect(runs.map(runKey)).toEqual(keys);
    expect([...threaded.keys()].sort()).toEqual([...keys].sort());
    for (const run of runs) {
      const variant = ENGINE_VARIANTS.find((v) => v.name === run.variant)!;
      const detector = engineStreamingDetector(detection as unknown as EngineApi, variant, HARNESS_STREAM);
      const here = detectNab(corpus, detector, { planOf: () => detector.lastPlan() });
      const there = threaded.get(runKey(run))!;
      expect(there.detections, runKey(run)).toEqual(here.detections);
      expect(there.plans, runKey(run)).toEqual(here.plans);
      expect(there.errors, runKey(run)).toEqual([undefined, undefined]);
      expect(there.detections.some((d) => d.detections.some(Boolean)), runKey(run)).toBe(true);
    }
    // Every file of every run reported its progress.
    expect(progress.sort()).toEqual(keys.flatMap((k) => FILES.map((f) => `${k} ${f}`)).sort());
  }, 120_000);

  it('runs the shipped rows in threads with the flags of the in-process run, at a sensitivity too', async () => {
    const runs = [{ row: 'shipped:stream' }, { row: 'shipped:entire' }, { row: 'window:1441' }, { row: 'shipped:stream', sensitivity: 80 }];
    expect(runs.map(runKey)).toEqual(['shipped:stream', 'shipped:entire', 'window:1441', 'shipped:stream@80']);
    const threaded = await detectVariantsInThreads({ repoRoot: REPO, nabDir: dir, corpus, runs, threads: 2 });
    for (const run of runs) {
      const built = shippedDetector(detection as unknown as EngineApi, run.row, run.sensitivity);
      const here = detectNab(corpus, built.detector, built.planOf === undefined ? {} : { planOf: built.planOf });
      const there = threaded.get(runKey(run))!;
      expect(there.detections, runKey(run)).toEqual(here.detections);
      expect(there.plans, runKey(run)).toEqual(here.plans);
      expect(there.errors, runKey(run)).toEqual([undefined, undefined]);
    }
    // A lower sensitivity flags fewer rows here (the runs really differ).
    const count = (key: string): number => threaded.get(key)!.detections.reduce((n, d) => n + d.detections.filter(Boolean).length, 0);
    expect(count('shipped:stream@80')).toBeLessThan(count('shipped:stream'));
    // The sweep's in-process pass at 80 is this row at 80, point for point.
    const [here] = runSweep(corpus, detection as unknown as EngineApi, [80]);
    const there = sweepPoint(80, scoreNab(corpus, SWEEP_ROW, threaded.get('shipped:stream@80')!));
    expect(SWEEP_ROW).toBe('shipped:stream');
    expect({ ...here, elapsedMs: 0 }).toEqual({ ...there, elapsedMs: 0 });
  }, 120_000);

  it('fails with the variant named when a thread cannot run it', async () => {
    await expect(
      detectVariantsInThreads({ repoRoot: REPO, nabDir: dir, corpus, runs: ['no-such-variant'], threads: 2 }),
    ).rejects.toThrow(/no-such-variant/);
  }, 60_000);
});
