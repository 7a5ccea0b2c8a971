import fc from 'fast-check';
import type { Publication } from '../src/broker/broker';
import {
  decodePublication,
  encodePublication,
  publicationHead,
  publicationTail,
} from '../src/redis/publication-codec';
import type { Topic } from '../src/types';

const topic: Topic = { key: 'key', protocol: 'v4', channel: 'room' };

const publication = fc.record(
  {
    body: fc.string({ unit: 'grapheme' }),
    origin: fc.stringMatching(/^[A-Za-z0-9_.-]{1,64}$/),
    binary: fc.constant(true),
    stampable: fc.constant(true),
    to: fc.string({ unit: 'grapheme' }),
    source: fc.constantFrom('api' as const, 'client' as const),
    acceptedAt: fc.integer({ min: 0, max: 2 ** 48 }),
    sender: fc.stringMatching(/^[A-Za-z0-9_.-]{1,64}\/[0-9a-z]{1,10}$/),
  },
  { requiredKeys: ['body', 'origin'] },
);
const position = fc.record({
  offset: fc.maxSafeNat().map((n) => (n % 999_999_999_999_999) + 1),
  epoch: fc.stringMatching(/^[A-Za-z0-9_-]{1,32}$/),
});

describe('publication wire form', () => {
  it('decodes what it encodes, for any body, origin, flags and target', () => {
    fc.assert(
      fc.property(publication, (p) => {
        const sent: Publication = { topic, ...p };
        expect(decodePublication(topic, encodePublication(sent))).toEqual(sent);
      }),
    );
  });

  it('decodes the stream position the publish script puts between head and tail', () => {
    fc.assert(
      fc.property(publication, position, (p, { offset, epoch }) => {
        const sent: Publication = { topic, ...p };
        const scripted = `${publicationHead(sent)}${offset}|${epoch}|${publicationTail(sent)}`;
        expect(decodePublication(topic, scripted)).toEqual({ ...sent, offset, epoch });
        expect(encodePublication({ ...sent, offset, epoch })).toBe(scripted);
      }),
    );
  });

  it('carries the body verbatim after a short header', () => {
    expect(encodePublication({ topic, body: '{"a":"b|c"}', origin: 'n1' })).toBe('|n1|{"a":"b|c"}');
    expect(
      encodePublication({ topic, body: 'x', origin: 'n1', binary: true, stampable: true, to: 'a|b' }),
    ).toBe('bst|n1|3|a|bx');
    expect(
      encodePublication({
        topic,
        body: 'x',
        origin: 'n1',
        acceptedAt: 17,
        offset: 42,
        epoch: 'Ab_-9',
        source: 'api',
      }),
    ).toBe('moA|n1|17|42|Ab_-9|x');
  });

  it('rejects a header cut anywhere short of its end', () => {
    fc.assert(
      fc.property(publication, fc.option(position, { nil: undefined }), fc.nat(), (p, at, cut) => {
        const sent: Publication = { topic, ...p, ...(at ?? {}) };
        const wire = encodePublication(sent);
        const headerLength = wire.length - sent.body.length;
        expect(decodePublication(topic, wire.slice(0, cut % headerLength))).toBeNull();
      }),
    );
  });

  it('rejects malformed headers instead of returning a wrong field', () => {
    const rejected = [
      'garbage',
      '',
      '|',
      '||body',
      't|n1|x|y',
      'x|n1|body',
      'bb|n1|body',
      'AC|n1|body',
      'm|n1||body',
      'm|n1|-5|body',
      'm|n1|1e3|body',
      'm|n1|1234567890123456|body',
      'o|n1|0|ep|body',
      'o|n1|5||body',
      'o|n1|5|e p|body',
      `o|n1|5|${'e'.repeat(33)}|body`,
      'o|n1|5|ep',
      'o|n1|x|ep|body',
      't|n1|9|abc',
      'mo|n1|5|ep|body',
    ];
    for (const wire of rejected) expect([wire, decodePublication(topic, wire)]).toEqual([wire, null]);
  });

  it('never throws on random input, and what it accepts encodes back to the same publication', () => {
    const wires = fc.oneof(
      fc.string({ unit: 'binary', maxLength: 60 }),
      fc
        .array(fc.constantFrom('|', 'b', 's', 'm', 'o', 't', 'A', 'C', '1', '0', '9', 'e', '-', 'x', 'é'), {
          maxLength: 40,
        })
        .map((chars) => chars.join('')),
    );
    fc.assert(
      fc.property(wires, (wire) => {
        const decoded = decodePublication(topic, wire);
        if (decoded) expect(decodePublication(topic, encodePublication(decoded))).toEqual(decoded);
      }),
      { numRuns: 2000 },
    );
  });
});
