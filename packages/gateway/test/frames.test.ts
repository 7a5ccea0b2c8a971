import fc from 'fast-check';
import { stampChannel } from '../src/protocols/piesocket/frames';
import { closeReasonText } from '../src/fanout/send';
import { isOriginAllowed } from '../src/connections/origin';
import { isFlagOn, parseQuery } from '../src/protocols/piesocket/query';

describe('stampChannel', () => {
  it('adds system::channel to any JSON object text, equal to parsing and re-serializing', () => {
    fc.assert(
      fc.property(
        fc.dictionary(fc.string(), fc.jsonValue()),
        fc.stringMatching(/^[A-Za-z0-9_.-]{1,20}$/),
        (object, channel) => {
          delete (object as Record<string, unknown>)['system::channel'];
          const stamped = stampChannel(JSON.stringify(object), channel);
          const expected: unknown = JSON.parse(JSON.stringify({ ...object, 'system::channel': channel }));
          expect(JSON.parse(stamped)).toEqual(expected);
        },
      ),
    );
  });

  it('handles the empty object and trailing whitespace', () => {
    expect(stampChannel('{}', 'c')).toBe('{"system::channel":"c"}');
    expect(stampChannel('{"a":1}  ', 'c')).toBe('{"a":1,"system::channel":"c"}');
  });
});

describe('closeReasonText', () => {
  it('keeps at most 123 bytes and never splits a UTF-8 character', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 200 }), (text) => {
        const cut = closeReasonText(text);
        expect(Buffer.byteLength(cut)).toBeLessThanOrEqual(123);
        expect(text.startsWith(cut)).toBe(true);
      }),
    );
  });
});

describe('isOriginAllowed', () => {
  it('allows any origin with an empty list and server clients without Origin', () => {
    expect(isOriginAllowed('https://a.com', [])).toBe(true);
    expect(isOriginAllowed('', ['a.com'])).toBe(true);
  });

  it('matches exact hosts and subdomains, ignoring the scheme, and nothing else', () => {
    expect(isOriginAllowed('http://a.com:8080', ['a.com'])).toBe(true);
    expect(isOriginAllowed('https://x.y.a.com', ['a.com'])).toBe(true);
    expect(isOriginAllowed('https://evila.com', ['a.com'])).toBe(false);
    expect(isOriginAllowed('https://a.com.evil.net', ['a.com'])).toBe(false);
    expect(isOriginAllowed('null', ['a.com'])).toBe(false);
  });

  it.each([
    ['http://localhost:3000', 'localhost:3000', true],
    ['http://localhost:3001', 'localhost:3000', false],
    ['http://localhost', 'localhost:3000', false],
    ['http://localhost:3000', 'localhost', true],
    ['https://app.a.com:8443', 'a.com:8443', true],
    ['https://app.a.com:8444', 'a.com:8443', false],
    ['https://a.com', 'a.com:443', true],
    ['http://a.com', 'a.com:80', true],
    ['http://a.com', 'a.com:443', false],
    ['https://a.com', 'A.com:443', true],
    ['http://[::1]:8080', '[::1]:8080', true],
    ['http://[::1]:8081', '[::1]:8080', false],
    ['http://[::1]', '[::1]', true],
    ['https://evil.com:3000', 'localhost:3000', false],
  ])('Origin %s against domain %s: %s', (origin, domain, allowed) => {
    expect(isOriginAllowed(origin, [domain])).toBe(allowed);
  });

  it('reads a legacy "*." entry as its domain and never matches an invalid entry', () => {
    expect(isOriginAllowed('https://x.a.com', ['*.a.com'])).toBe(true);
    expect(isOriginAllowed('https://a.com', ['https://a.com'])).toBe(false);
  });
});

describe('query parsing', () => {
  it('decodes leniently and keeps raw JSON user values', () => {
    const query = parseQuery('api_key=k&user={"username":"ann"}&bad=%E0%A4%A&presence');
    expect(query.get('user')).toBe('{"username":"ann"}');
    expect(query.get('bad')).toBe('%E0%A4%A');
    expect(query.get('presence')).toBe('');
  });

  it('treats flags as on unless 0, false or no', () => {
    expect([isFlagOn(''), isFlagOn('1'), isFlagOn('true'), isFlagOn('yes')]).toEqual([
      true,
      true,
      true,
      true,
    ]);
    expect([isFlagOn(undefined), isFlagOn('0'), isFlagOn('false'), isFlagOn('NO')]).toEqual([
      false,
      false,
      false,
      false,
    ]);
  });
});
