// A baselined series' held departures in the stream: where its baseline has a level model (the
// healthy level and spread of a single series, @adp/machine's level.ts), a flag holds while the
// series stays away from that level, as POST /v1/detect holds it (levelCarry) but forward only: a
// stream has already stored the points before a flag. The level model's stream state and the
// flags still waiting for their departure travel with the series' window (series-window.ts), so
// a restart, a retry or a rebalance holds exactly as an uninterrupted stream would.
import { heldPoint, type LastResult } from '@adp/detection';
import { initialStreamState, NO_LEVEL_HOLD, streamLevelCarry, streamMachine, type LevelHoldState } from '@adp/machine';
import type { MachineModelOf } from './machine-verdicts.js';

/** What a series' window keeps of its level model's stream. */
export interface LevelStream {
  /** The baseline it was judged against (its update time): a new baseline starts afresh. */
  readonly baselineUpdatedAtMs: number;
  /** Points judged since then. */
  readonly judged: number;
  /** The last smoothing window less one of the points' own distances, oldest first. */
  readonly distances: readonly number[];
  /** The one channel's parts of those distances. */
  readonly parts: readonly number[];
  readonly hold: LevelHoldState;
}

export interface HeldDetections {
  /** One per new value: the verdict's, or a held flag. */
  readonly detections: LastResult[];
  /** Which points are flagged only because their departure holds. */
  readonly held: boolean[];
  /** Whether each point is flagged and away from the healthy level (a departure that holds). */
  readonly holding: boolean[];
  readonly next: LevelStream;
}

/**
 * Holds the batch's flags (`detections`, the series' verdict) over its departures from the
 * baseline's level. A held point is as severe as the level model finds it (never more than its
 * flag), by heldPoint's band.
 */
export function holdLevel(input: {
  readonly values: readonly number[];
  readonly detections: readonly LastResult[];
  readonly level: MachineModelOf;
  readonly previous: LevelStream | null;
  readonly sensitivity: number;
}): HeldDetections {
  const { model, updatedAtMs } = input.level;
  const previous = input.previous !== null && input.previous.baselineUpdatedAtMs === updatedAtMs ? input.previous : null;
  const state = previous === null ? initialStreamState(model) : { judged: previous.judged, distances: previous.distances, parts: [previous.parts], episode: null };
  const step = streamMachine(model, state, [input.values], input.sensitivity);
  const isOut = step.points.map((point) => point.isAnomaly);
  const carry = streamLevelCarry(
    input.detections.map((detection) => detection.isAnomaly),
    input.detections.map((detection) => detection.severity),
    { isAnomaly: isOut, severity: step.points.map((point) => point.severity), window: model.smoothingPoints },
    previous?.hold ?? NO_LEVEL_HOLD,
    state.judged,
  );
  const held = new Array<boolean>(input.values.length).fill(false);
  const detections = input.detections.map((detection, k): LastResult => {
    const severity = carry.carried[k]!;
    if (severity <= 0 || detection.isAnomaly) return detection;
    held[k] = true;
    const holds = heldPoint(input.values[k]!, detection.expectedValue, severity);
    return {
      ...detection,
      isAnomaly: true,
      isPositiveAnomaly: holds.isPositiveAnomaly,
      isNegativeAnomaly: holds.isNegativeAnomaly,
      severity: holds.severity,
      upperMargin: holds.margin,
      lowerMargin: holds.margin,
    };
  });
  return {
    detections,
    held,
    holding: detections.map((detection, k) => detection.isAnomaly && (held[k]! || isOut[k]!)),
    next: {
      baselineUpdatedAtMs: updatedAtMs,
      judged: step.state.judged,
      distances: step.state.distances,
      parts: step.state.parts[0] ?? [],
      hold: carry.state,
    },
  };
}
