// The ClickHouse adapter of the accounts port against the real server: the same contract as the
// embedded store's (packages/store/test/accounts-contract.ts). Each test has its own database.
import { ClickHouseLogLevel, createClient } from '@clickhouse/client';
import { afterAll, describe } from 'vitest';
import { openClickHouseStore } from '@adp/store';
import { describeAccountsContract } from '../../packages/store/test/accounts-contract.js';
import { gateTitle, isolatedName, serverGate } from './servers.js';

const gate = await serverGate('clickhouse');
const url = gate.address.value;
const admin = gate.run ? createClient({ url, log: { level: ClickHouseLogLevel.OFF } }) : undefined;
afterAll(async () => {
  await admin?.close();
});

let database = '';

describe.skipIf(!gate.run)(gateTitle('ClickHouse accounts', gate), () => {
  describeAccountsContract('ClickHouse', {
    async setUp() {
      database = isolatedName('accounts');
    },
    open: (options = {}) => openClickHouseStore({ url, database, ...options }),
    async tearDown() {
      await admin?.command({ query: `DROP DATABASE IF EXISTS ${database}` });
    },
  });
});
