// The Bus contract (./bus-contract.ts) on the embedded buses: in memory, and on its log files.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll } from 'vitest';
import { createInProcessBus, openDurableInProcessBus } from '../src/index.js';
import { busContract } from './bus-contract.js';

let counter = 0;
const name = (stem: string): string => `${stem}_${++counter}`;

busContract('in-process', { open: async () => createInProcessBus({ retryDelayMs: 5 }), name });

const dirs: string[] = [];
afterAll(async () => {
  await Promise.all(dirs.map((dir) => rm(dir, { recursive: true, force: true })));
});
busContract('in-process, durable', {
  open: async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'adp-bus-contract-'));
    dirs.push(dir);
    return openDurableInProcessBus({ dir, retryDelayMs: 5 });
  },
  name,
});
