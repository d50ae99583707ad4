// Amazon SNS messages posted to our HTTP(S) endpoint: parsed, and their signature verified before
// anything is done with them. SNS signs the canonical string its documentation defines ("Verifying
// the signatures of Amazon SNS messages"): for a Notification the fields Message, MessageId,
// Subject (when present), Timestamp, TopicArn and Type; for a (Un)SubscriptionConfirmation
// Message, MessageId, SubscribeURL, Timestamp, Token, TopicArn and Type; each as its name, a
// newline, its value and a newline, in that order. SignatureVersion 1 is RSA with SHA1, 2 RSA with
// SHA256. The certificate is fetched from SigningCertURL, which must be an https URL on the SNS
// host of the topic's region (`sns.<region>.amazonaws.com`); certificates are cached by URL.
import { X509Certificate, verify } from 'node:crypto';
import { AppError, ERRORS } from '../errors.js';

export const SNS_MESSAGE_TYPES = ['Notification', 'SubscriptionConfirmation', 'UnsubscribeConfirmation'] as const;
export type SnsMessageType = (typeof SNS_MESSAGE_TYPES)[number];

export interface SnsMessage {
  readonly Type: SnsMessageType;
  readonly MessageId: string;
  readonly TopicArn: string;
  readonly Message: string;
  readonly Timestamp: string;
  readonly SignatureVersion: '1' | '2';
  readonly Signature: string;
  readonly SigningCertURL: string;
  readonly Subject?: string;
  readonly Token?: string;
  readonly SubscribeURL?: string;
}

/** Longest certificate read from SigningCertURL. */
const MAX_CERTIFICATE_BYTES = 16 * 1024;
/** Certificates kept (SNS rotates them rarely; one or two per region in use). */
const MAX_CACHED_CERTIFICATES = 16;
const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]']);

function text(body: Record<string, unknown>, field: string, required: boolean): string | undefined {
  const value = body[field];
  if (value === undefined && !required) return undefined;
  if (typeof value !== 'string' || value === '') throw new AppError(ERRORS.SnsMessageInvalid, `The SNS message has no ${field}.`);
  return value;
}

/** The SNS message in a request body (a JSON text, as SNS posts it, or parsed JSON). */
export function parseSnsMessage(body: unknown): SnsMessage {
  let parsed: unknown = body;
  if (typeof body === 'string') {
    try {
      parsed = JSON.parse(body);
    } catch {
      throw new AppError(ERRORS.SnsMessageInvalid, 'The body is not an SNS message (not JSON).');
    }
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
    throw new AppError(ERRORS.SnsMessageInvalid, 'The body is not an SNS message (not a JSON object).');
  }
  const fields = parsed as Record<string, unknown>;
  const type = text(fields, 'Type', true);
  if (!SNS_MESSAGE_TYPES.includes(type as SnsMessageType)) throw new AppError(ERRORS.SnsMessageInvalid, `SNS message type ${JSON.stringify(type)} is not handled.`);
  const version = text(fields, 'SignatureVersion', true);
  if (version !== '1' && version !== '2') throw new AppError(ERRORS.SnsSignatureInvalid, `SNS signature version ${JSON.stringify(version)} is not supported.`);
  const confirmation = type !== 'Notification';
  const optional = (field: string, required: boolean) => {
    const value = text(fields, field, required);
    return value === undefined ? {} : { [field]: value };
  };
  return {
    Type: type as SnsMessageType,
    MessageId: text(fields, 'MessageId', true) ?? '',
    TopicArn: text(fields, 'TopicArn', true) ?? '',
    Message: text(fields, 'Message', true) ?? '',
    Timestamp: text(fields, 'Timestamp', true) ?? '',
    SignatureVersion: version,
    Signature: text(fields, 'Signature', true) ?? '',
    SigningCertURL: text(fields, 'SigningCertURL', true) ?? '',
    ...optional('Subject', false),
    ...optional('Token', confirmation),
    ...optional('SubscribeURL', confirmation),
  };
}

/** The string SNS signed for this message. */
export function canonicalString(message: SnsMessage): string {
  const fields: readonly (keyof SnsMessage)[] =
    message.Type === 'Notification'
      ? ['Message', 'MessageId', 'Subject', 'Timestamp', 'TopicArn', 'Type']
      : ['Message', 'MessageId', 'SubscribeURL', 'Timestamp', 'Token', 'TopicArn', 'Type'];
  return fields
    .filter((field) => message[field] !== undefined)
    .map((field) => `${field}\n${String(message[field])}\n`)
    .join('');
}

/** The region of a topic ARN (`arn:<partition>:sns:<region>:<account>:<name>`); null when not one. */
export function topicRegion(topicArn: string): string | null {
  return /^arn:aws[a-z-]*:sns:([a-z]{2}(?:-[a-z]+)+-\d{1,2}):\d{12}:[A-Za-z0-9_.-]+$/.exec(topicArn)?.[1] ?? null;
}

/**
 * Whether `url` is one SNS would send for this topic: https on `sns.<region>.amazonaws.com`
 * (`.amazonaws.com.cn` in China), or, with `hostPattern`, a host (and port) it matches, https or
 * http on a loopback host.
 */
export function trustedSnsUrl(url: string, topicArn: string, hostPattern: RegExp | undefined): URL | null {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return null;
  }
  if (parsed.username !== '' || parsed.password !== '') return null;
  if (hostPattern !== undefined) {
    const secure = parsed.protocol === 'https:' || (parsed.protocol === 'http:' && LOOPBACK_HOSTS.has(parsed.hostname));
    return secure && hostPattern.test(parsed.host) ? parsed : null;
  }
  const region = topicRegion(topicArn);
  if (region === null || parsed.protocol !== 'https:' || parsed.port !== '') return null;
  const suffix = region.startsWith('cn-') ? 'amazonaws.com.cn' : 'amazonaws.com';
  return parsed.hostname === `sns.${region}.${suffix}` ? parsed : null;
}

export interface SnsVerifierOptions {
  readonly hostPattern: RegExp | undefined;
  readonly timeoutMs: number;
  readonly nowMs: () => number;
}

/** Verifies SNS signatures, fetching and caching the signing certificates. */
export class SnsVerifier {
  private readonly certificates = new Map<string, Promise<X509Certificate>>();

  constructor(private readonly options: SnsVerifierOptions) {}

  /** Throws SnsSignatureInvalid unless SNS signed this message with a certificate we trust. */
  async verify(message: SnsMessage): Promise<void> {
    const url = trustedSnsUrl(message.SigningCertURL, message.TopicArn, this.options.hostPattern);
    if (url === null || !url.pathname.endsWith('.pem')) {
      throw new AppError(ERRORS.SnsSignatureInvalid, 'The SNS signing certificate URL is not an SNS host of the topic\'s region.');
    }
    const certificate = await this.certificate(url.href);
    const now = this.options.nowMs();
    if (Date.parse(certificate.validFrom) > now || Date.parse(certificate.validTo) < now) {
      throw new AppError(ERRORS.SnsSignatureInvalid, 'The SNS signing certificate is not valid now.');
    }
    const algorithm = message.SignatureVersion === '1' ? 'sha1' : 'sha256';
    let valid = false;
    try {
      valid = verify(algorithm, Buffer.from(canonicalString(message), 'utf8'), certificate.publicKey, Buffer.from(message.Signature, 'base64'));
    } catch {
      valid = false;
    }
    if (!valid) throw new AppError(ERRORS.SnsSignatureInvalid, 'The SNS message signature does not verify.');
  }

  private certificate(url: string): Promise<X509Certificate> {
    const cached = this.certificates.get(url);
    if (cached !== undefined) return cached;
    const loading = this.fetchCertificate(url);
    if (this.certificates.size >= MAX_CACHED_CERTIFICATES) {
      const oldest = this.certificates.keys().next().value;
      if (oldest !== undefined) this.certificates.delete(oldest);
    }
    this.certificates.set(url, loading);
    // A failed fetch is not cached: the next message tries again.
    loading.catch(() => this.certificates.delete(url));
    return loading;
  }

  private async fetchCertificate(url: string): Promise<X509Certificate> {
    let pem: string;
    try {
      const response = await fetch(url, { redirect: 'error', signal: AbortSignal.timeout(this.options.timeoutMs) });
      if (!response.ok) throw new Error(`status ${response.status}`);
      const body = await response.arrayBuffer();
      if (body.byteLength > MAX_CERTIFICATE_BYTES) throw new Error('certificate too large');
      pem = Buffer.from(body).toString('utf8');
    } catch (cause) {
      throw new AppError(ERRORS.MarketplaceUnavailable, 'The SNS signing certificate could not be fetched.', { cause });
    }
    try {
      return new X509Certificate(pem);
    } catch (cause) {
      throw new AppError(ERRORS.SnsSignatureInvalid, 'The SNS signing certificate is not a certificate.', { cause });
    }
  }
}
