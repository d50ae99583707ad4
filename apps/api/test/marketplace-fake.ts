// A loopback stand-in for the marketplace's metering service, speaking its AWS JSON 1.1 protocol
// (POST /, `X-Amz-Target: AWSMPMeteringService.<Operation>`, `application/x-amz-json-1.1`,
// errors as `{"__type": ...}`), so the tests drive the real AWS SDK client against it.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createMeteringClient, type MarketplaceMeteringClient } from '../src/marketplace/client.js';

export const PRODUCT_CODE = 'prodadp0123456789';
export const FAKE_CREDENTIALS = { accessKeyId: 'AKIAFAKEFAKEFAKEFAKE', secretAccessKey: 'fake-secret-for-the-loopback-service' } as const;

export interface FakeCustomer {
  readonly CustomerIdentifier?: string;
  readonly CustomerAWSAccountId?: string;
  readonly LicenseArn?: string;
  readonly ProductCode: string;
}

export interface FakeCall {
  readonly operation: string;
  readonly body: Record<string, unknown>;
  readonly signed: boolean;
}

export interface FakeMeteringService {
  readonly url: string;
  /** Registration token → customer. Unknown tokens are InvalidTokenException. */
  readonly tokens: Map<string, FakeCustomer>;
  /** Tokens answered with ExpiredTokenException. */
  readonly expired: Set<string>;
  /** Every request, in arrival order. */
  readonly calls: FakeCall[];
  /**
   * What BatchMeterUsage billed, by `customer|dimension|hour ISO`: each distinct record once, as
   * the marketplace does (an identical resend is a duplicate, not a second bill).
   */
  readonly billed: Map<string, number>;
  /** Records (of the next BatchMeterUsage calls) to answer as unprocessed: decremented per record. */
  unprocessedToCome: number;
  /** When set, every request is answered with this service error (`__type`) and status. */
  failWith: { readonly type: string; readonly status: number } | null;
  /** A client for this service with static fake credentials. */
  client(timeoutMs?: number): MarketplaceMeteringClient;
  close(): Promise<void>;
}

function send(response: http.ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  response.writeHead(status, {
    'content-type': 'application/x-amz-json-1.1',
    'content-length': Buffer.byteLength(text),
    'x-amzn-requestid': `req-${Math.random().toString(16).slice(2)}`,
  });
  response.end(text);
}

function serviceError(response: http.ServerResponse, status: number, type: string, message: string): void {
  send(response, status, { __type: type, message });
}

export async function startFakeMeteringService(): Promise<FakeMeteringService> {
  const clients: MarketplaceMeteringClient[] = [];
  const service: FakeMeteringService = {
    url: '',
    tokens: new Map(),
    expired: new Set(),
    calls: [],
    billed: new Map(),
    unprocessedToCome: 0,
    failWith: null,
    client(timeoutMs = 5_000) {
      const client = createMeteringClient({ region: 'us-east-1', endpoint: service.url, timeoutMs }, FAKE_CREDENTIALS);
      clients.push(client);
      return client;
    },
    async close() {
      for (const client of clients.splice(0)) client.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };

  const server = http.createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const target = request.headers['x-amz-target'];
      const contentType = request.headers['content-type'] ?? '';
      if (request.method !== 'POST' || typeof target !== 'string' || !contentType.startsWith('application/x-amz-json-1.1')) {
        serviceError(response, 400, 'SerializationException', 'Expected a POST of application/x-amz-json-1.1 with X-Amz-Target');
        return;
      }
      const operation = target.replace(/^AWSMPMeteringService\./, '');
      let body: Record<string, unknown>;
      try {
        body = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}') as Record<string, unknown>;
      } catch {
        serviceError(response, 400, 'SerializationException', 'Body is not JSON');
        return;
      }
      const authorization = request.headers.authorization ?? '';
      service.calls.push({ operation, body, signed: authorization.includes(`Credential=${FAKE_CREDENTIALS.accessKeyId}/`) });
      if (service.failWith) {
        serviceError(response, service.failWith.status, service.failWith.type, 'Injected failure');
        return;
      }
      if (operation === 'ResolveCustomer') {
        const token = body['RegistrationToken'];
        if (typeof token !== 'string') return serviceError(response, 400, 'InvalidTokenException', 'No token');
        if (service.expired.has(token)) return serviceError(response, 400, 'ExpiredTokenException', 'Registration token is expired');
        const customer = service.tokens.get(token);
        if (!customer) return serviceError(response, 400, 'InvalidTokenException', 'Registration token is invalid');
        return send(response, 200, customer);
      }
      if (operation === 'BatchMeterUsage') {
        const records = Array.isArray(body['UsageRecords']) ? (body['UsageRecords'] as Record<string, unknown>[]) : [];
        // License records (CustomerAWSAccountId and LicenseArn) go without ProductCode; the older
        // form (CustomerIdentifier) needs it. The marketplace refuses a request mixing them.
        const licensed = records.some((record) => record['LicenseArn'] !== undefined);
        if (licensed) {
          if (body['ProductCode'] !== undefined) return serviceError(response, 400, 'ValidationException', 'ProductCode with LicenseArn records');
          if (records.some((record) => typeof record['LicenseArn'] !== 'string' || typeof record['CustomerAWSAccountId'] !== 'string' || record['CustomerIdentifier'] !== undefined)) {
            return serviceError(response, 400, 'ValidationException', 'Every record of a license request needs CustomerAWSAccountId and LicenseArn');
          }
        } else if (body['ProductCode'] !== PRODUCT_CODE) return serviceError(response, 400, 'InvalidProductCodeException', 'Unknown product');
        if (records.length === 0 || records.length > 25) return serviceError(response, 400, 'ValidationException', 'UsageRecords must hold 1 to 25 records');
        const results: unknown[] = [];
        const unprocessed: unknown[] = [];
        for (const record of records) {
          if (service.unprocessedToCome > 0) {
            service.unprocessedToCome -= 1;
            unprocessed.push(record);
            continue;
          }
          const customer = String(record['CustomerAWSAccountId'] ?? record['CustomerIdentifier']);
          // JSON 1.1 writes timestamps as epoch seconds.
          const key = `${customer}|${String(record['Dimension'])}|${new Date(Number(record['Timestamp']) * 1000).toISOString()}`;
          const duplicate = service.billed.has(key);
          if (!duplicate) service.billed.set(key, Number(record['Quantity']));
          results.push({ UsageRecord: record, MeteringRecordId: `mr-${service.billed.size}`, Status: duplicate ? 'DuplicateRecord' : 'Success' });
        }
        return send(response, 200, { Results: results, UnprocessedRecords: unprocessed });
      }
      serviceError(response, 400, 'UnknownOperationException', `Unknown operation ${operation}`);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  (service as { url: string }).url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return service;
}
