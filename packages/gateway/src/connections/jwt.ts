import { jwtVerify } from 'jose';
import type { JsonValue } from '@switchboard/core';

export type TokenCheck = { ok: true; user: JsonValue | undefined } | { ok: false; reason: string };

const encoder = new TextEncoder();

/**
 * A channel token (docs/protocol.md, "JWT"): HS256 signed with the key's secret, `sub` equal to the channel name,
 * `exp` (when present, and required with `requireExp`: `JWT_REQUIRE_EXP`) in the future with 5
 * seconds of leeway, an optional `user` claim of any JSON type.
 */
export async function verifyChannelToken(
  token: string,
  secret: string,
  channel: string,
  requireExp = false,
): Promise<TokenCheck> {
  try {
    const { payload } = await jwtVerify(token, encoder.encode(secret), {
      algorithms: ['HS256'],
      clockTolerance: 5,
      ...(requireExp ? { requiredClaims: ['exp'] } : {}),
    });
    if (payload.sub !== channel) return { ok: false, reason: 'sub does not match the channel' };
    return { ok: true, user: payload['user'] as JsonValue | undefined };
  } catch (error) {
    return { ok: false, reason: error instanceof Error ? error.message : 'invalid token' };
  }
}
