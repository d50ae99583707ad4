// A NAB detection thread: streams every NAB file through one engine variant per request, exactly
// as the in-process run does (`detectNab` with `engineStreamingDetector`), and sends back the
// flags, the timings, the errors and the plans. The corpus and the engine load once per thread.
import { parentPort, workerData } from 'node:worker_threads';
import { engineStreamingDetector, loadEngine, STREAM_DEFAULTS } from './engine.js';
import { loadNabCorpus } from './nab-data.js';
import { detectNab } from './nab-run.js';
import { type NabThreadData, type NabThreadMessage, type NabThreadRequest, runKey } from './nab-threads.js';
import { ENGINE_VARIANTS } from './variants.js';

const { repoRoot, nabDir } = workerData as NabThreadData;
const port = parentPort!;
const loading = Promise.all([loadEngine(repoRoot), loadNabCorpus(nabDir)]);

port.on('message', (request: NabThreadRequest) => {
  void (async () => {
    const send = (message: NabThreadMessage): void => port.postMessage(message);
    const key = runKey(request);
    try {
      const [engine, corpus] = await loading;
      if (engine.kind !== 'loaded') throw new Error(`engine not ready: missing ${engine.missing.join(', ')}`);
      const variant = ENGINE_VARIANTS.find((v) => v.name === request.variant);
      if (variant === undefined) throw new RangeError(`unknown variant ${request.variant}`);
      const settings = request.sensitivity === undefined ? STREAM_DEFAULTS : { ...STREAM_DEFAULTS, sensitivity: request.sensitivity };
      const detector = engineStreamingDetector(engine.api, variant, settings);
      const run = detectNab(corpus, detector, {
        planOf: () => detector.lastPlan(),
        onFile: (file, ms, error) => send({ kind: 'file', run: key, file, ms, error }),
      });
      send({
        kind: 'done',
        run: key,
        flags: run.detections.map((d) => Uint8Array.from(d.detections, (x) => (x ? 1 : 0))),
        elapsedMs: run.elapsedMs,
        errors: run.errors,
        plans: run.plans,
      });
    } catch (err) {
      send({ kind: 'failed', run: key, error: err instanceof Error ? err.message : String(err) });
    }
  })();
});
