// The marketplace's SNS notifications: signatures (versions 1 and 2) checked against a
// certificate served by a loopback server the test configuration allows, forged, unsigned and
// foreign messages refused in our shape and never processed, the subscription confirmed only on
// an allowed host, the final metering on unsubscribe-pending and the keys revoked on
// unsubscribe-success (after it). The certificate is made with openssl at test time.
import { execFileSync } from 'node:child_process';
import { createSign } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { HOUR_MS, openEmbeddedStore, type Store } from '@adp/store';
import { buildApp } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { trustedSnsUrl } from '../src/marketplace/sns.js';
import { PRODUCT_CODE, startFakeMeteringService, type FakeMeteringService } from './marketplace-fake.js';
import { sharedStoreView } from './store-view.js';

const TOPIC = 'arn:aws:sns:us-east-1:123456789012:aws-mp-subscription-notification-test';

describe('SNS URL rule without a test pattern', () => {
  it('takes only https on the topic region\'s SNS host', () => {
    const ok = (url: string) => trustedSnsUrl(url, TOPIC, undefined) !== null;
    expect(ok('https://sns.us-east-1.amazonaws.com/SimpleNotificationService-abc.pem')).toBe(true);
    expect(ok('http://sns.us-east-1.amazonaws.com/SimpleNotificationService-abc.pem')).toBe(false);
    expect(ok('https://sns.eu-west-1.amazonaws.com/SimpleNotificationService-abc.pem')).toBe(false);
    expect(ok('https://sns.us-east-1.amazonaws.com.evil.example/x.pem')).toBe(false);
    expect(ok('https://evil.example/sns.us-east-1.amazonaws.com/x.pem')).toBe(false);
    expect(ok('https://user@sns.us-east-1.amazonaws.com/x.pem')).toBe(false);
    expect(ok('https://sns.us-east-1.amazonaws.com:8443/x.pem')).toBe(false);
    expect(trustedSnsUrl('https://sns.cn-north-1.amazonaws.com.cn/x.pem', 'arn:aws-cn:sns:cn-north-1:123456789012:t', undefined)).not.toBeNull();
  });
});

describe('marketplace notifications', () => {
  let tlsDir: string;
  let privateKey: string;
  let certificate: string;
  let server: http.Server;
  let base: string;
  const hits: string[] = [];

  beforeAll(async () => {
    tlsDir = await mkdtemp(path.join(os.tmpdir(), 'adp-sns-cert-'));
    const keyFile = path.join(tlsDir, 'key.pem');
    const certFile = path.join(tlsDir, 'cert.pem');
    execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', keyFile, '-out', certFile, '-days', '2', '-subj', '/CN=sns.test'], { stdio: 'ignore' });
    privateKey = await readFile(keyFile, 'utf8');
    certificate = await readFile(certFile, 'utf8');
    server = http.createServer((request, response) => {
      hits.push(request.url ?? '');
      if (request.url === '/SimpleNotificationService-test.pem') {
        response.writeHead(200, { 'content-type': 'application/x-pem-file' }).end(certificate);
      } else if (request.url?.startsWith('/confirm')) {
        response.writeHead(200, { 'content-type': 'text/xml' }).end('<ConfirmSubscriptionResponse/>');
      } else response.writeHead(404).end();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await rm(tlsDir, { recursive: true, force: true });
  });

  let fake: FakeMeteringService;
  let dataDir: string;
  let store: Store;
  let app: FastifyInstance;
  let nowMs: number;

  beforeEach(async () => {
    hits.length = 0;
    // The certificate is valid from the real now; the clock stays just after it.
    nowMs = Date.now() + 60_000;
    fake = await startFakeMeteringService();
    dataDir = await mkdtemp(path.join(os.tmpdir(), 'adp-sns-'));
    store = await openEmbeddedStore({ dataDir, now: () => new Date(nowMs) });
    const config = loadConfig({
      DATA_DIR: dataDir,
      LOG_LEVEL: 'silent',
      MARKETPLACE_PRODUCT_CODE: PRODUCT_CODE,
      MARKETPLACE_ENDPOINT: fake.url,
      MARKETPLACE_EXPORT_SCHEDULE: 'false',
      MARKETPLACE_SNS_TOPIC_ARN: TOPIC,
      MARKETPLACE_SNS_HOST_PATTERN: '127\\.0\\.0\\.1:\\d+',
    });
    app = await buildApp(config, {
      store: sharedStoreView(store),
      marketplaceClient: fake.client(),
      nowMs: () => nowMs,
    });
  });
  afterEach(async () => {
    await app.close();
    await store.close();
    await fake.close();
    await rm(dataDir, { recursive: true, force: true });
  });

  /** The canonical string of SNS's documentation, written here independently of the service's. */
  const canonical = (fields: Record<string, string>) => {
    const names =
      fields['Type'] === 'Notification'
        ? ['Message', 'MessageId', 'Subject', 'Timestamp', 'TopicArn', 'Type']
        : ['Message', 'MessageId', 'SubscribeURL', 'Timestamp', 'Token', 'TopicArn', 'Type'];
    return names.filter((name) => fields[name] !== undefined).map((name) => `${name}\n${fields[name] ?? ''}\n`).join('');
  };
  const signed = (fields: Record<string, string>, version: '1' | '2' = '1') => {
    const message = { TopicArn: TOPIC, MessageId: `m-${Math.random().toString(36).slice(2)}`, Timestamp: new Date(nowMs).toISOString(), ...fields };
    const signer = createSign(version === '1' ? 'RSA-SHA1' : 'RSA-SHA256');
    signer.update(canonical(message));
    return { ...message, SignatureVersion: version, Signature: signer.sign(privateKey, 'base64'), SigningCertURL: `${base}/SimpleNotificationService-test.pem` };
  };
  const notification = (action: string, customer: Record<string, string>, version: '1' | '2' = '2') =>
    signed({ Type: 'Notification', Message: JSON.stringify({ action, 'product-code': PRODUCT_CODE, ...customer }) }, version);
  const post = (body: unknown, contentType = 'text/plain; charset=UTF-8') =>
    app.inject({ method: 'POST', url: '/marketplace/notifications', headers: { 'content-type': contentType }, payload: typeof body === 'string' ? body : JSON.stringify(body) });
  const subscribe = async (customerIdentifier: string) => {
    const token = `token-${customerIdentifier}-${Math.random().toString(36).slice(2)}`;
    fake.tokens.set(token, { CustomerIdentifier: customerIdentifier, ProductCode: PRODUCT_CODE });
    const page = await app.inject({ method: 'GET', url: `/marketplace/landing?x-cloud-marketplace-token=${token}` });
    const organization = await store.findOrganizationByExternalId(`aws:${customerIdentifier}`);
    return { status: page.statusCode, orgId: organization?.id ?? '', key: /svc_live_[A-Za-z0-9_-]+/.exec(page.body)?.[0] ?? null };
  };

  it('confirms a signed subscription by fetching its SubscribeURL, and caches the certificate', async () => {
    const confirmation = signed({ Type: 'SubscriptionConfirmation', Message: 'You have chosen to subscribe', Token: 'tok-1', SubscribeURL: `${base}/confirm?Token=tok-1` });
    const answer = await post(confirmation);
    expect(answer.statusCode, answer.body).toBe(200);
    expect(hits.filter((hit) => hit.startsWith('/confirm'))).toEqual(['/confirm?Token=tok-1']);
    expect((await post(notification('entitlement-updated', { 'customer-identifier': 'cust-x' }, '1'))).statusCode).toBe(200);
    expect(hits.filter((hit) => hit.endsWith('.pem'))).toHaveLength(1);
  });

  it('refuses a SubscribeURL outside the allowed hosts without fetching it', async () => {
    const confirmation = signed({ Type: 'SubscriptionConfirmation', Message: 'm', Token: 't', SubscribeURL: 'https://evil.example/confirm?Token=t' });
    const answer = await post(confirmation);
    expect(answer.statusCode).toBe(403);
    expect(answer.json()).toMatchObject({ error: { code: 'SnsSignatureInvalid' } });
    expect(hits.filter((hit) => hit.startsWith('/confirm'))).toEqual([]);
  });

  it('refuses forged, unsigned, foreign and malformed messages in our shape, and processes none', async () => {
    const { orgId, key } = await subscribe('cust-forged');
    const genuine = notification('unsubscribe-success', { 'customer-identifier': 'cust-forged' });
    const refusals: [unknown, number, string][] = [
      [{ ...genuine, Message: JSON.stringify({ action: 'unsubscribe-success', 'customer-identifier': 'cust-other' }) }, 403, 'SnsSignatureInvalid'],
      [{ ...genuine, Signature: Buffer.from('not a signature').toString('base64') }, 403, 'SnsSignatureInvalid'],
      [{ ...genuine, SignatureVersion: '3' }, 403, 'SnsSignatureInvalid'],
      [{ ...genuine, SigningCertURL: 'https://evil.example/SimpleNotificationService-test.pem' }, 403, 'SnsSignatureInvalid'],
      [{ ...genuine, SigningCertURL: `${base}/elsewhere.txt` }, 403, 'SnsSignatureInvalid'],
      [{ ...genuine, TopicArn: 'arn:aws:sns:us-east-1:123456789012:someone-else' }, 403, 'SnsSignatureInvalid'],
      [Object.fromEntries(Object.entries(genuine).filter(([name]) => name !== 'Signature')), 400, 'SnsMessageInvalid'],
      ['{not json', 400, 'SnsMessageInvalid'],
      [{ ...genuine, Type: 'Surprise' }, 400, 'SnsMessageInvalid'],
      [notification('subscribe-maybe', { 'customer-identifier': 'cust-forged' }), 400, 'SnsMessageInvalid'],
    ];
    for (const [body, status, code] of refusals) {
      const answer = await post(body);
      expect(answer.statusCode, answer.body).toBe(status);
      expect(answer.json()).toMatchObject({ error: { code, message: expect.any(String) } });
    }
    expect(fake.calls.filter((call) => call.operation === 'BatchMeterUsage')).toEqual([]);
    expect((await store.listApiKeys(orgId)).every((record) => record.revokedAt === null)).toBe(true);
    expect((await app.inject({ method: 'GET', url: '/v1/usage/summary', headers: { 'x-service-key': key ?? '' } })).statusCode).toBe(200);
  });

  it('runs the final metering on unsubscribe-pending: open finished hours and the current hour so far', async () => {
    const { orgId } = await subscribe('cust-leaving');
    const current = Math.floor(nowMs / HOUR_MS) * HOUR_MS;
    const previous = current - HOUR_MS;
    const count = (hourMs: number, calls: number) =>
      Promise.all(Array.from({ length: calls }, (_, i) => store.metering?.countCall(orgId, 'stream_api_calls', new Date(hourMs + (i % 30)))));
    await count(previous, 1_000);
    await count(current, 2_000);
    const answer = await post(notification('unsubscribe-pending', { 'customer-identifier': 'cust-leaving' }));
    expect(answer.statusCode, answer.body).toBe(200);
    expect(fake.billed.get(`cust-leaving|stream_api_calls|${new Date(previous).toISOString()}`)).toBe(1);
    expect(fake.billed.get(`cust-leaving|stream_api_calls|${new Date(current).toISOString()}`)).toBe(2);
    // A second delivery of the same notification bills nothing again.
    const sends = fake.calls.length;
    expect((await post(notification('unsubscribe-pending', { 'customer-identifier': 'cust-leaving' }))).statusCode).toBe(200);
    expect(fake.calls.slice(sends).filter((call) => call.operation === 'BatchMeterUsage')).toEqual([]);
  });

  it('revokes the keys on unsubscribe-success after the final metering; a later landing issues a new key', async () => {
    const { orgId, key } = await subscribe('cust-gone');
    await store.metering?.countCall(orgId, 'batch_api_calls', new Date(nowMs));
    const answer = await post(notification('unsubscribe-success', { 'customer-identifier': 'cust-gone' }, '1'));
    expect(answer.statusCode, answer.body).toBe(200);
    const current = Math.floor(nowMs / HOUR_MS) * HOUR_MS;
    expect((await store.metering?.ledger(current, current + HOUR_MS))?.some((entry) => entry.orgId === orgId)).toBe(true);
    expect((await store.listApiKeys(orgId)).every((record) => record.revokedAt !== null)).toBe(true);
    expect((await app.inject({ method: 'GET', url: '/v1/usage/summary', headers: { 'x-service-key': key ?? '' } })).statusCode).toBe(401);
    const again = await subscribe('cust-gone');
    expect(again.status).toBe(200);
    expect(again.key).not.toBeNull();
    expect(again.key).not.toBe(key);
  });

  it('answers 503 and revokes nothing when the final metering cannot be sent', async () => {
    const { orgId } = await subscribe('cust-retry');
    await Promise.all(Array.from({ length: 1_000 }, () => store.metering?.countCall(orgId, 'batch_api_calls', new Date(nowMs))));
    fake.failWith = { type: 'InternalServiceErrorException', status: 500 };
    const answer = await post(notification('unsubscribe-success', { 'customer-identifier': 'cust-retry' }));
    expect(answer.statusCode).toBe(503);
    expect(answer.json()).toMatchObject({ error: { code: 'MarketplaceUnavailable' } });
    expect((await store.listApiKeys(orgId)).every((record) => record.revokedAt === null)).toBe(true);
  });
});
