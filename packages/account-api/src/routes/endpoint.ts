import type { z } from 'zod';
import type { ApiKeyRecord, Config, Engine } from '@switchboard/core';

/** What every endpoint may use; one instance per app. */
export interface EndpointContext {
  readonly engine: Engine;
  readonly config: Config;
}

/**
 * One authenticated GET endpoint of the account API: its path under `/api`, the query parameters
 * it accepts (zod, strict: anything else is a 400 naming it) and what it answers with (JSON,
 * status 200). Everything it reads is scoped by the authenticated key.
 */
export interface Endpoint<S extends z.ZodTypeAny> {
  readonly path: string;
  readonly query: S;
  handle(key: ApiKeyRecord, query: z.output<S>, context: EndpointContext): Promise<unknown>;
}

/** Keeps the query schema's type attached to the handler. */
export const defineEndpoint = <S extends z.ZodTypeAny>(endpoint: Endpoint<S>): Endpoint<S> => endpoint;
