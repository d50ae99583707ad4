import type { ChangePointDetector, StreamingDetector } from '../detectors.js';

/** NAB's null detector: never fires. It scores exactly 0 after normalisation. */
export function nullDetector(): StreamingDetector {
  return { name: 'null', flags: (values) => values.map(() => false) };
}

/** TCPDBench's `zero`: predicts no change points (the metrics still add index 0). */
export function zeroChangePoints(): ChangePointDetector {
  return { name: 'zero', changePoints: () => [] };
}
