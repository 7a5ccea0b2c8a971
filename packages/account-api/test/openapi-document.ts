import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import Ajv2020 from 'ajv/dist/2020';
import type { ValidateFunction } from 'ajv/dist/2020';
import { parse } from 'yaml';

/**
 * `docs/openapi.yaml` loaded for tests: response schemas compiled with ajv (JSON Schema 2020-12,
 * the dialect of OpenAPI 3.1), so tests can check real responses against the document. Shared by
 * the account API's and the gateway's OpenAPI tests.
 */

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type JsonObject = { [key: string]: Json };

export interface OpenApiDocument {
  paths: Record<string, Record<string, JsonObject>>;
  components: { schemas: Record<string, Json>; responses: Record<string, JsonObject> };
  [key: string]: unknown;
}

export const OPENAPI_PATH = join(__dirname, '..', '..', '..', 'docs', 'openapi.yaml');
export const HTTP_METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];

export function loadOpenApi(): OpenApiDocument {
  return parse(readFileSync(OPENAPI_PATH, 'utf8')) as OpenApiDocument;
}

const SCHEMA_REF = '#/components/schemas/';
const SCHEMAS_ID = 'https://switchboard.invalid/openapi-schemas';

/** Points `#/components/schemas/X` references at the schema bundle ajv knows. */
function rebase(value: Json): Json {
  if (Array.isArray(value)) return value.map(rebase);
  if (value === null || typeof value !== 'object') return value;
  const out: JsonObject = {};
  for (const [k, v] of Object.entries(value)) {
    out[k] =
      k === '$ref' && typeof v === 'string' && v.startsWith(SCHEMA_REF)
        ? `${SCHEMAS_ID}#/$defs/${v.slice(SCHEMA_REF.length)}`
        : rebase(v);
  }
  return out;
}

const ISO_8601 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;

export interface CheckedResponse {
  status: number;
  body: unknown;
  headers?: Record<string, unknown>;
}

/** Validates responses of the documented operations and remembers which (operation, status) it saw. */
export class OpenApiChecker {
  readonly doc = loadOpenApi();
  private readonly ajv = new Ajv2020({
    allErrors: true,
    strict: true,
    allowUnionTypes: true,
    formats: { 'date-time': (text: string) => ISO_8601.test(text) && !Number.isNaN(Date.parse(text)) },
  });
  private readonly compiled = new Map<string, ValidateFunction>();
  readonly seen = new Set<string>();

  constructor() {
    this.ajv.addSchema({ $id: SCHEMAS_ID, $defs: rebase(this.doc.components.schemas as Json) });
  }

  /** The response object of an operation for a status, `$ref`s to `components.responses` followed. */
  responseObject(method: string, path: string, status: number): JsonObject {
    const operation = this.doc.paths[path]?.[method];
    if (!operation) throw new Error(`${method.toUpperCase()} ${path} is not in docs/openapi.yaml`);
    const responses = operation['responses'] as Record<string, JsonObject> | undefined;
    const response = responses?.[String(status)];
    if (!response) throw new Error(`${method.toUpperCase()} ${path} documents no ${status} response`);
    return this.follow(response);
  }

  /** Checks a real response of a documented operation; throws with ajv's findings when it does not match. */
  check(method: string, path: string, response: CheckedResponse): void {
    this.seen.add(`${method} ${path} ${response.status}`);
    this.validate(
      `${method} ${path} ${response.status}`,
      this.responseObject(method, path, response.status),
      response,
    );
  }

  /** Checks a response against `components.responses[name]` (404 and 405 belong to no operation). */
  checkComponent(name: string, response: CheckedResponse): void {
    const object = this.doc.components.responses[name];
    if (!object) throw new Error(`components.responses.${name} is not in docs/openapi.yaml`);
    this.seen.add(`component ${name}`);
    this.validate(`components.responses.${name}`, object, response);
  }

  /** Every (operation, status) the document lists for operations whose servers include `server`. */
  documented(server: string): string[] {
    const found: string[] = [];
    for (const [path, item] of Object.entries(this.doc.paths)) {
      for (const method of HTTP_METHODS) {
        const operation = item[method];
        if (!operation) continue;
        const servers = (operation['servers'] ?? []) as Array<{ description?: string }>;
        if (!servers.some((s) => s.description === server)) continue;
        for (const status of Object.keys(operation['responses'] as JsonObject))
          found.push(`${method} ${path} ${status}`);
      }
    }
    return found.sort();
  }

  /** Compiles every response schema of the document, so a broken reference fails even when unused. */
  compileEverything(): number {
    let count = 0;
    const objects: JsonObject[] = Object.values(this.doc.components.responses);
    for (const item of Object.values(this.doc.paths)) {
      for (const method of HTTP_METHODS) {
        const responses = item[method]?.['responses'] as Record<string, JsonObject> | undefined;
        for (const response of Object.values(responses ?? {})) objects.push(this.follow(response));
      }
    }
    for (const object of objects) {
      const content = object['content'] as Record<string, { schema?: Json }> | undefined;
      const schema = content?.['application/json']?.schema;
      if (schema === undefined)
        throw new Error(`a response without an application/json schema: ${JSON.stringify(object)}`);
      this.ajv.compile(rebase(schema) as object);
      count += 1;
    }
    return count;
  }

  private follow(response: JsonObject): JsonObject {
    const ref = response['$ref'];
    if (typeof ref !== 'string') return response;
    const name = ref.replace('#/components/responses/', '');
    const target = this.doc.components.responses[name];
    if (!target) throw new Error(`dangling reference ${ref}`);
    return target;
  }

  private validate(where: string, object: JsonObject, response: CheckedResponse): void {
    const content = object['content'] as Record<string, { schema?: Json }> | undefined;
    const schema = content?.['application/json']?.schema;
    if (schema === undefined) throw new Error(`${where}: no application/json schema`);
    let validate = this.compiled.get(where);
    if (!validate) {
      validate = this.ajv.compile(rebase(schema) as object);
      this.compiled.set(where, validate);
    }
    if (!validate(response.body)) {
      throw new Error(
        `${where}: the response does not match the document:\n${JSON.stringify(validate.errors, null, 2)}\nbody: ${JSON.stringify(response.body)}`,
      );
    }
    const headers = (object['headers'] ?? {}) as Record<string, { schema?: Json }>;
    for (const [name, header] of Object.entries(headers)) {
      const value = response.headers?.[name.toLowerCase()];
      if (value === undefined) throw new Error(`${where}: header ${name} is missing`);
      if (header.schema !== undefined && !this.ajv.validate(rebase(header.schema) as object, value)) {
        throw new Error(
          `${where}: header ${name}=${String(value)} does not match ${JSON.stringify(header.schema)}`,
        );
      }
    }
  }
}
