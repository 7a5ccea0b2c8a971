import { querySchema } from '../http/query';
import { defineEndpoint } from './endpoint';

/** `GET /api/domains`: the key's allowed domains; an empty list allows any origin. No parameters. */
export const domainsEndpoint = defineEndpoint({
  path: '/domains',
  query: querySchema({}),
  handle: async (key): Promise<string[]> => [...key.domains],
});
