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
  const parsed = schema.safeParse(query ?? {});
  if (parsed.success) return parsed.data as z.output<S>;
  const accepted = schema instanceof z.ZodObject ? Object.keys(schema.shape as z.ZodRawShape) : [];
  const problems = parsed.error.issues.map((issue) =>
    issue.code === z.ZodIssueCode.unrecognized_keys ? unknownParameters(issue.keys, accepted) : issue.message,
  );
  throw new AppError('SB_INVALID_FIELD', problems.join('; '));
}

function unknownParameters(names: string[], accepted: string[]): string {
  const list = names.map(echo).join(', ');
  const noun = names.length === 1 ? 'query parameter' : 'query parameters';
  const allowed =
    accepted.length === 0 ? 'this endpoint takes no query parameters' : `accepted: ${accepted.join(', ')}`;
  return `Unknown ${noun} ${list} (${allowed})`;
}
