import { AppError } from '../errors';
import type { ApiKey } from '../types';

/**
 * A key's Pusher app id (docs/pusher.md, "Keys are apps"): what the Pusher HTTP API names in
 * `/apps/{app_id}/…` and the server SDKs' `appId`. Pusher's own ids are digits, Soketi's and
 * Reverb's any text, so any URL-safe token is accepted, with the alphabet and bound of API keys:
 * a key without an `appId` uses the key itself, which therefore always qualifies.
 */
const APP_ID = /^[A-Za-z0-9_-]{1,128}$/;

export const APP_ID_RULE = '1 to 128 characters of A-Z a-z 0-9 _ -';

export function isValidAppId(appId: unknown): appId is string {
  return typeof appId === 'string' && APP_ID.test(appId);
}

/** The app id of a key record: its `appId`, or the key itself when the record has none. */
export const appIdOf = (record: { readonly key: ApiKey; readonly appId?: string }): string =>
  record.appId ?? record.key;

/** A 400 where it reaches an HTTP client. */
export class InvalidAppIdError extends AppError {
  constructor(appId: unknown) {
    super(
      'SB_INVALID_FIELD',
      `${JSON.stringify(appId)?.slice(0, 140)} is not an app id: it must be ${APP_ID_RULE}`,
    );
    this.name = 'InvalidAppIdError';
  }
}

/** Throws `InvalidAppIdError` unless `record.appId` is absent or valid; the key stores' `put` calls it. */
export function assertValidAppId(record: { readonly appId?: string }): void {
  if (record.appId !== undefined && !isValidAppId(record.appId)) throw new InvalidAppIdError(record.appId);
}
