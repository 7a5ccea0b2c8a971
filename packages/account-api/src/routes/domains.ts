import { appIdOf } from '@switchboard/core';
import { querySchema } from '../http/query';
import { defineEndpoint } from './endpoint';

/** `GET /api/domains`: the key's allowed domains; an empty list allows any origin. No parameters. */
export const domainsEndpoint = defineEndpoint({
  path: '/domains',
  query: querySchema({}),
  handle: async (key): Promise<string[]> => [...key.domains],
});

/** Redacts every field named like a secret, however deep, so a settings view can never leak one. */
function redacted(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(redacted);
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(
    Object.entries(value).map(([name, inner]) => [
      name,
      /secret|token|password/i.test(name) ? '(hidden)' : redacted(inner),
    ]),
  );
}

/**
 * `GET /api/settings`: the key's settings as the console shows them, read-only: its Pusher app id
 * (the key itself when the record has none, docs/pusher.md), whether Pusher's subscription
 * counting is on (`subscriptionCount`, docs/pusher.md), its allowed domains and its webhook (`webhook`: URL and events) as the key record holds it (`null` when it holds none), any
 * secret-like field hidden. The key's own secret is never part of it. No parameters.
 */
export const settingsEndpoint = defineEndpoint({
  path: '/settings',
  query: querySchema({}),
  handle: async (
    key,
  ): Promise<{
    key: string;
    appId: string;
    subscriptionCount: boolean;
    domains: string[];
    webhook: unknown;
  }> => ({
    key: key.key,
    appId: appIdOf(key),
    subscriptionCount: key.subscriptionCount === true,
    domains: [...key.domains],
    // Read by name: the record's `webhook` (docs/webhooks.md) as stored, whatever fields it grows.
    webhook: redacted((key as unknown as Record<string, unknown>)['webhook'] ?? null),
  }),
});
