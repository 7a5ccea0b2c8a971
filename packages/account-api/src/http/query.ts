import { z } from 'zod';
import { AppError } from '@switchboard/core';

/** Longest echo of a client's value in an error message; the rest is elided. */
const ECHO_LIMIT = 40;

const echo = (value: string): string =>
  JSON.stringify(value.length > ECHO_LIMIT ? `${value.slice(0, ECHO_LIMIT)}…` : value);

/**
 * A query parameter holding a whole number from 1 up. Given twice (`?page=1&page=2`) it is
 * rejected rather than guessed at; only plain decimal digits are accepted (no sign, exponent,
 * blank or fraction), so what the client sent is exactly what is used.
 */
export const positiveIntegerParam = (name: string) =>
  z
    .unknown()
    .transform((value, ctx) => {
      const fail = (message: string): never => {
        ctx.addIssue({ code: z.ZodIssueCode.custom, message });
        return z.NEVER;
      };
      if (typeof value !== 'string') return fail(`${name} must be given once`);
      if (!/^[0-9]+$/.test(value)) return fail(`${name} must be a positive integer, got ${echo(value)}`);
      const number = Number(value);
      if (number < 1) return fail(`${name} must be at least 1, got ${echo(value)}`);
      if (!Number.isSafeInteger(number)) return fail(`${name} must be at most ${Number.MAX_SAFE_INTEGER}`);
      return number;
    })
    .optional();

/** An endpoint's accepted query parameters; any other parameter is a 400 that names it. */
export const querySchema = <T extends z.ZodRawShape>(shape: T) => z.object(shape).strict();

/** Validates a query against `schema`; every problem becomes one 400 naming the parameters. */
export function parseQuery<S extends z.ZodTypeAny>(schema: S, query: unknown): z.output<S> {
  return parseFields(schema, query ?? {}, 'query parameter');
}

/** Validates a JSON request body against `schema`; every problem becomes one 400 naming the fields. */
export function parseBody<S extends z.ZodTypeAny>(schema: S, body: unknown): z.output<S> {
  if (body === null || typeof body !== 'object' || Array.isArray(body))
    throw new AppError('SB_BAD_JSON', 'Request body must be a JSON object (Content-Type: application/json)');
  return parseFields(schema, body, 'field');
}

function parseFields<S extends z.ZodTypeAny>(schema: S, value: unknown, noun: string): z.output<S> {
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data as z.output<S>;
  const object: unknown = schema instanceof z.ZodEffects ? schema.innerType() : schema;
  const accepted = object instanceof z.ZodObject ? Object.keys(object.shape as z.ZodRawShape) : [];
  const problems = parsed.error.issues.map((issue) =>
    issue.code === z.ZodIssueCode.unrecognized_keys
      ? unknownNames(issue.keys, accepted, noun)
      : issue.path.length > 0 && !issue.message.includes(String(issue.path[0]))
        ? `Invalid ${noun} "${String(issue.path[0])}": ${issue.message}`
        : issue.message,
  );
  throw new AppError('SB_INVALID_FIELD', problems.join('; '));
}

function unknownNames(names: string[], accepted: string[], noun: string): string {
  const list = names.map(echo).join(', ');
  const nouns = names.length === 1 ? noun : `${noun}s`;
  const allowed =
    accepted.length === 0 ? `this endpoint takes no ${noun}s` : `accepted: ${accepted.join(', ')}`;
  return `Unknown ${nouns} ${list} (${allowed})`;
}
