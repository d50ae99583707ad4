// The Node.js versions the platform runs on, as npm checks them: `npm install` warns EBADENGINE for
// every installed package whose `engines.node` leaves out the running Node, so each locked package's
// range must hold every version package.json's `engines` admits, and the README must name those.
// (cookie 2 wants Node 22: package.json's `overrides` keeps its dependents on cookie 1, which has the
// same parse and stringify functions and runs on Node 18 and later.)
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import semver from 'semver';
import { describe, expect, it } from 'vitest';

const read = (file: string): string => readFileSync(fileURLToPath(new URL(`../../${file}`, import.meta.url)), 'utf8');

interface LockedPackage {
  readonly version?: string;
  readonly engines?: { readonly node?: string } | readonly string[];
}

const manifest = JSON.parse(read('package.json')) as { engines: { node: string } };
const lock = JSON.parse(read('package-lock.json')) as { packages: Record<string, LockedPackage> };
const supported = manifest.engines.node;

describe('the Node.js versions the platform names', () => {
  it('are held by every locked package, so npm install prints no EBADENGINE warning', () => {
    const narrower = Object.entries(lock.packages).flatMap(([where, locked]) => {
      // Old manifests sometimes list engines as an array of strings, which npm ignores.
      const range = Array.isArray(locked.engines) ? undefined : (locked.engines as { node?: string } | undefined)?.node;
      if (where === '' || range === undefined) return [];
      return semver.subset(supported, range) ? [] : [`${where}@${locked.version ?? '?'} wants node ${range}`];
    });
    expect(narrower).toEqual([]);
  });

  it('are the ones the README names', () => {
    expect(read('README.md')).toContain('Node.js 20.19 or later on 20, 22.13 or later on 22, or 24 and later');
    for (const version of ['20.19.0', '22.13.0', '24.0.0', '26.1.0']) expect(semver.satisfies(version, supported), version).toBe(true);
    for (const version of ['20.18.1', '21.7.3', '22.12.0', '23.11.0']) expect(semver.satisfies(version, supported), version).toBe(false);
  });
});
