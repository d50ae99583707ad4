// A worker thread starts without the process's module hooks (npm start's --import of the
// OpenTelemetry entry, tsx's loader), whichever way they were given, and with every other flag.
import { describe, expect, it } from 'vitest';
import { threadExecArgv } from '../src/index.js';

describe('threadExecArgv', () => {
  it('drops --import, --require, -r and --loader with their values, and keeps the rest', () => {
    expect(
      threadExecArgv([
        '--require',
        '/x/preflight.cjs',
        '--import',
        'file:///x/loader.mjs',
        '--max-old-space-size=4096',
        '--import=./apps/api/src/instrumentation.ts',
        '-r',
        'y.cjs',
        '--experimental-loader=z.mjs',
        '--loader',
        'w.mjs',
        '--cpu-prof',
      ]),
    ).toEqual(['--max-old-space-size=4096', '--cpu-prof']);
    expect(threadExecArgv([])).toEqual([]);
  });
});
