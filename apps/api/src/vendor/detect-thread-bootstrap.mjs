// Plain-JavaScript entry of a vendor detection thread: registers tsx's loader in this thread (a
// worker does not inherit the parent's module hooks, and Node 20 ignores `--import` in a worker's
// execArgv), then hands the pool the TypeScript thread's task function.
import { register } from 'tsx/esm/api';

register();
const thread = await import('./detect-thread.ts');

export default thread.default;
