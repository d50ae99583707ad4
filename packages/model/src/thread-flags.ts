// The flags a worker thread of this process starts with. A thread inherits the process's
// execArgv, module hooks included (`--import ./apps/api/src/instrumentation.ts` under `npm start`):
// it would run them before its own tsx loader is registered, and fail on the TypeScript entry.
// The OpenTelemetry SDK belongs to the main thread anyway; other flags (heap, profiling) apply.

const MODULE_HOOKS = new Set(['--import', '--require', '-r', '--loader', '--experimental-loader']);

/** `execArgv` without its module hooks (each with its value, given as `--flag=value` or `--flag value`). */
export function threadExecArgv(execArgv: readonly string[] = process.execArgv): string[] {
  const kept: string[] = [];
  for (let index = 0; index < execArgv.length; index++) {
    const flag = execArgv[index] ?? '';
    const name = flag.split('=')[0] ?? '';
    if (!MODULE_HOOKS.has(name)) kept.push(flag);
    else if (!flag.includes('=')) index++; // its value is the next element
  }
  return kept;
}
