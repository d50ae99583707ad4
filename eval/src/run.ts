// `npm run eval`: the entry point. Parses the command line, runs the harness, prints the table,
// writes the results. Everything else lives in harness.ts.
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseConfig, USAGE, UsageError } from './config.js';
import { stopOnMissingDataset } from './datasets.js';
import { type Io, runEvaluation, runSweepCommand, writeJson } from './harness.js';
import { resultsSummary } from './summary.js';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

const io: Io = {
  progress: (line) => process.stderr.write(`${line}\n`),
  out: (text) => process.stdout.write(`${text}\n`),
};

async function main(argv: readonly string[]): Promise<number> {
  const started = performance.now();
  const config = parseConfig(argv, repoRoot);
  if (config.help) {
    io.out(USAGE);
    return 0;
  }
  if (config.sweep) {
    await runSweepCommand(config, io);
    io.out(`\nwrote eval/sweep.json and docs/sensitivity-sweep.png`);
  } else {
    const results = await runEvaluation(config, io);
    io.out(results.table);
    io.out(
      `\nengine @adp/detection ${results.engine.version}, source ${results.engine.sourceSha256.slice(0, 12)} (${results.engine.status})`,
    );
    if (config.resultsPath !== undefined) {
      await writeJson(config.resultsPath, results);
      io.out(`wrote ${path.relative(process.cwd(), config.resultsPath) || config.resultsPath}`);
      if (config.summaryPath !== undefined) {
        await writeJson(config.summaryPath, resultsSummary(results));
        io.out(`wrote ${path.relative(process.cwd(), config.summaryPath)}`);
      }
      if (results.ablation !== null) {
        // Beside the committed summary on a full run, else beside the results --out names.
        const ablationPath = path.join(path.dirname(config.summaryPath ?? config.resultsPath), 'ablation.json');
        await writeJson(ablationPath, results.ablation);
        io.out(`wrote ${path.relative(process.cwd(), ablationPath)}`);
      }
    } else {
      io.out('filtered run: results not written (use --out FILE to keep them)');
    }
  }
  io.out(`elapsed ${((performance.now() - started) / 1000).toFixed(1)} s`);
  return 0;
}

main(process.argv.slice(2)).catch(stopOnMissingDataset).then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    if (err instanceof UsageError) {
      process.stderr.write(`${err.message}\n\n${USAGE}\n`);
      process.exitCode = 2;
      return;
    }
    process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exitCode = 1;
  },
);
