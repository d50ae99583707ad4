// The cloud marketplace's metering service, through the AWS SDK: the client the app uses, and
// ResolveCustomer turned into a customer or one of our coded errors.
import {
  ExpiredTokenException,
  InvalidTokenException,
  MarketplaceMeteringClient,
  ResolveCustomerCommand,
} from '@aws-sdk/client-marketplace-metering';
import type { MarketplaceConfig } from '../config.js';
import { AppError, ERRORS } from '../errors.js';

export { MarketplaceMeteringClient };

/** Static credentials instead of the SDK's chain (tests against a local stand-in). */
export interface MarketplaceCredentials {
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
}

/** Longest registration token passed on; real ones are a few hundred characters. */
export const MAX_TOKEN_LENGTH = 4096;

/**
 * A client for MARKETPLACE_REGION (and MARKETPLACE_ENDPOINT when set). Credentials come the SDK's
 * usual ways unless given. One retry only: a subscriber is waiting on the landing page.
 */
export function createMeteringClient(config: Pick<MarketplaceConfig, 'region' | 'endpoint' | 'timeoutMs'>, credentials?: MarketplaceCredentials): MarketplaceMeteringClient {
  return new MarketplaceMeteringClient({
    region: config.region,
    ...(config.endpoint === undefined ? {} : { endpoint: config.endpoint }),
    ...(credentials === undefined ? {} : { credentials }),
    maxAttempts: 2,
    requestHandler: { connectionTimeout: config.timeoutMs, requestTimeout: config.timeoutMs },
  });
}

export interface MarketplaceCustomer {
  /** The marketplace's id of the subscriber (stable per customer and product). */
  readonly customerIdentifier: string | null;
  /** The subscriber's AWS account id, which newer metering calls identify the customer by. */
  readonly customerAwsAccountId: string | null;
  /** The subscriber's license (agreement), which newer metering calls send instead of the product code. */
  readonly licenseArn: string | null;
  readonly productCode: string;
}

/**
 * The customer a registration token stands for. Throws MarketplaceTokenInvalid for a token the
 * marketplace calls invalid or expired, MarketplaceUnavailable for anything else that keeps it
 * from answering (network, throttling, outage, our credentials).
 */
export async function resolveCustomer(client: MarketplaceMeteringClient, token: string): Promise<MarketplaceCustomer> {
  let output;
  try {
    output = await client.send(new ResolveCustomerCommand({ RegistrationToken: token }));
  } catch (cause) {
    if (cause instanceof InvalidTokenException || cause instanceof ExpiredTokenException) {
      throw new AppError(ERRORS.MarketplaceTokenInvalid, 'The marketplace refused this registration token (invalid or expired).', { cause });
    }
    throw new AppError(ERRORS.MarketplaceUnavailable, 'The marketplace could not resolve the registration token.', { cause });
  }
  const customerIdentifier = nonEmpty(output.CustomerIdentifier);
  const customerAwsAccountId = nonEmpty(output.CustomerAWSAccountId);
  const productCode = nonEmpty(output.ProductCode);
  if ((customerIdentifier === null && customerAwsAccountId === null) || productCode === null) {
    throw new AppError(ERRORS.MarketplaceUnavailable, 'The marketplace answered without a customer or product.');
  }
  return { customerIdentifier, customerAwsAccountId, licenseArn: nonEmpty(output.LicenseArn), productCode };
}

function nonEmpty(value: string | undefined): string | null {
  return value === undefined || value === '' ? null : value;
}
