// The detection engine's version, for each result's `model_version` (`engine-0.3.0`, or
// `engine-0.3.0+adp-jepa-0.2.0` when the learned model contributed). Read from the engine's
// package.json, so a release of the engine cannot forget to update it here.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

function engineVersion(): string {
  const entry = createRequire(import.meta.url).resolve('@adp/detection');
  const pkg = JSON.parse(readFileSync(join(dirname(entry), '..', 'package.json'), 'utf8')) as { version?: unknown };
  return typeof pkg.version === 'string' ? pkg.version : 'unknown';
}

export const ENGINE_VERSION = engineVersion();
