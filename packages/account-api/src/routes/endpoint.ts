import type { z } from 'zod';
import type { ApiKeyRecord, Config, Engine, Logger } from '@switchboard/core';

/** What every endpoint may use; one instance per app. */
export interface EndpointContext {
  readonly engine: Engine;
  readonly config: Config;
  readonly logger: Logger;
  /** The node name publications from this API carry, distinct from every gateway's, so each gateway delivers them. */
  readonly origin: string;
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

/**
 * One authenticated POST endpoint: its path under `/api`, its JSON body (zod, strict: any other
 * field is a 400 naming it) and what it answers with (JSON, status 200). It acts only on the
 * authenticated key's connections and channels.
 */
export interface PostEndpoint<B extends z.ZodTypeAny> {
  readonly path: string;
  readonly body: B;
  handle(key: ApiKeyRecord, body: z.output<B>, context: EndpointContext): Promise<unknown>;
}

export const definePostEndpoint = <B extends z.ZodTypeAny>(endpoint: PostEndpoint<B>): PostEndpoint<B> =>
  endpoint;
