import type { Request, RequestHandler, Response } from 'express';
import { AppError, isValidApiKey, secretMatches } from '@switchboard/core';
import type { ApiKeyRecord, KeyStore } from '@switchboard/core';

/** Compared against when the key is unknown, so both failures cost the same. */
const UNKNOWN_KEY_SECRET = 'no such key: compared anyway';

const header = (req: Request, name: string): string | undefined => {
  const value = req.get(name);
  return value === undefined || value === '' ? undefined : value;
};

/**
 * Resolves the API key of a request from its `key` and `secret` headers (SPEC §5) and keeps it in
 * `res.locals.apiKey`. Missing headers and a wrong key or secret are 401s; the message does not
 * say which of key and secret was wrong. Secrets are compared in constant time (`secretMatches`).
 * A store failure propagates (503).
 */
export function authenticate(keys: KeyStore): RequestHandler {
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
    const record = isValidApiKey(key) ? await keys.get(key) : null;
    const matches = secretMatches(secret, record?.secret ?? UNKNOWN_KEY_SECRET);
    if (!record || !matches) throw new AppError('SB_UNAUTHORIZED');
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
