import { AppError } from '../errors';

/**
 * Allowed domains of an API key (docs/protocol.md, "Allowed domains"). A domain is a host as
 * browsers send it in `Origin`: a DNS name, an IPv4 address or a bracketed IPv6 address,
 * optionally with `:port`. It allows that host and its subdomains; with a port, on that port
 * only, without one, on any port. Every entry point (CLI, `SWITCHBOARD_KEYS`, the key stores)
 * refuses anything else with `domainProblem`'s text, so a typo fails loudly instead of refusing
 * every browser.
 */
export interface Domain {
  /** Lower-case host; IPv6 keeps its brackets, as `URL.hostname` does. */
  readonly host: string;
  /** `undefined` allows any port. */
  readonly port: number | undefined;
}

export const DOMAIN_RULE = 'a host such as example.com or example.com:8443';

const LABEL = /^(?!-)[a-z0-9-]{1,63}(?<!-)$/;
const IPV6 = /^\[[0-9a-f:.]+\]$/;

/** Why `value` is not a domain, naming it, or `undefined` when it is one. */
export function domainProblem(value: unknown): string | undefined {
  if (typeof value !== 'string') return `domain ${JSON.stringify(value) ?? String(value)} is not a string`;
  const refuse = (why: string): string => `"${value}" is not a domain: ${why}; give ${DOMAIN_RULE}`;
  if (value === '') return `an empty domain is not allowed; give ${DOMAIN_RULE}`;
  if (/\s/.test(value)) return refuse('it contains whitespace');
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(value)) return refuse('drop the scheme (https:// …)');
  if (/[/?#]/.test(value)) return refuse('drop the path, query or fragment');
  if (value.includes('*')) return refuse('no wildcards (a domain already allows its subdomains)');
  if (value.includes('@')) return refuse('no user name');
  return parseDomain(value) ? undefined : refuse('not a valid host name or port');
}

/** The host and port of a valid domain, lower-cased; `undefined` for anything `domainProblem` refuses. */
export function parseDomain(value: string): Domain | undefined {
  const text = value.toLowerCase();
  const match = /^(\[[^\]]*\]|[^:]*)(?::(\d{1,5}))?$/.exec(text);
  if (!match) return undefined;
  const host = match[1] ?? '';
  const port = match[2] === undefined ? undefined : Number(match[2]);
  if (port !== undefined && (port < 1 || port > 65535)) return undefined;
  if (host.startsWith('[')) return IPV6.test(host) ? { host, port } : undefined;
  if (host.length === 0 || host.length > 253) return undefined;
  return host.split('.').every((label) => LABEL.test(label)) ? { host, port } : undefined;
}

/** A valid domain in its stored form (lower case); throws `InvalidDomainError` with `domainProblem`'s text. */
export function normalizeDomain(value: string): string {
  const problem = domainProblem(value);
  if (problem) throw new InvalidDomainError(problem);
  return value.toLowerCase();
}

/** A 400 where it reaches an HTTP client. */
export class InvalidDomainError extends AppError {
  constructor(message: string) {
    super('SB_INVALID_FIELD', message);
    this.name = 'InvalidDomainError';
  }
}
