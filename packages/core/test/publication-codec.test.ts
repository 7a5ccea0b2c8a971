import fc from 'fast-check';
import type { Publication } from '../src/broker/broker';
import { decodePublication, encodePublication } from '../src/redis/publication-codec';
import type { Topic } from '../src/types';

const topic: Topic = { key: 'key', protocol: 'v4', channel: 'room' };

describe('publication wire form', () => {
  it('decodes what it encodes, for any body, origin, flags and target', () => {
    const publication = fc.record(
      {
        body: fc.string({ unit: 'grapheme' }),
        origin: fc.stringMatching(/^[A-Za-z0-9_.-]{1,64}$/),
        binary: fc.constant(true),
        stampable: fc.constant(true),
        to: fc.string({ unit: 'grapheme' }),
        source: fc.constantFrom('api' as const, 'client' as const),
        acceptedAt: fc.integer({ min: 0, max: 2 ** 48 }),
      },
      { requiredKeys: ['body', 'origin'] },
    );
    fc.assert(
      fc.property(publication, (p) => {
        const sent: Publication = { topic, ...p };
        expect(decodePublication(topic, encodePublication(sent))).toEqual(sent);
      }),
    );
  });

  it('carries the body verbatim after a short header', () => {
    expect(encodePublication({ topic, body: '{"a":"b|c"}', origin: 'n1' })).toBe('|n1|{"a":"b|c"}');
    expect(
      encodePublication({ topic, body: 'x', origin: 'n1', binary: true, stampable: true, to: 'a|b' }),
    ).toBe('bst|n1|3|a|bx');
  });

  it('rejects messages that are not publications', () => {
    expect(decodePublication(topic, 'garbage')).toBeNull();
    expect(decodePublication(topic, 't|n1|x|y')).toBeNull();
  });
});
