import { cp, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import * as detection from '@adp/detection';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type EngineApi, engineStreamingDetector, STREAM_DEFAULTS } from '../src/engine.js';
import { loadNabCorpus, type NabCorpus } from '../src/nab-data.js';
import { detectNab } from '../src/nab-run.js';
import { detectVariantsInThreads } from '../src/nab-threads.js';
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

  it('gives each variant exactly the flags and plans of the in-process run, whichever thread ran it', async () => {
    const variants = ['default', 'no-new-level', 'no-familiar-range'];
    const progress: string[] = [];
    const threaded = await detectVariantsInThreads({
      repoRoot: REPO,
      nabDir: dir,
      corpus,
      variants,
      threads: 2,
      onFile: (variant, file) => progress.push(`${variant} ${file}`),
    });
    expect([...threaded.keys()].sort()).toEqual([...variants].sort());
    for (const name of variants) {
      const variant = ENGINE_VARIANTS.find((v) => v.name === name)!;
      const detector = engineStreamingDetector(detection as unknown as EngineApi, variant, STREAM_DEFAULTS);
      const here = detectNab(corpus, detector, { planOf: () => detector.lastPlan() });
      const there = threaded.get(name)!;
      expect(there.detections, name).toEqual(here.detections);
      expect(there.plans, name).toEqual(here.plans);
      expect(there.errors, name).toEqual([undefined, undefined]);
      expect(there.detections.some((d) => d.detections.some(Boolean)), name).toBe(true);
    }
    // Every file of every variant reported its progress.
    expect(progress.sort()).toEqual(variants.flatMap((v) => FILES.map((f) => `${v} ${f}`)).sort());
  }, 120_000);

  it('fails with the variant named when a thread cannot run it', async () => {
    await expect(
      detectVariantsInThreads({ repoRoot: REPO, nabDir: dir, corpus, variants: ['no-such-variant'], threads: 2 }),
    ).rejects.toThrow(/no-such-variant/);
  }, 60_000);
});
