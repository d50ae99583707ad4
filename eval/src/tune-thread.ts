// A tuning thread: row (a) of what ships (`shipped:stream`, the worker's judge with its defaults)
// over every NAB file, with the engine's constants as the bootstrap set them, and the flags sent
// back. One thread per setting: the engine's modules bind their constants once, when they load.
import { parentPort, workerData } from 'node:worker_threads';
import * as detection from '@adp/detection';
import type { EngineApi } from './engine.js';
import { loadNabCorpus } from './nab-data.js';
import { detectNab } from './nab-run.js';
import { shippedDetector } from './shipped.js';
import type { TuneThreadData, TuneThreadMessage } from './tune.js';

const { nabDir, overrides, row } = workerData as TuneThreadData;
const port = parentPort!;
try {
  for (const [name, value] of Object.entries(overrides)) {
    const bound = (detection.TUNING as Record<string, { value: number }>)[name]?.value;
    if (bound !== value) throw new Error(`${name} is ${bound} in the loaded engine, not ${value}`);
  }
  const corpus = await loadNabCorpus(nabDir);
  const run = detectNab(corpus, shippedDetector(detection as unknown as EngineApi, row).detector);
  const errors = run.errors.filter((e) => e !== undefined);
  if (errors.length > 0) throw new Error(errors.join('; '));
  port.postMessage({ kind: 'done', flags: run.detections.map((d) => Uint8Array.from(d.detections, (x) => (x ? 1 : 0))) } satisfies TuneThreadMessage);
} catch (err) {
  port.postMessage({ kind: 'failed', error: err instanceof Error ? err.message : String(err) } satisfies TuneThreadMessage);
}
