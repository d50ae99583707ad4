import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DatasetMissingError, requireDataset } from '../src/datasets.js';
import { loadNabCorpus } from '../src/nab-data.js';
import { loadTcpdSeries } from '../src/tcpd-data.js';
import { listUcrSeries } from '../src/ucr-data.js';

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

describe('a dataset that is not there', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'eval-datasets-'));
    await writeFile(path.join(dir, 'a-file'), '');
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('is refused by name and folder before anything is read; a folder passes', async () => {
    const missing = path.join(dir, 'nab_dev');
    await expect(requireDataset('NAB dev split', missing)).rejects.toThrow(DatasetMissingError);
    await expect(requireDataset('NAB dev split', missing)).rejects.toMatchObject({ dataset: 'NAB dev split', dir: missing });
    await expect(requireDataset('a file', path.join(dir, 'a-file'))).rejects.toThrow(DatasetMissingError);
    await expect(requireDataset('a folder', dir)).resolves.toBeUndefined();
  });

  it('stops each loader with that error', async () => {
    const missing = path.join(dir, 'absent');
    await expect(loadNabCorpus(missing)).rejects.toThrow(DatasetMissingError);
    await expect(loadTcpdSeries(missing)).rejects.toThrow(DatasetMissingError);
    await expect(listUcrSeries(missing)).rejects.toThrow(DatasetMissingError);
  });

  it('ends `npm run eval` with one line on stderr and status 1, no stack trace', async () => {
    const missing = path.join(dir, 'no-datasets');
    const run = promisify(execFile)(process.execPath, ['--import', 'tsx', 'eval/src/run.ts', '--data', missing], { cwd: REPO });
    const failed = (await run.then(
      () => null,
      (error: unknown) => error,
    )) as { code: number; stdout: string; stderr: string } | null;
    expect(failed).not.toBeNull();
    expect(failed!.code).toBe(1);
    expect(failed!.stderr.trim().split('\n')).toEqual([expect.stringContaining(`NAB dev split: no folder ${path.join(missing, 'nab_dev')}.`)]);
  });
});
