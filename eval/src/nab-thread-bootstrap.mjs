// Plain-JavaScript entry of a NAB detection thread: registers tsx's loader in this thread (a
// worker does not inherit the parent's module hooks), then loads the TypeScript thread.
import { register } from 'tsx/esm/api';

register();
await import('./nab-thread.ts');
