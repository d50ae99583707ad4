// Identity-provider tokens in the embedded configuration (the suite is oidc-suite.ts).
import { describeOidcSuite } from './oidc-suite.js';
import { testEnvironment } from './platform-helpers.js';

describeOidcSuite('embedded', testEnvironment);
