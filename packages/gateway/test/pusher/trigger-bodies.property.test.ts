import fc from 'fast-check';
import { BatchBody, EventBody, batchItems, eventChannels } from '../../src/protocols/pusher';

/**
 * The trigger bodies' checks without zod (`eventChannels`, `batchItems`) may refuse what the
 * schemas accept (the schema then decides), never accept what they refuse: bodies near the valid
 * shape, each field sometimes wrong, must never pass the fast check and fail the schema.
 */

/** Mostly a valid value, sometimes one of the wrong ones (each field alone decides a refusal). */
const mostly = <T, U>(valid: fc.Arbitrary<T>, wrong: fc.Arbitrary<U>): fc.Arbitrary<T | U> =>
  fc.oneof({ arbitrary: valid, weight: 6 }, { arbitrary: wrong, weight: 1 });
const other = fc.oneof(fc.integer(), fc.constant(null), fc.boolean(), fc.constant({}));
const name = mostly(
  fc.oneof(fc.constantFrom('bench', 'client-a', 'x'.repeat(200)), fc.string({ minLength: 1, maxLength: 8 })),
  fc.oneof(fc.constantFrom('', 'pusher:x', 'pusher_internal:y', 'x'.repeat(201)), other),
);
const data = mostly(fc.string({ maxLength: 8 }), other);
const socketId = mostly(
  fc.constantFrom('123.456', '1.2'),
  fc.oneof(fc.constantFrom('12', 'a.b', '1.2.3', `${'9'.repeat(21)}.1`, ''), other),
);
const info = mostly(
  fc.constantFrom('', 'user_count', 'subscription_count,user_count', 'x'.repeat(200)),
  fc.oneof(fc.constant('x'.repeat(201)), other),
);
const channel = mostly(fc.string({ maxLength: 6 }), other);
const channelNames = mostly(
  fc.oneof(
    fc.array(fc.string({ maxLength: 6 }), { minLength: 1, maxLength: 4 }),
    fc.constant(Array.from({ length: 100 }, (_, i) => `c${i}`)),
  ),
  fc.oneof(
    fc.constant([]),
    fc.constant(Array.from({ length: 101 }, (_, i) => `c${i}`)),
    fc.array(fc.oneof(fc.string({ maxLength: 6 }), other), { minLength: 1, maxLength: 3 }),
    other,
  ),
);
const fields = { name, data, socket_id: socketId, info };
const eventBody = fc.oneof(
  fc.record({ ...fields, channel }, { requiredKeys: ['name', 'data'] }),
  fc.record({ ...fields, channels: channelNames }, { requiredKeys: ['name', 'data'] }),
  fc.record({ ...fields, channel, channels: channelNames }, { requiredKeys: [] }),
);
const batchItem = mostly(
  fc.record({ ...fields, channel }, { requiredKeys: ['name', 'data', 'channel'] }),
  fc.oneof(fc.record({ ...fields, channel }, { requiredKeys: [] }), fc.constantFrom(null, 'x', [], 1)),
);
const batchBody = fc.record(
  {
    batch: mostly(
      fc.array(batchItem, { minLength: 1, maxLength: 10 }),
      fc.oneof(fc.constant([]), fc.array(batchItem, { minLength: 11, maxLength: 11 }), other),
    ),
  },
  { requiredKeys: [] },
);

describe('Pusher trigger bodies: the checks without zod against the schemas', () => {
  it('eventChannels accepts only what EventBody accepts, with the same channels', () => {
    fc.assert(
      fc.property(eventBody, (body) => {
        const fast = eventChannels(body as Record<string, unknown>);
        const schema = EventBody.safeParse(body);
        if (fast !== undefined) {
          expect(schema.success).toBe(true);
          if (schema.success) expect(fast).toEqual(schema.data.channels ?? [schema.data.channel]);
        }
      }),
      { numRuns: 3000 },
    );
  });

  it('batchItems accepts only what BatchBody accepts, with the same events', () => {
    fc.assert(
      fc.property(batchBody, (body) => {
        const fast = batchItems(body as Record<string, unknown>);
        const schema = BatchBody.safeParse(body);
        if (fast !== undefined) {
          expect(schema.success).toBe(true);
          if (schema.success)
            expect(
              fast.map(({ name, data, channel, socket_id, info }) => ({
                name,
                data,
                channel,
                socket_id,
                info,
              })),
            ).toEqual(
              schema.data.batch.map(({ name, data, channel, socket_id, info }) => ({
                name,
                data,
                channel,
                socket_id,
                info,
              })),
            );
        }
      }),
      { numRuns: 3000 },
    );
  });

  it('both accept a valid body of each kind (the fast path is taken)', () => {
    const event = { name: 'bench', channel: 'a', data: '{}', socket_id: '1.2', info: 'user_count' };
    expect(eventChannels(event)).toEqual(['a']);
    expect(eventChannels({ name: 'bench', channels: ['a', 'b'], data: '{}' })).toEqual(['a', 'b']);
    expect(batchItems({ batch: [event, event] })).toHaveLength(2);
  });
});
