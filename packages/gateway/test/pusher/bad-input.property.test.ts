import fc from 'fast-check';
import {
  matchRoute,
  parseBatchBody,
  parseChannelData,
  parseClientFrame,
  parseConnectQuery,
  parseEventBody,
  parseQuery,
  parseUserData,
  verifySignedRequest,
} from '../../src/protocols/pusher';

/**
 * Whatever a client or a backend sends, the protocol modules answer with a value (a command, a
 * refusal naming the problem, an HTTP error), never an exception, and a refusal's text stays
 * short whatever the input's size.
 */

const anyJson = fc.jsonValue({ maxDepth: 4 });
const frameLike = fc.record(
  {
    event: fc.oneof(
      fc.constantFrom('pusher:subscribe', 'pusher:unsubscribe', 'pusher:signin', 'pusher:ping', 'client-x'),
      fc.string(),
    ),
    channel: fc.oneof(fc.string(), anyJson),
    data: fc.oneof(
      anyJson,
      fc.record({
        channel: fc.oneof(fc.string(), anyJson),
        auth: anyJson,
        channel_data: anyJson,
        user_data: anyJson,
      }),
    ),
  },
  { requiredKeys: [] },
);

describe('Pusher protocol modules on arbitrary input', () => {
  it('parseClientFrame never throws and refusals stay short', () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.string(),
          frameLike.map((f) => JSON.stringify(f)),
        ),
        (text) => {
          const parsed = parseClientFrame(text, 65536);
          if (!parsed.ok) expect(parsed.message.length).toBeLessThan(400);
        },
      ),
      { numRuns: 500 },
    );
  });

  it('channel_data and user_data parsers never throw', () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.string(),
          anyJson.map((v) => JSON.stringify(v)),
          anyJson,
        ),
        (value) => {
          parseChannelData(value);
          parseUserData(value);
        },
      ),
      { numRuns: 500 },
    );
  });

  it('the HTTP API parsers and the signature check never throw', () => {
    const app = { key: 'k', secret: 's', appId: 'a' };
    fc.assert(
      fc.property(
        fc.string(),
        fc.string(),
        fc.oneof(
          fc.string(),
          anyJson.map((v) => JSON.stringify(v)),
        ),
        (path, query, body) => {
          matchRoute('POST', path);
          parseConnectQuery(query);
          const params = parseQuery(query);
          if (params instanceof Map) verifySignedRequest({ method: 'POST', path, params, body }, app, 'a');
          for (const parse of [parseEventBody, parseBatchBody]) {
            const result = parse(body, { maxBodyBytes: 65536, maxDataBytes: 10240 });
            if ('status' in result) expect(result.body.length).toBeLessThan(400);
          }
        },
      ),
      { numRuns: 500 },
    );
  });
});
