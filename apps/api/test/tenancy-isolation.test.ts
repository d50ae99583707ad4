// Organization isolation in the embedded configuration (the property is isolation-suite.ts).
import { describeIsolation, embeddedIsolationBackend } from './isolation-suite.js';

describeIsolation('embedded', embeddedIsolationBackend);
