// Plain-JavaScript entry of a tuning thread: registers tsx's loader in this thread, sets the
// constants the run overrides in the engine's TUNING table before any engine module loads (each
// module binds its constants from the table when it loads, and a thread loads its own copy of
// every module), then loads the TypeScript thread that streams NAB.
import { workerData } from 'node:worker_threads';
import { register } from 'tsx/esm/api';

register();
const { TUNING } = await import('../../pipelines/detection/src/tuning.ts');
for (const [name, value] of Object.entries(workerData.overrides)) {
  const entry = TUNING[name];
  if (entry === undefined) throw new RangeError(`no tuned constant ${name}`);
  entry.value = value;
}
await import('./tune-thread.ts');
