import { parseDomain } from '@switchboard/core';

const DEFAULT_PORTS: Readonly<Record<string, string>> = {
  'http:': '80',
  'https:': '443',
  'ws:': '80',
  'wss:': '443',
};

/**
 * Allowed domains (docs/protocol.md, "Origin"): an empty list allows any origin; a request
 * without `Origin` is a server-side client and is allowed; otherwise the origin's host must equal
 * a listed domain or be a subdomain of one, and when the domain names a port, the origin's port
 * (explicit, or its scheme's default) must be that port. An unparsable origin is refused.
 */
export function isOriginAllowed(origin: string, domains: readonly string[]): boolean {
  if (domains.length === 0 || origin === '') return true;
  let url: URL;
  try {
    url = new URL(origin);
  } catch {
    return false;
  }
  const host = url.hostname.toLowerCase();
  if (!host) return false;
  const port = url.port || DEFAULT_PORTS[url.protocol];
  return domains.some((entry) => {
    // Records stored before domains were validated may still say `*.example.com`.
    const domain = parseDomain(entry.trim().replace(/^\*\./, ''));
    if (!domain) return false;
    if (domain.port !== undefined && String(domain.port) !== port) return false;
    return host === domain.host || host.endsWith(`.${domain.host}`);
  });
}
