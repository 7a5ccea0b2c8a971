import { Writable } from 'node:stream';
import { createLogger, redactLogLine } from '../src/logger';

const SECRET = 's3cr3t-value-0123456789';
const JWT =
  'eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJjaGFubmVsIjoicHJpdmF0ZS14IiwidXNlciI6ImFsaWNlIn0.c2lnbmF0dXJlLWJ5dGVz';

/** A logger at trace level and the raw lines it wrote. */
function capture(): { logger: ReturnType<typeof createLogger>; text: () => string } {
  let text = '';
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      text += chunk.toString('utf8');
      done();
    },
  });
  return { logger: createLogger({ level: 'trace' }, sink), text: () => text };
}

describe('log redaction', () => {
  it('removes credentials wherever a line carries them, and keeps everything else', () => {
    const { logger, text } = capture();
    const commandError = Object.assign(new Error(`command failed: {"key":"k1","secret":"${SECRET}"}`), {
      command: { name: 'hset', args: ['sb:key:k1', 'secret', SECRET] },
      options: { headers: { Authorization: `Bearer ${JWT}` } },
    });
    logger.info({ a: { b: { c: { secret: SECRET, jwt: JWT, password: SECRET } } } }, 'deep');
    logger.warn({ path: `/v3/private-x?api_key=k1&jwt=${JWT}&user=alice` }, 'url');
    logger.warn({ url: `/api/domains?secret=${SECRET}&client_secret=${SECRET}` }, 'query');
    logger.error({ err: commandError }, 'error object');
    logger.debug({ body: JSON.stringify({ key: 'k1', secret: SECRET }) }, 'body as a string');
    logger.info(`token in a message ${JWT}`);
    logger.info({ redis: `redis://default:${SECRET}@redis:6379/0` }, 'url password');
    logger.info({ accessToken: 12345678, secret: true }, 'non-string values');

    const out = text();
    expect(out).not.toContain(SECRET);
    expect(out).not.toContain(JWT);
    expect(out).not.toContain('12345678');
    expect(out).not.toMatch(/eyJ/);
    // What is not a credential stays readable, and every line is still JSON.
    const lines = out
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(lines).toHaveLength(8);
    expect(lines[1]?.['path']).toBe('/v3/private-x?api_key=k1&jwt=[redacted]&user=alice');
    expect(lines[2]?.['url']).toBe('/api/domains?secret=[redacted]&client_secret=[redacted]');
    expect(lines[4]?.['body']).toBe('{"key":"k1","secret":"[redacted]"}');
    expect(lines[6]?.['redis']).toBe('redis://default:[redacted]@redis:6379/0');
    expect(lines[0]?.['a']).toEqual({
      b: { c: { secret: '[redacted]', jwt: '[redacted]', password: '[redacted]' } },
    });
  });

  it('leaves lines without credentials untouched', () => {
    const line = '{"level":30,"msg":"ready","port":4001,"key":"k1","path":"/api/publish?x=1"}\n';
    expect(redactLogLine(line)).toBe(line);
    const mentions = '{"level":40,"msg":"Missing field \\"secret\\"","field":"secret","port":1}';
    expect(redactLogLine(mentions)).toBe(mentions);
  });
});
