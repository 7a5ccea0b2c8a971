import type { Request, RequestHandler, Response } from 'express';
import {
  AppError,
  isValidApiKey,
  MAX_SECRET_LENGTH,
  secretMatches,
  UNKNOWN_KEY_SECRET,
} from '@switchboard/core';
import type { ApiKeyRecord, AuthFailureLimiter, KeyStore } from '@switchboard/core';

const header = (req: Request, name: string): string | undefined => {
  const value = req.get(name);
  return value === undefined || value === '' ? undefined : value;
};

/**
 * Resolves the API key of a request from its `key` and `secret` headers (docs/account-api.md) and keeps it in
 * `res.locals.apiKey`. Missing headers and a wrong key or secret are 401s; the message does not
 * say which of key and secret was wrong. Secrets are compared in constant time (`secretMatches`),
 * against a dummy for an unknown key. A secret longer than `MAX_SECRET_LENGTH` is refused with 400
 * at once. A wrong key or secret counts against the client address (`req.ip`), never the key
 * (keys are public: docs/security.md); over the limit, requests from that address are refused with
 * 429 before any comparison. A store failure propagates (503).
 */
export function authenticate(
  keys: KeyStore,
  failures: AuthFailureLimiter,
  onFailure: () => void = () => undefined,
): RequestHandler {
  return async (req, res, next) => {
    const key = header(req, 'key');
    const secret = header(req, 'secret');
    if (key === undefined || secret === undefined) {
      const missing =
        key === undefined && secret === undefined
          ? 'key and secret headers'
          : key === undefined
            ? 'key header'
            : 'secret header';
      throw new AppError(
        'SB_UNAUTHORIZED',
        `Missing ${missing}; send the API key and secret as the headers "key" and "secret"`,
      );
    }
    if (secret.length > MAX_SECRET_LENGTH) {
      throw new AppError(
        'SB_INVALID_FIELD',
        `Invalid header "secret": must be at most ${MAX_SECRET_LENGTH} characters`,
      );
    }
    failures.check(req.ip);
    const record = isValidApiKey(key) ? await keys.get(key) : null;
    const matches = secretMatches(secret, record?.secret ?? UNKNOWN_KEY_SECRET);
    if (!record || !matches) {
      failures.failed(req.ip);
      onFailure();
      throw new AppError('SB_UNAUTHORIZED');
    }
    res.locals['apiKey'] = record;
    next();
  };
}

/** The record `authenticate` put on the response; a route mounted without it is a programming error. */
export function authenticatedKey(res: Response): ApiKeyRecord {
  const record = res.locals['apiKey'] as ApiKeyRecord | undefined;
  if (!record) throw new Error('route mounted without authenticate()');
  return record;
}
