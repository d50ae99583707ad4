// Identity-provider tokens in the scale-out configuration: the suite the embedded server passes
// (apps/api/test/oidc-suite.ts), with every app on a ClickHouse store of the test's own database and
// Redis under the test's own prefix (key cache, rate limits, failed-authentication counts, notifier).
import { describe } from 'vitest';
import { describeOidcSuite } from '../../apps/api/test/oidc-suite.js';
import { scaleOutEnvironment } from './scale-out.js';
import { gateTitle, serverGate } from './servers.js';

const clickhouseGate = await serverGate('clickhouse');
const redisGate = await serverGate('redis');
const gate = clickhouseGate.run ? redisGate : clickhouseGate;

describe.skipIf(!gate.run)(gateTitle('API identity-provider tokens on ClickHouse and Redis', gate), () => {
  describeOidcSuite('ClickHouse and Redis', () => scaleOutEnvironment(clickhouseGate.address.value, redisGate.address.value));
});
