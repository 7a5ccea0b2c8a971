import { lookup as dnsLookup } from 'node:dns';
import type { LookupAddress, LookupOptions } from 'node:dns';
import { BlockList, isIP } from 'node:net';

/**
 * The addresses `WEBHOOK_DENY_PRIVATE` refuses (docs/security.md, "Webhooks and SSRF"): every range
 * that is not a public unicast address on the Internet. IPv4-mapped IPv6 addresses
 * (`::ffff:10.0.0.1`) are checked against the IPv4 ranges by `BlockList` itself.
 */
const PRIVATE_RANGES: ReadonlyArray<readonly [string, number, 'ipv4' | 'ipv6']> = [
  ['0.0.0.0', 8, 'ipv4'], // "this network"
  ['10.0.0.0', 8, 'ipv4'], // RFC 1918
  ['100.64.0.0', 10, 'ipv4'], // carrier-grade NAT (RFC 6598)
  ['127.0.0.0', 8, 'ipv4'], // loopback
  ['169.254.0.0', 16, 'ipv4'], // link-local, cloud metadata services (169.254.169.254)
  ['172.16.0.0', 12, 'ipv4'], // RFC 1918
  ['192.0.0.0', 24, 'ipv4'], // IETF protocol assignments
  ['192.0.2.0', 24, 'ipv4'], // documentation
  ['192.168.0.0', 16, 'ipv4'], // RFC 1918
  ['198.18.0.0', 15, 'ipv4'], // benchmarking
  ['198.51.100.0', 24, 'ipv4'], // documentation
  ['203.0.113.0', 24, 'ipv4'], // documentation
  ['224.0.0.0', 4, 'ipv4'], // multicast
  ['240.0.0.0', 4, 'ipv4'], // reserved, broadcast
  ['::', 128, 'ipv6'], // unspecified
  ['::1', 128, 'ipv6'], // loopback
  ['64:ff9b::', 96, 'ipv6'], // NAT64: reaches IPv4 addresses, private ones included
  ['64:ff9b:1::', 48, 'ipv6'], // local-use NAT64
  ['100::', 64, 'ipv6'], // discard
  ['2001:db8::', 32, 'ipv6'], // documentation
  ['fc00::', 7, 'ipv6'], // unique local (ULA)
  ['fe80::', 10, 'ipv6'], // link-local
  ['fec0::', 10, 'ipv6'], // site-local (deprecated)
  ['ff00::', 8, 'ipv6'], // multicast
];

const blocked = new BlockList();
for (const [network, prefix, family] of PRIVATE_RANGES) blocked.addSubnet(network, prefix, family);

/** Whether `address` (an IP address literal) is loopback, link-local, private or otherwise not public. */
export function isPrivateAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 0) return false;
  return blocked.check(address, family === 4 ? 'ipv4' : 'ipv6');
}

/** A URL's hostname as an IP address literal (IPv6 without its brackets), or undefined for a name. */
function addressLiteral(hostname: string): string | undefined {
  const bare = hostname.startsWith('[') && hostname.endsWith(']') ? hostname.slice(1, -1) : hostname;
  return isIP(bare) ? bare : undefined;
}

/** Names that always mean this machine, whatever DNS says (RFC 6761). */
const isLocalName = (hostname: string): boolean => {
  const name = hostname.toLowerCase().replace(/\.$/, '');
  return name === 'localhost' || name.endsWith('.localhost');
};

/**
 * Why `WEBHOOK_DENY_PRIVATE` refuses the webhook URL `url`, judged without DNS: a private
 * address literal or a `localhost` name; undefined when it may be set (a name is checked again on
 * every connection, on the addresses it resolves to).
 */
export function privateWebhookUrlProblem(url: string): string | undefined {
  let hostname: string;
  try {
    hostname = new URL(url).hostname;
  } catch {
    return undefined; // not a URL: the URL check names that problem
  }
  const literal = addressLiteral(hostname);
  if ((literal !== undefined && isPrivateAddress(literal)) || isLocalName(hostname)) {
    return `webhook URL ${url} points at a loopback, link-local or private address, which WEBHOOK_DENY_PRIVATE refuses`;
  }
  return undefined;
}

/**
 * `privateWebhookUrlProblem`, and for a name the addresses it resolves to now (the CLI's check
 * when a webhook is set; an unresolvable name is no problem here, delivery reports it).
 */
export async function resolvedWebhookUrlProblem(url: string): Promise<string | undefined> {
  const problem = privateWebhookUrlProblem(url);
  if (problem) return problem;
  const hostname = new URL(url).hostname;
  if (addressLiteral(hostname) !== undefined) return undefined;
  const addresses = await new Promise<LookupAddress[]>((resolve) =>
    dnsLookup(hostname, { all: true }, (error, found) => resolve(error ? [] : found)),
  );
  const inside = addresses.find((a) => isPrivateAddress(a.address));
  return inside
    ? `webhook URL ${url} resolves to ${inside.address}, a loopback, link-local or private address, which WEBHOOK_DENY_PRIVATE refuses`
    : undefined;
}

/** The error a connection to a private address fails with under `WEBHOOK_DENY_PRIVATE`. */
export class PrivateAddressError extends Error {
  readonly code = 'ERR_WEBHOOK_PRIVATE_ADDRESS';
  constructor(hostname: string, address: string) {
    super(
      `${hostname} resolves to ${address}, a loopback, link-local or private address (WEBHOOK_DENY_PRIVATE)`,
    );
    this.name = 'PrivateAddressError';
  }
}

type LookupCallback = (
  error: NodeJS.ErrnoException | null,
  address: string | LookupAddress[],
  family?: number,
) => void;

/**
 * A `lookup` for `net.connect` / `tls.connect` that fails when any address the name resolves to is
 * private: the check is on the addresses the socket is about to use, so a name that resolved to a
 * public address when the webhook was set and to a private one now (DNS rebinding) is refused.
 */
export function publicOnlyLookup(hostname: string, options: LookupOptions, callback: LookupCallback): void {
  dnsLookup(hostname, { ...options, all: true }, (error, addresses) => {
    if (error) {
      callback(error, options.all ? [] : '', 0);
      return;
    }
    const inside = addresses.find((a) => isPrivateAddress(a.address));
    if (inside) {
      callback(new PrivateAddressError(hostname, inside.address), options.all ? [] : '', 0);
      return;
    }
    if (options.all) callback(null, addresses);
    else callback(null, addresses[0]!.address, addresses[0]!.family);
  });
}

/** Whether a URL hostname is a private address literal (which `net.connect` never looks up). */
export function isPrivateLiteral(hostname: string): boolean {
  const literal = addressLiteral(hostname);
  return literal !== undefined && isPrivateAddress(literal);
}
