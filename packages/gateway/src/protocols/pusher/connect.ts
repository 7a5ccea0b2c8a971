import { SUPPORTED_PROTOCOL_VERSIONS } from './codes';

/**
 * The Pusher connection URL (docs/pusher.md, "Connecting"): `/app/{key}?protocol=7&client=…&version=…`.
 * `client` and `version` describe the client library (`js`, `8.4.0`); they are kept for logs,
 * bounded, and never refused.
 */

export const APP_PATH_PREFIX = '/app/';

/** The app key of a connection path, or undefined when the path is not `/app/{key}`. */
export function appKeyOfPath(path: string): string | undefined {
  if (!path.startsWith(APP_PATH_PREFIX)) return undefined;
  const key = path.slice(APP_PATH_PREFIX.length);
  if (key === '' || key.includes('/') || key.length > 256) return undefined;
  try {
    return decodeURIComponent(key);
  } catch {
    return undefined;
  }
}

export interface ConnectQuery {
  readonly protocol: number;
  /** The client library (`js`…), at most 64 characters, or '' when not sent. */
  readonly client: string;
  /** Its version, at most 64 characters, or '' when not sent. */
  readonly version: string;
}

const bound = (value: string | null): string => (value ?? '').slice(0, 64);

/**
 * The query of a connection URL, or the text of the 4007 refusal naming the problem: `protocol`
 * missing or not one this server speaks (Pusher would fall back to the long-retired protocol 1).
 */
export function parseConnectQuery(query: string): ConnectQuery | { readonly refusal: string } {
  const params = new URLSearchParams(query);
  const text = params.get('protocol');
  const supported = SUPPORTED_PROTOCOL_VERSIONS.join(', ');
  if (text === null) return { refusal: `Unsupported protocol version: none given (supported: ${supported})` };
  const protocol = /^\d{1,3}$/.test(text) ? Number(text) : NaN;
  if (!SUPPORTED_PROTOCOL_VERSIONS.includes(protocol))
    return { refusal: `Unsupported protocol version: ${text.slice(0, 16)} (supported: ${supported})` };
  return { protocol, client: bound(params.get('client')), version: bound(params.get('version')) };
}
