// Plain-JavaScript entry of the delivery thread: registers tsx's loader in this thread (a worker
// does not inherit the parent's module hooks, and Node 20 ignores `--import` in a worker's
// execArgv), then loads the TypeScript thread.
import { register } from 'tsx/esm/api';

register();
await import('./sender-thread.ts');
