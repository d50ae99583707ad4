// Organization isolation in the scale-out configuration: the property the embedded server passes
// (apps/api/test/isolation-suite.ts), each run on a ClickHouse database and Redis prefix of its own.
import { describe } from 'vitest';
import { describeIsolation } from '../../apps/api/test/isolation-suite.js';
import { scaleOut } from './scale-out.js';
import { gateTitle, serverGate } from './servers.js';

const clickhouseGate = await serverGate('clickhouse');
const redisGate = await serverGate('redis');
const gate = clickhouseGate.run ? redisGate : clickhouseGate;

describe.skipIf(!gate.run)(gateTitle('API organization isolation on ClickHouse and Redis', gate), () => {
  describeIsolation('ClickHouse and Redis', async () => {
    const shared = await scaleOut(clickhouseGate.address.value, redisGate.address.value);
    return {
      config: shared.config,
      appOptions: async () => ({ store: await shared.openStore(), notifier: await shared.notifier() }),
      cleanup: shared.cleanup,
    };
  });
});
