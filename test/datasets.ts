// Where the tests find the labelled datasets (NAB, TCPD, UCR), and whether a test may run on them.
// They sit beside the repository in `../shared/datasets/`, never in it (reference/README.md), so a
// clone on its own has none. A test file asks `datasetGate(name)` at load time:
//   - the folder is there          -> its tests run;
//   - it is not and CI=true        -> the file fails: CI checks out the datasets, so a missing one
//                                     is a broken setup, not a reason to pass with less;
//   - it is not, outside CI        -> the tests that need it are skipped, with one line saying why.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/** The datasets folder beside the repository. */
export const DATASETS_DIR = fileURLToPath(new URL('../../shared/datasets/', import.meta.url));

/** The datasets the tests read: NAB's dev split, the TCPD subset, the UCR archive's dev half. */
export type DatasetName = 'nab_dev' | 'tcpd' | 'ucr_dev';

export type DatasetGate =
  | { readonly run: true; readonly dir: string }
  | { readonly run: false; readonly dir: string; readonly reason: string };

/**
 * Decides whether the tests on `name` run. Throws (failing the file) when the dataset is missing
 * and CI=true; otherwise returns a gate for `describe.skipIf(!gate.run)` or `it.skipIf`.
 */
export function datasetGate(name: DatasetName, env: NodeJS.ProcessEnv = process.env): DatasetGate {
  const dir = `${DATASETS_DIR}${name}`;
  if (existsSync(dir)) return { run: true, dir };
  const reason = `${dir} is absent (the shared datasets live beside the repository in ../shared/datasets, not in it)`;
  if (env['CI'] === 'true' || env['CI'] === '1') {
    throw new Error(`CI=true and ${reason}`);
  }
  console.warn(`[datasets] skipping the tests that need ${name}: ${reason}`);
  return { run: false, dir, reason };
}

/** A test or `describe` title that carries the skip reason, so a skipped test says why in the report. */
export function datasetTitle(title: string, gate: DatasetGate): string {
  return gate.run ? title : `${title} (skipped: ${gate.reason})`;
}
