// The marketplace variables: off without a product code, defaults, and each refusal naming its variable.
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config.js';
import { ConfigError } from '../src/errors.js';

function configError(env: Record<string, string>): ConfigError {
  try {
    loadConfig(env);
  } catch (err) {
    if (err instanceof ConfigError) return err;
    throw err;
  }
  throw new Error('expected a ConfigError');
}

describe('marketplace configuration', () => {
  it('is off without MARKETPLACE_PRODUCT_CODE (an empty one included)', () => {
    expect(loadConfig({}).marketplace).toBeUndefined();
    expect(loadConfig({ MARKETPLACE_PRODUCT_CODE: ' ', MARKETPLACE_REGION: 'eu-west-1' }).marketplace).toBeUndefined();
  });

  it('reads the product code with the defaults', () => {
    expect(loadConfig({ MARKETPLACE_PRODUCT_CODE: 'abc123prod' }).marketplace).toEqual({
      productCode: 'abc123prod',
      region: 'us-east-1',
      endpoint: undefined,
      timeoutMs: 10_000,
      exportSchedule: true,
      exportDelayMs: 300_000,
      snsTopicArn: undefined,
      snsHostPattern: undefined,
    });
  });

  it('reads every variable', () => {
    const config = loadConfig({
      MARKETPLACE_PRODUCT_CODE: 'abc123prod',
      MARKETPLACE_REGION: 'eu-central-1',
      MARKETPLACE_ENDPOINT: 'http://127.0.0.1:4566',
      MARKETPLACE_TIMEOUT_MS: '100',
      MARKETPLACE_EXPORT_SCHEDULE: 'false',
      MARKETPLACE_EXPORT_DELAY_S: '30',
      MARKETPLACE_SNS_TOPIC_ARN: 'arn:aws:sns:us-east-1:123456789012:aws-mp-subscription-notification-prod',
      MARKETPLACE_SNS_HOST_PATTERN: '127\\.0\\.0\\.1:\\d+',
    });
    expect(config.marketplace).toEqual({
      productCode: 'abc123prod',
      region: 'eu-central-1',
      endpoint: 'http://127.0.0.1:4566',
      timeoutMs: 100,
      exportSchedule: false,
      exportDelayMs: 30_000,
      snsTopicArn: 'arn:aws:sns:us-east-1:123456789012:aws-mp-subscription-notification-prod',
      snsHostPattern: /^(?:127\.0\.0\.1:\d+)$/,
    });
    expect(loadConfig({ MARKETPLACE_PRODUCT_CODE: 'p', MARKETPLACE_ENDPOINT: 'https://metering.example.com' }).marketplace?.endpoint).toBe(
      'https://metering.example.com',
    );
  });

  it.each([
    ['MARKETPLACE_PRODUCT_CODE', { MARKETPLACE_PRODUCT_CODE: 'abc-123' }],
    ['MARKETPLACE_PRODUCT_CODE', { MARKETPLACE_PRODUCT_CODE: 'a'.repeat(256) }],
    // An endpoint alone is a half-configured listing, not "off".
    ['MARKETPLACE_PRODUCT_CODE', { MARKETPLACE_ENDPOINT: 'http://127.0.0.1:4566' }],
    ['MARKETPLACE_REGION', { MARKETPLACE_PRODUCT_CODE: 'p', MARKETPLACE_REGION: 'US_EAST_1' }],
    ['MARKETPLACE_ENDPOINT', { MARKETPLACE_PRODUCT_CODE: 'p', MARKETPLACE_ENDPOINT: 'not a url' }],
    // Answers read in clear text from another host could be forged on the way.
    ['MARKETPLACE_ENDPOINT', { MARKETPLACE_PRODUCT_CODE: 'p', MARKETPLACE_ENDPOINT: 'http://10.0.0.1:4566' }],
    ['MARKETPLACE_TIMEOUT_MS', { MARKETPLACE_PRODUCT_CODE: 'p', MARKETPLACE_TIMEOUT_MS: '99' }],
    ['MARKETPLACE_TIMEOUT_MS', { MARKETPLACE_PRODUCT_CODE: 'p', MARKETPLACE_TIMEOUT_MS: '60001' }],
    ['MARKETPLACE_EXPORT_SCHEDULE', { MARKETPLACE_PRODUCT_CODE: 'p', MARKETPLACE_EXPORT_SCHEDULE: 'yes' }],
    ['MARKETPLACE_EXPORT_DELAY_S', { MARKETPLACE_PRODUCT_CODE: 'p', MARKETPLACE_EXPORT_DELAY_S: '29' }],
    ['MARKETPLACE_EXPORT_DELAY_S', { MARKETPLACE_PRODUCT_CODE: 'p', MARKETPLACE_EXPORT_DELAY_S: '1801' }],
    ['MARKETPLACE_SNS_TOPIC_ARN', { MARKETPLACE_PRODUCT_CODE: 'p', MARKETPLACE_SNS_TOPIC_ARN: 'arn:aws:sqs:us-east-1:123456789012:q' }],
    ['MARKETPLACE_SNS_HOST_PATTERN', { MARKETPLACE_PRODUCT_CODE: 'p', MARKETPLACE_SNS_HOST_PATTERN: '(' }],
  ])('refuses a bad %s', (variable, env) => {
    expect(configError(env).variable).toBe(variable);
  });
});
