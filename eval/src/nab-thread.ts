// A NAB detection thread: streams every NAB file through one engine variant or shipped row per
// request, exactly as the in-process run does (`detectNab` with `engineStreamingDetector` or
// `shippedDetector`), and sends back the flags, the timings, the errors and the plans. The corpus
// and the engine load once per thread.
import { parentPort, workerData } from 'node:worker_threads';
import type { StreamingDetector } from './detectors.js';
import { engineStreamingDetector, loadEngine, HARNESS_STREAM } from './engine.js';
import { loadNabCorpus } from './nab-data.js';
import { detectNab } from './nab-run.js';
import { type NabThreadData, type NabThreadMessage, type NabThreadRequest, runKey } from './nab-threads.js';
import { shippedDetector } from './shipped.js';
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
      let built: { detector: StreamingDetector; planOf?: () => unknown };
      if ('row' in request) {
        built = shippedDetector(engine.api, request.row, request.sensitivity);
      } else {
        const variant = ENGINE_VARIANTS.find((v) => v.name === request.variant);
        if (variant === undefined) throw new RangeError(`unknown variant ${request.variant}`);
        const detector = engineStreamingDetector(engine.api, variant, HARNESS_STREAM);
        built = { detector, planOf: () => detector.lastPlan() };
      }
      const run = detectNab(corpus, built.detector, {
        ...(built.planOf === undefined ? {} : { planOf: built.planOf }),
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
