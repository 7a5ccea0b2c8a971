import { hash } from 'node:crypto';
import { constantTimeEqual, hmacHex } from './auth';
import { type PusherHttpError, badRequest, notFound, unauthorized } from './http-errors';
import { quote } from './result';

/**
 * Pusher HTTP API request signing (docs/pusher.md, "HTTP API"), checked the way the `pusher`
 * server SDKs sign: the query carries `auth_key`, `auth_timestamp` (Unix seconds), `auth_version`
 * (`1.0`), `body_md5` (hex MD5 of the raw body, when there is a body) and `auth_signature`, the hex
 * HMAC-SHA256, keyed by the app secret, of
 *
 *     <METHOD>\n<path>\n<every other query parameter as key=value, sorted by key, joined by &>
 *
 * with values unescaped (the SDKs sign the raw values) and the path exactly as requested.
 */

/** Pusher's window: a request signed more than 600 s before or after the server's clock is refused. */
export const AUTH_TIMESTAMP_WINDOW_SECONDS = 600;

/** Parameters longer than this are refused unread (no signed Pusher parameter comes near it). */
const MAX_QUERY_LENGTH = 8192;
const MAX_QUERY_PARAMETERS = 32;

/**
 * The query string (without `?`) as a map of unescaped values. `+` stays a plus sign: the SDKs
 * sign raw values and never write a space as `+`. A repeated parameter is refused, since the
 * signature could not say which one was meant.
 */
export function parseQuery(raw: string): Map<string, string> | PusherHttpError {
  const params = new Map<string, string>();
  if (raw === '') return params;
  if (raw.length > MAX_QUERY_LENGTH)
    return badRequest(`Query string longer than ${MAX_QUERY_LENGTH} characters`);
  const pairs = raw.split('&');
  if (pairs.length > MAX_QUERY_PARAMETERS)
    return badRequest(`More than ${MAX_QUERY_PARAMETERS} query parameters`);
  for (const pair of pairs) {
    if (pair === '') continue;
    const eq = pair.indexOf('=');
    let key: string;
    let value: string;
    try {
      key = decodeURIComponent(eq < 0 ? pair : pair.slice(0, eq)).toLowerCase();
      value = eq < 0 ? '' : decodeURIComponent(pair.slice(eq + 1));
    } catch {
      return badRequest(`Query parameter ${quote(pair)} is not valid percent-encoding`);
    }
    if (params.has(key)) return badRequest(`Query parameter ${quote(key)} is given twice`);
    params.set(key, value);
  }
  return params;
}

/** The text Pusher signs for a request: method, path and the sorted parameters but `auth_signature`. */
export function stringToSign(method: string, path: string, params: ReadonlyMap<string, string>): string {
  const keys = [...params.keys()].filter((key) => key !== 'auth_signature').sort();
  const query = keys.map((key) => `${key}=${params.get(key)}`).join('&');
  return `${method.toUpperCase()}\n${path}\n${query}`;
}

/** The hex MD5 of a body, in one call (no hash object per request). */
export const bodyMd5 = (body: Uint8Array | string): string => hash('md5', body, 'hex');

export interface SignedRequest {
  readonly method: string;
  /** The path as requested, undecoded (`/apps/123/events`), without the query. */
  readonly path: string;
  /** The parsed query (see `parseQuery`). */
  readonly params: ReadonlyMap<string, string>;
  /** The raw body, empty or absent for a GET. */
  readonly body?: Uint8Array | string;
}

export interface SigningApp {
  readonly key: string;
  readonly secret: string;
  /** The app id (default: the key), matched against `/apps/{app_id}/…`. */
  readonly appId: string;
}

/** The `auth_key` of a request, to find its app; undefined when missing. */
export const authKeyOf = (params: ReadonlyMap<string, string>): string | undefined => params.get('auth_key');

/**
 * Checks a request signed for `app` (found by its `auth_key`; an unknown key is answered with
 * `unknownAuthKey`). Returns undefined when the request is authentic, fresh and for this app.
 *
 * Order: every authentication check comes before the app id in the path is compared, so a
 * request that is not signed with the app's secret learns nothing about app ids.
 */
export function verifySignedRequest(
  request: SignedRequest,
  app: SigningApp,
  pathAppId: string,
  nowMs: number = Date.now(),
): PusherHttpError | undefined {
  const { params } = request;
  if (params.get('auth_key') !== app.key) return unauthorized('Unknown auth_key');
  const version = params.get('auth_version');
  if (version !== '1.0')
    return unauthorized(`Unsupported auth_version ${quote(version ?? '')}: expected '1.0'`);
  const timestampText = params.get('auth_timestamp') ?? '';
  if (!/^\d{1,12}$/.test(timestampText))
    return unauthorized('Missing or invalid auth_timestamp (Unix seconds)');
  const timestamp = Number(timestampText);
  const now = Math.floor(nowMs / 1000);
  if (Math.abs(now - timestamp) > AUTH_TIMESTAMP_WINDOW_SECONDS) {
    return unauthorized(
      `Timestamp expired: given timestamp (${timestamp}) not within ${AUTH_TIMESTAMP_WINDOW_SECONDS}s of server time (${now})`,
    );
  }
  const body = request.body ?? '';
  const md5 = params.get('body_md5');
  if (body.length > 0 && md5 === undefined) return unauthorized('Missing body_md5 for a request with a body');
  if (md5 !== undefined && !constantTimeEqual(md5.toLowerCase(), bodyMd5(body))) {
    return unauthorized('body_md5 does not match the MD5 of the request body');
  }
  const signature = params.get('auth_signature');
  if (signature === undefined) return unauthorized('Missing auth_signature');
  const signed = stringToSign(request.method, request.path, params);
  if (!constantTimeEqual(hmacHex(app.secret, signed), signature.toLowerCase())) {
    return unauthorized(
      `Invalid signature: expected the HMAC SHA256 hex digest of ${JSON.stringify(signed)}`,
    );
  }
  if (pathAppId !== app.appId) return notFound(`Unknown app_id ${quote(pathAppId)}`);
  return undefined;
}

/** The answer to a request whose `auth_key` is missing or names no app. */
export const unknownAuthKey = (params: ReadonlyMap<string, string>): PusherHttpError =>
  params.has('auth_key') ? unauthorized('Unknown auth_key') : unauthorized('Missing auth_key');
