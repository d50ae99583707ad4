// The labelled datasets live beside the repository (../shared/datasets), not in it: a clone on its
// own has none. The loaders check for the dataset's folder first, so an evaluation started without
// it stops with one line saying where it looked, instead of a stack trace from deep in a read.
import { stat } from 'node:fs/promises';

export class DatasetMissingError extends Error {
  override readonly name = 'DatasetMissingError';

  constructor(
    readonly dataset: string,
    readonly dir: string,
  ) {
    super(
      `${dataset}: no folder ${dir}. The evaluations read the labelled datasets from ../shared/datasets ` +
        'beside the repository (they are not in it; docs/testing.md).',
    );
  }
}

/** Throws DatasetMissingError unless `dir` is a folder. */
export async function requireDataset(dataset: string, dir: string): Promise<void> {
  const found = await stat(dir).catch(() => null);
  if (found === null || !found.isDirectory()) throw new DatasetMissingError(dataset, dir);
}

/** For an entry point: a missing dataset ends the process with its one line and status 1. */
export function stopOnMissingDataset(err: unknown): never {
  if (err instanceof DatasetMissingError) {
    process.stderr.write(`${err.message}\n`);
    process.exit(1);
  }
  throw err;
}
