// The committed packages/model/bench/results.json is a summary: only what the table of
// packages/model/README.md ("Design decisions, measured") and the line under it show, so a run
// changes a few lines and a test (packages/model/test/bench-table.test.ts) can check the page
// against it. A run's every figure (settings, windows, epochs, ratios, energies, the worker's
// timings) goes to `.cache/bench/model-finetune.json`, which git ignores.

/** One series size's fine-tunes: seconds and held-out loss per case (the slow references only when run). */
export interface FineTuneRow {
  readonly points: number;
  readonly fineTuneSeconds: number;
  readonly finalLoss: number;
  readonly adamHeadSeconds?: number;
  readonly adamHeadFinalLoss?: number;
  readonly referenceSeconds?: number;
  readonly referenceFinalLoss?: number;
  readonly fullReferenceSeconds?: number;
  readonly fullReferenceFinalLoss?: number;
}

export interface FineTuneResults {
  readonly modelVersion: string;
  readonly measuredAt: string;
  readonly machine: { readonly cpus: number; readonly cpuModel: string; readonly loadAverage: readonly number[] };
  readonly fineTune: readonly FineTuneRow[];
}

/** The README table's cases, in its row order: the row's label and the fields of its seconds and loss. */
export const FINETUNE_TABLE_CASES = [
  { label: 'ridge, closed form (default)', seconds: 'fineTuneSeconds', loss: 'finalLoss' },
  { label: 'Adam, output layer, lr 1e-3, 50 epochs', seconds: 'adamHeadSeconds', loss: 'adamHeadFinalLoss' },
  { label: 'slow reference: Adam output layer, lr 2.5e-4, 200 epochs', seconds: 'referenceSeconds', loss: 'referenceFinalLoss' },
  { label: 'slow reference: Adam all tensors, lr 2.5e-4, 200 epochs', seconds: 'fullReferenceSeconds', loss: 'fullReferenceFinalLoss' },
] as const satisfies readonly { label: string; seconds: keyof FineTuneRow; loss: keyof FineTuneRow }[];

/** packages/model/bench/results.json: the figures the README's table and the line under it show. */
export function fineTuneSummary(run: FineTuneResults): FineTuneResults {
  const { cpus, cpuModel, loadAverage } = run.machine;
  return {
    modelVersion: run.modelVersion,
    measuredAt: run.measuredAt,
    machine: { cpus, cpuModel, loadAverage: [...loadAverage] },
    fineTune: run.fineTune.map((row) => {
      const kept: Record<string, number> = { points: row.points };
      for (const { seconds, loss } of FINETUNE_TABLE_CASES) {
        if (row[seconds] !== undefined) kept[seconds] = row[seconds];
        if (row[loss] !== undefined) kept[loss] = row[loss];
      }
      return kept as unknown as FineTuneRow;
    }),
  };
}
