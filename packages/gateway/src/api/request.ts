import {
  AppError,
  CHANNEL_NAME_RULE,
  isValidApiKey,
  isValidChannelName,
  MAX_SECRET_LENGTH,
  secretMatches,
  UNKNOWN_KEY_SECRET,
} from '@switchboard/core';
import type { ApiKeyRecord } from '@switchboard/core';
import type { HttpRequest } from '../transport/types';
import { takeApiRequest } from '../limits/rate-limit';
import type { ApiDeps } from './deps';

export type Body = Record<string, unknown>;

/** The largest page a paginated read returns. */
export const MAX_LIMIT = 100;

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** The request body as a JSON object, or a 400 that says what is wrong with it. */
export function parseBody(request: HttpRequest): Body {
  if (request.body.length === 0)
    throw new AppError('SB_BAD_JSON', 'Request body is empty; send a JSON object');
  let text: string;
  try {
    text = utf8.decode(request.body);
  } catch {
    throw new AppError('SB_BAD_JSON', 'Request body is not valid UTF-8');
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new AppError('SB_BAD_JSON', `Request body is not valid JSON: ${(error as Error).message}`);
  }
  if (!value || typeof value !== 'object' || Array.isArray(value)) {
    throw new AppError('SB_BAD_JSON', 'Request body must be a JSON object');
  }
  return value as Body;
}

const invalid = (field: string, rule: string): AppError =>
  new AppError('SB_INVALID_FIELD', `Invalid field "${field}": ${rule}`);
const missing = (field: string): AppError => new AppError('SB_INVALID_FIELD', `Missing field "${field}"`);

export function optionalString(body: Body, field: string, maxLength = 1024): string | undefined {
  const value = body[field];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string') throw invalid(field, 'must be a string');
  if (value.length > maxLength) throw invalid(field, `must be at most ${maxLength} characters`);
  return value;
}

/**
 * Credentials in the body (docs/openapi.yaml): 400 when absent or malformed, 401 when wrong. Failures are
 * counted and limited by the router (`authFailures`), which sees the client address.
 *
 * The record comes at once, without a promise, when the node has the key cached and the key's
 * request rate is unlimited (the common request): a promise only when a round trip is needed.
 * Problems are thrown, at once or as the promise's rejection.
 */
export function authenticate(ctx: ApiDeps, body: Body): ApiKeyRecord | Promise<ApiKeyRecord> {
  const key = body['key'];
  const secret = body['secret'];
  if (key === undefined || key === null || key === '') throw missing('key');
  if (typeof key !== 'string') throw invalid('key', 'must be a string');
  if (secret === undefined || secret === null || secret === '') throw missing('secret');
  if (typeof secret !== 'string') throw invalid('secret', 'must be a string');
  if (secret.length > MAX_SECRET_LENGTH)
    throw invalid('secret', `must be at most ${MAX_SECRET_LENGTH} characters`);
  const peeked = isValidApiKey(key) ? ctx.keys.peek(key) : null;
  if (peeked !== undefined) return admitRequest(ctx, peeked, secret);
  return ctx.keys.get(key).then((record) => admitRequest(ctx, record, secret));
}

function admitRequest(
  ctx: ApiDeps,
  record: ApiKeyRecord | null,
  secret: string,
): ApiKeyRecord | Promise<ApiKeyRecord> {
  // Compared even for an unknown key, so the answer's timing does not tell which keys exist.
  const matches = secretMatches(secret, record?.secret ?? UNKNOWN_KEY_SECRET);
  if (!record || !matches) throw new AppError('SB_UNAUTHORIZED');
  const taking = takeApiRequest(ctx, record);
  return taking ? taking.then(() => record) : record;
}

/** `channel`, or the SDKs' aliases `channelId` and `roomId`. */
export function channelField(body: Body, required: true): string;
export function channelField(body: Body, required: false): string | undefined;
export function channelField(body: Body, required: boolean): string | undefined {
  const field =
    body['channel'] !== undefined ? 'channel' : body['channelId'] !== undefined ? 'channelId' : 'roomId';
  const value = body[field];
  if (value === undefined || value === null) {
    if (required) throw missing('channel');
    return undefined;
  }
  if (!isValidChannelName(value)) throw invalid(field, `must be ${CHANNEL_NAME_RULE}`);
  return value;
}

/** A positive integer (a JSON number or its decimal text), or `fallback` when absent. */
export function positiveInt(body: Body, field: string, fallback: number): number {
  const value = body[field];
  if (value === undefined || value === null) return fallback;
  const number = typeof value === 'string' && /^-?\d+$/.test(value.trim()) ? Number(value) : value;
  if (typeof number !== 'number' || !Number.isInteger(number)) throw invalid(field, 'must be an integer');
  if (number < 1) throw invalid(field, 'must be 1 or more');
  return number;
}

/** A non-negative integer (a JSON number or its decimal text), or `undefined` when absent. */
export function nonNegativeInt(body: Body, field: string): number | undefined {
  const value = body[field];
  if (value === undefined || value === null) return undefined;
  const number = typeof value === 'string' && /^-?\d+$/.test(value.trim()) ? Number(value) : value;
  if (typeof number !== 'number' || !Number.isSafeInteger(number) || number < 0)
    throw invalid(field, 'must be a non-negative integer');
  return number;
}
