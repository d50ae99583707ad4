// The result rows of a batch's judged series: one per new point, the engine's verdict joined with
// the learned one where the series has a baseline (learned-verdict.ts), the energy, z-score and
// regime beside it, and the versions that produced it.
import { heldRegime } from '@adp/regimes';
import type { ResultRow } from '@adp/streaming';
import type { JudgedSeries } from './batch-judge.js';
import { joinLearnedVerdicts } from './learned-verdict.js';
import { holdLevel } from './level-hold.js';

export interface RowSettings {
  /** The sensitivity of a series whose baseline names none. */
  readonly defaultSensitivity: number;
  readonly writtenAtMs: number;
  /** `model_version` of a series without a baseline (the engine alone). */
  readonly engineVersion: string;
  /** `model_version` of a series with a baseline (the engine and the learned model). */
  readonly learnedVersion: string;
}

/**
 * The rows of the judged series, in their order (each series' new points in turn), and the
 * replays skipped. A flag holds while the series stays away from its baseline's level (level-hold.ts).
 * Records each series' last learned excursion (`lastLearnedExcessAt`) and its level model's
 * stream (`levelAfter`) for its window.
 */
export function seriesRows(judged: readonly JudgedSeries[], settings: RowSettings): { rows: ResultRow[]; replays: number } {
  const rows: ResultRow[] = [];
  let replays = 0;
  for (const j of judged) {
    replays += j.pending.tsMs.length - j.newTsMs.length;
    const verdict =
      j.learnedScores === null
        ? { detections: j.detections, lastExcessAt: -1 }
        : joinLearnedVerdicts({
            values: j.newValues,
            detections: j.detections,
            scores: j.learnedScores,
            lastExcessAt: j.window.lastLearnedExcessAt,
            historyIndex: j.window.seenPoints,
            sensitivity: j.baseline?.sensitivity ?? settings.defaultSensitivity,
          });
    j.lastLearnedExcessAt = verdict.lastExcessAt;
    const level = j.baseline?.level ?? null;
    const held =
      level === null || j.newValues.length === 0
        ? null
        : holdLevel({
            values: j.newValues,
            detections: verdict.detections,
            level,
            previous: j.window.level,
            sensitivity: j.baseline?.sensitivity ?? settings.defaultSensitivity,
          });
    j.levelAfter = held?.next ?? null;
    const detections = held?.detections ?? verdict.detections;
    for (let k = 0; k < j.newValues.length; k++) {
      const detection = detections[k]!;
      const energy = j.energies?.[k];
      const z = j.zScores?.[k];
      rows.push({
        orgId: j.pending.orgId,
        machineId: j.pending.seriesId,
        tsMs: j.newTsMs[k]!,
        value: j.newValues[k]!,
        expectedValue: detection.expectedValue,
        upperMargin: detection.upperMargin,
        lowerMargin: detection.lowerMargin,
        isAnomaly: detection.isAnomaly,
        isPositiveAnomaly: detection.isPositiveAnomaly,
        isNegativeAnomaly: detection.isNegativeAnomaly,
        severity: detection.severity,
        energy: energy !== undefined && Number.isFinite(energy) ? energy : null,
        zScore: z !== undefined && Number.isFinite(z) ? z : null,
        regime: held?.holding[k] === true ? heldRegime(j.regimes?.[k] ?? 'UNKNOWN') : (j.regimes?.[k] ?? 'UNKNOWN'),
        modelVersion: j.baseline ? settings.learnedVersion : settings.engineVersion,
        writtenAtMs: settings.writtenAtMs,
      });
    }
  }
  return { rows, replays };
}
