/**
 * Allowed domains (SPEC §6): an empty list allows any origin; a request without `Origin` is a
 * server-side client and is allowed; otherwise the origin's host must equal a listed domain or be
 * a subdomain of one. Ports and schemes are ignored; an unparsable origin is refused.
 */
export function isOriginAllowed(origin: string, domains: readonly string[]): boolean {
  if (domains.length === 0 || origin === '') return true;
  let host: string;
  try {
    host = new URL(origin).hostname.toLowerCase();
  } catch {
    return false;
  }
  if (!host) return false;
  return domains.some((entry) => {
    const domain = entry.trim().toLowerCase().replace(/^\*\./, '');
    return host === domain || host.endsWith(`.${domain}`);
  });
}
