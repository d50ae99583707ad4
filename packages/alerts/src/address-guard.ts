// Where a webhook may point: http or https, and (unless private targets are allowed) a host whose
// every address is public unicast. The check runs on the resolved addresses, and a delivery
// connects to the address that was checked (no second lookup a DNS answer could change), so a
// name that resolves to 127.0.0.1, 10.x, 169.254.x or ::1 is refused however it is spelled.
import { lookup as dnsLookup } from 'node:dns/promises';
import ipaddr from 'ipaddr.js';

export const TARGET_REFUSALS = {
  /** Not an absolute http(s) URL, or it carries credentials. */
  invalid: 'WebhookUrlInvalid',
  /** The host resolves to a private, loopback, link-local or otherwise non-public address. */
  private: 'WebhookUrlForbidden',
  /** The host does not resolve. */
  unresolvable: 'WebhookUrlUnresolvable',
} as const;
export type TargetRefusalCode = (typeof TARGET_REFUSALS)[keyof typeof TARGET_REFUSALS];

export class TargetRefused extends Error {
  override name = 'TargetRefused';
  constructor(
    readonly code: TargetRefusalCode,
    message: string,
  ) {
    super(message);
  }
}

export interface ResolvedTarget {
  readonly url: URL;
  readonly address: string;
  readonly family: 4 | 6;
}

export type Lookup = (hostname: string) => Promise<readonly { address: string; family: number }[]>;

const defaultLookup: Lookup = (hostname) => dnsLookup(hostname, { all: true, verbatim: true });

/** Parses `text` as a webhook URL; throws TargetRefused(invalid) otherwise. */
export function parseTargetUrl(text: string): URL {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new TargetRefused(TARGET_REFUSALS.invalid, 'url must be an absolute http or https URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new TargetRefused(TARGET_REFUSALS.invalid, 'url must use http or https');
  if (url.username !== '' || url.password !== '') throw new TargetRefused(TARGET_REFUSALS.invalid, 'url must not carry credentials');
  if (url.hostname === '') throw new TargetRefused(TARGET_REFUSALS.invalid, 'url must name a host');
  return url;
}

/** Whether an address is public unicast (not private, loopback, link-local, multicast, reserved, ...). */
export function isPublicAddress(address: string): boolean {
  if (!ipaddr.isValid(address)) return false;
  // IPv4-mapped IPv6 addresses (::ffff:10.0.0.1) are judged as the IPv4 address they carry.
  return ipaddr.process(address).range() === 'unicast';
}

/** Resolves the URL's host and checks every address; the first is where a delivery connects. */
export async function resolveTarget(text: string, options: { allowPrivate: boolean; lookup?: Lookup; timeoutMs?: number }): Promise<ResolvedTarget> {
  const url = parseTargetUrl(text);
  const host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
  let addresses: readonly { address: string; family: number }[];
  if (ipaddr.isValid(host)) {
    addresses = [{ address: host, family: host.includes(':') ? 6 : 4 }];
  } else {
    const lookup = options.lookup ?? defaultLookup;
    const timeoutMs = options.timeoutMs ?? 5_000;
    let timer: NodeJS.Timeout | undefined;
    try {
      addresses = await Promise.race([
        lookup(host),
        new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(new Error(`no answer in ${timeoutMs} ms`)), timeoutMs);
        }),
      ]);
    } catch (err) {
      throw new TargetRefused(TARGET_REFUSALS.unresolvable, `host ${host} does not resolve (${err instanceof Error ? err.message : String(err)})`);
    } finally {
      clearTimeout(timer);
    }
  }
  const first = addresses[0];
  if (first === undefined) throw new TargetRefused(TARGET_REFUSALS.unresolvable, `host ${host} has no address`);
  if (!options.allowPrivate) {
    const blocked = addresses.find((a) => !isPublicAddress(a.address));
    if (blocked) {
      throw new TargetRefused(
        TARGET_REFUSALS.private,
        `host ${host} resolves to ${blocked.address}, a private, loopback or link-local address (set WEBHOOK_ALLOW_PRIVATE=true to allow)`,
      );
    }
  }
  return { url, address: first.address, family: first.family === 6 ? 6 : 4 };
}
