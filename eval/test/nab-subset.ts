// A NAB dataset folder with some of nab_dev's files (their labels and NAB's config), for the tests
// that stream real files through the engine in threads and need a short corpus.
import { cp, mkdir, mkdtemp, readFile, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { datasetGate } from '../../test/datasets.js';

/** Whether nab_dev is beside the repository: the tests that read it skip without it (fail under CI). */
export const NAB = datasetGate('nab_dev');
export const NAB_DIR = NAB.dir;
/** The two shortest files of the split. */
export const SHORTEST_FILES = ['realAWSCloudwatch/iio_us-east-1_i-a2eb1cd9_NetworkIn.csv', 'realKnownCause/rogue_agent_key_hold.csv'];

/** A new temporary folder laid out as nab_dev, holding `files` only (the caller removes it). */
export async function nabSubset(files: readonly string[], prefix: string): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), prefix));
  const windows = JSON.parse(await readFile(path.join(NAB_DIR, 'labels', 'combined_windows.json'), 'utf8')) as Record<string, unknown>;
  await mkdir(path.join(dir, 'labels'), { recursive: true });
  await writeFile(path.join(dir, 'labels', 'combined_windows.json'), JSON.stringify(Object.fromEntries(files.map((f) => [f, windows[f]]))));
  await cp(path.join(NAB_DIR, 'config'), path.join(dir, 'config'), { recursive: true });
  for (const file of files) {
    await mkdir(path.dirname(path.join(dir, 'data', file)), { recursive: true });
    await cp(path.join(NAB_DIR, 'data', file), path.join(dir, 'data', file));
  }
  return dir;
}
