import type { PresenceEntry, PresenceStore } from '../../src/presence/presence-store';
import type { Member, Topic } from '../../src/types';
import { unique } from '../support/wait';

/** The PresenceStore port's contract (presence-store.ts), for any implementation. */
export function describePresenceContract(name: string, createStore: () => Promise<PresenceStore>): void {
  describe(`PresenceStore contract: ${name}`, () => {
    let store: PresenceStore;
    let key: string;
    let room: Topic;

    const all = { offset: 0, limit: 100, membersPerChannel: 100 };
    const entry = (connId: string, member: Member, nodeId = 'node-a'): PresenceEntry => ({
      connId,
      nodeId,
      member,
    });

    beforeEach(async () => {
      store = await createStore();
      key = unique('key');
      room = { key, protocol: 'v4', channel: 'room' };
    });

    it('reports a new identity only for its first entry, and counts identities', async () => {
      expect(await store.join(room, entry('a/1', { uuid: 'u1', user: 'alice' }), 1000)).toEqual({
        firstOfIdentity: true,
        identityCount: 1,
      });
      expect(await store.join(room, entry('b/1', { uuid: 'u2', user: 'alice' }, 'node-b'), 1001)).toEqual({
        firstOfIdentity: false,
        identityCount: 1,
      });
      expect(await store.join(room, entry('a/2', { uuid: 'u3' }), 1002)).toEqual({
        firstOfIdentity: true,
        identityCount: 2,
      });
    });

    it('lists, with a join, what the joiner is shown: entries (V3) or identities (V4) after the join', async () => {
      await store.join(room, entry('a/1', { uuid: 'u1', user: 'alice' }), 1000);
      await store.join(room, entry('b/1', { uuid: 'u2', user: 'alice' }, 'node-b'), 1001);
      const byIdentity = await store.join(room, entry('a/2', { uuid: 'u3', user: 'bob' }), 1002, {
        of: 'identities',
        limit: 10,
      });
      expect(byIdentity).toEqual({
        firstOfIdentity: true,
        identityCount: 2,
        listed: {
          members: [
            { uuid: 'u3', user: 'bob' },
            { uuid: 'u2', user: 'alice' },
          ],
          total: 2,
        },
      });
      const byEntry = await store.join(room, entry('a/3', { uuid: 'u4', user: 'bob' }), 1003, {
        of: 'entries',
        limit: 3,
      });
      expect(byEntry.listed).toEqual({
        members: [
          { uuid: 'u4', user: 'bob' },
          { uuid: 'u3', user: 'bob' },
          { uuid: 'u2', user: 'alice' },
        ],
        total: 4,
      });
      expect(byEntry.listed).toEqual({ members: (await store.roster(room, 3)).members, total: 4 });
      const none = await store.join(room, entry('a/4', { uuid: 'u5' }), 1004, { of: 'identities', limit: 0 });
      expect(none.listed).toEqual({ members: [], total: 3 });
      expect(await store.join(room, entry('a/5', { uuid: 'u6' }), 1005)).not.toHaveProperty('listed');
    });

    it('applies joins made together in the order they were made, each listed right after itself', async () => {
      const other: Topic = { ...room, channel: 'other' };
      const ids = { of: 'identities', limit: 10 } as const;
      const results = await Promise.all([
        store.join(room, entry('a/1', { uuid: 'u1', user: 'alice' }), 1000, ids),
        store.join(other, entry('a/1', { uuid: 'u1', user: 'alice' }), 1000, ids),
        store.join(room, entry('b/1', { uuid: 'u2', user: 'alice' }, 'node-b'), 1001, ids),
        store.join(room, entry('a/2', { uuid: 'u3', user: 'bob' }), 1002, ids),
        store.join(room, entry('a/1', { uuid: 'u1', user: 'alice' }), 1003),
      ]);
      expect(results).toEqual([
        {
          firstOfIdentity: true,
          identityCount: 1,
          listed: { members: [{ uuid: 'u1', user: 'alice' }], total: 1 },
        },
        {
          firstOfIdentity: true,
          identityCount: 1,
          listed: { members: [{ uuid: 'u1', user: 'alice' }], total: 1 },
        },
        {
          firstOfIdentity: false,
          identityCount: 1,
          listed: { members: [{ uuid: 'u2', user: 'alice' }], total: 1 },
        },
        {
          firstOfIdentity: true,
          identityCount: 2,
          listed: {
            members: [
              { uuid: 'u3', user: 'bob' },
              { uuid: 'u2', user: 'alice' },
            ],
            total: 2,
          },
        },
        { firstOfIdentity: false, identityCount: 2 },
      ]);
      expect((await store.roster(room, 10)).members).toEqual([
        { uuid: 'u1', user: 'alice' },
        { uuid: 'u3', user: 'bob' },
        { uuid: 'u2', user: 'alice' },
      ]);
    });

    it('refuses, atomically, a new identity past maxIdentities, never another entry of a member', async () => {
      const limited = { of: 'identities', limit: 10, maxIdentities: 3 } as const;
      // Ten users join at once from two nodes: exactly three get in, nothing of the others is written.
      const results = await Promise.all(
        Array.from({ length: 10 }, (_, i) =>
          store.join(
            room,
            entry(`n${i % 2}/${i}`, { uuid: `u${i}`, user: `user${i}` }, `node-${i % 2}`),
            1000 + i,
            limited,
          ),
        ),
      );
      const admitted = results.filter((result) => !result.refused);
      expect(admitted).toHaveLength(3);
      for (const refused of results.filter((result) => result.refused))
        expect(refused).toEqual({ firstOfIdentity: false, identityCount: 3, refused: true });
      expect((await store.identities(room, 0, 100)).count).toBe(3);
      expect((await store.roster(room, 100)).total).toBe(3);
      // A member's second tab and a refresh get in; a fourth user still does not.
      const member = (await store.identities(room, 0, 1)).identities[0]!;
      const tab = await store.join(
        room,
        entry('n9/1', { uuid: 'tab', user: member }, 'node-9'),
        2000,
        limited,
      );
      expect(tab.refused).toBeUndefined();
      expect(tab.identityCount).toBe(3);
      const late = await store.join(
        room,
        entry('n9/2', { uuid: 'late', user: 'late' }, 'node-9'),
        2001,
        limited,
      );
      expect(late.refused).toBe(true);
      expect((await store.roster(room, 100)).total).toBe(4);
      expect(await store.leave(room, 'n9/2')).toBeNull();
    });

    it('applies joins and leaves made together in the order they were made', async () => {
      const [absent, , left, , rejoined] = await Promise.all([
        store.leave(room, 'a/1'),
        store.join(room, entry('a/1', { uuid: 'u1' }), 1000),
        store.leave(room, 'a/1'),
        store.join(room, entry('a/2', { uuid: 'u2' }), 1001),
        store.join(room, entry('a/1', { uuid: 'u1' }), 1002),
      ]);
      expect(absent).toBeNull();
      expect(left).toEqual({ member: { uuid: 'u1' }, lastOfIdentity: true, identityCount: 0 });
      expect(rejoined).toEqual({ firstOfIdentity: true, identityCount: 2 });
      expect(await store.roster(room, 10)).toEqual({ members: [{ uuid: 'u1' }, { uuid: 'u2' }], total: 2 });
    });

    it('treats a join of an existing entry as a refresh, not a new identity', async () => {
      await store.join(room, entry('a/1', { uuid: 'u1' }), 1000);
      await store.join(room, entry('a/2', { uuid: 'u2' }), 1001);
      expect(await store.join(room, entry('a/1', { uuid: 'u1' }), 1002)).toEqual({
        firstOfIdentity: false,
        identityCount: 2,
      });
      expect((await store.roster(room, 10)).members).toEqual([{ uuid: 'u1' }, { uuid: 'u2' }]);
    });

    it('reports the last entry of an identity on leave, and leave is idempotent', async () => {
      await store.join(room, entry('a/1', { uuid: 'u1', user: 'alice' }), 1000);
      await store.join(room, entry('b/1', { uuid: 'u2', user: 'alice' }, 'node-b'), 1001);
      await store.join(room, entry('a/2', { uuid: 'u3', user: 'bob' }), 1002);
      expect(await store.leave(room, 'a/1')).toEqual({
        member: { uuid: 'u1', user: 'alice' },
        lastOfIdentity: false,
        identityCount: 2,
      });
      expect(await store.leave(room, 'b/1')).toEqual({
        member: { uuid: 'u2', user: 'alice' },
        lastOfIdentity: true,
        identityCount: 1,
      });
      expect(await store.leave(room, 'b/1')).toBeNull();
      expect(await store.leave({ ...room, channel: 'nowhere' }, 'a/2')).toBeNull();
    });

    it('orders the roster by last activity, ties by connId, with an exact total', async () => {
      await store.join(room, entry('a/3', { uuid: 'u3' }), 1000);
      await store.join(room, entry('a/1', { uuid: 'u1' }), 1000);
      await store.join(room, entry('a/2', { uuid: 'u2' }), 1000);
      await store.join(room, entry('a/4', { uuid: 'u4' }), 999);
      expect(await store.roster(room, 10)).toEqual({
        members: [{ uuid: 'u1' }, { uuid: 'u2' }, { uuid: 'u3' }, { uuid: 'u4' }],
        total: 4,
      });
      await store.touch(room, 'a/4', 2000);
      await store.touch(room, 'missing', 3000);
      expect(await store.roster(room, 2)).toEqual({ members: [{ uuid: 'u4' }, { uuid: 'u1' }], total: 4 });
      expect(await store.roster(room, 0)).toEqual({ members: [], total: 4 });
      expect(await store.roster({ ...room, channel: 'empty' }, 10)).toEqual({ members: [], total: 0 });
    });

    it('keeps member objects with their JSON user type; identity is the user text, else the uuid', async () => {
      await store.join(room, entry('a/1', { uuid: 'u1', user: { id: 7, name: 'Ann' } }), 1003);
      await store.join(room, entry('a/2', { uuid: 'u2', user: 42 }), 1002);
      await store.join(room, entry('a/3', { uuid: 'u3', user: null }), 1001);
      await store.join(room, entry('a/4', { uuid: 'u4', user: 'zoë' }), 1000);
      const page = await store.identities(room, 0, 10);
      expect(page.identities).toEqual(['{"id":7,"name":"Ann"}', '42', 'u3', 'zoë']);
      expect(page.members).toEqual([
        { uuid: 'u1', user: { id: 7, name: 'Ann' } },
        { uuid: 'u2', user: 42 },
        { uuid: 'u3', user: null },
        { uuid: 'u4', user: 'zoë' },
      ]);
    });

    it('lists identities once each, most recently active first, ties by identity, in pages', async () => {
      await store.join(room, entry('a/1', { uuid: 'u1', user: 'carol' }), 1000);
      await store.join(room, entry('a/2', { uuid: 'u2', user: 'alice' }), 1001);
      await store.join(room, entry('b/1', { uuid: 'u3', user: 'carol' }, 'node-b'), 1005);
      await store.join(room, entry('a/3', { uuid: 'u4', user: 'bob' }), 1001);
      await store.join(room, entry('a/4', { uuid: 'u5', user: 'dave' }), 900);
      expect(await store.identities(room, 0, 10)).toEqual({
        identities: ['carol', 'alice', 'bob', 'dave'],
        members: [
          { uuid: 'u3', user: 'carol' },
          { uuid: 'u2', user: 'alice' },
          { uuid: 'u4', user: 'bob' },
          { uuid: 'u5', user: 'dave' },
        ],
        count: 4,
      });
      expect(await store.identities(room, 1, 2)).toMatchObject({ identities: ['alice', 'bob'], count: 4 });
      expect(await store.identities(room, 4, 2)).toEqual({ identities: [], members: [], count: 4 });

      await store.touch(room, 'a/4', 2000);
      expect((await store.identities(room, 0, 1)).identities).toEqual(['dave']);
      // carol's most recent entry leaves: her activity falls back to her other entry's
      await store.leave(room, 'b/1');
      expect(await store.identities(room, 0, 10)).toMatchObject({
        identities: ['dave', 'alice', 'bob', 'carol'],
        members: [{ uuid: 'u5' }, { uuid: 'u2' }, { uuid: 'u4' }, { uuid: 'u1', user: 'carol' }],
        count: 4,
      });
    });

    // A page of many identities reads each one's latest entry another way than a small page does
    // on Redis while `identconn` is a listpack (up to 512 fields): both must list the same.
    it.each([300, 600])(
      'lists the same latest entries in a large page as in small ones, with %i identities',
      async (count) => {
        const joins: Array<Promise<unknown>> = [];
        for (let i = 0; i < count; i++) {
          const user = `user-${i}`;
          joins.push(store.join(room, entry(`a/${i}`, { uuid: `a${i}`, user }), 1000 + i));
          // Even identities have a later second entry, in another order than they joined.
          if (i % 2 === 0) {
            joins.push(
              store.join(room, entry(`b/${i}`, { uuid: `b${i}`, user }, 'node-b'), 5000 + ((i * 7) % count)),
            );
          }
        }
        await Promise.all(joins);
        const latest = Array.from({ length: count }, (_, i) =>
          i % 2 === 0
            ? { at: 5000 + ((i * 7) % count), member: { uuid: `b${i}`, user: `user-${i}` } }
            : { at: 1000 + i, member: { uuid: `a${i}`, user: `user-${i}` } },
        ).sort((x, y) => y.at - x.at);
        const expected = latest.map((l) => l.member);

        const small = async (offset: number, limit: number): Promise<Member[]> => {
          const members: Member[] = [];
          for (let at = offset; at < offset + limit; at += 10) {
            members.push(...(await store.identities(room, at, Math.min(10, offset + limit - at))).members);
          }
          return members;
        };
        for (const [offset, limit] of [
          [0, 200],
          [150, 100],
        ] as const) {
          const page = await store.identities(room, offset, limit);
          expect(page.count).toBe(count);
          expect(page.members).toEqual(expected.slice(offset, offset + limit));
          expect(page.identities).toEqual(expected.slice(offset, offset + limit).map((m) => m.user));
          expect(await small(offset, limit)).toEqual(page.members);
        }

        const joined = await store.join(room, entry('c/1', { uuid: 'c1', user: 'newcomer' }), 9000, {
          of: 'identities',
          limit: 200,
        });
        expect(joined.listed).toEqual({
          members: [{ uuid: 'c1', user: 'newcomer' }, ...expected.slice(0, 199)],
          total: count + 1,
        });
      },
      60_000,
    );

    it('keeps protocols, channels and API keys apart', async () => {
      const v3 = { ...room, protocol: 'v3' as const };
      const other = { ...room, key: unique('other') };
      await store.join(room, entry('a/1', { uuid: 'u1' }), 1000);
      await store.join(v3, entry('a/2', { uuid: 'u2' }), 1000);
      await store.join(other, entry('a/3', { uuid: 'u3' }), 1000);
      expect((await store.roster(room, 10)).members).toEqual([{ uuid: 'u1' }]);
      expect((await store.roster(v3, 10)).members).toEqual([{ uuid: 'u2' }]);
      expect((await store.identities(other, 0, 10)).identities).toEqual(['u3']);
      expect(await store.leave(v3, 'a/1')).toBeNull();
    });

    it('lists every channel of a key with entries, by channel, filtered by protocol', async () => {
      await store.join({ ...room, channel: 'b-room' }, entry('a/1', { uuid: 'u1' }), 1000);
      await store.join({ ...room, channel: 'b-room' }, entry('a/2', { uuid: 'u2', user: 'x' }), 1001);
      await store.join({ ...room, channel: 'a-room', protocol: 'v3' }, entry('a/3', { uuid: 'u3' }), 1000);
      await store.join({ ...room, channel: 'c-room' }, entry('a/4', { uuid: 'u4' }), 1000);
      await store.join(
        { key: unique('other'), protocol: 'v4', channel: 'z' },
        entry('a/5', { uuid: 'u5' }),
        1000,
      );
      await store.leave({ ...room, channel: 'c-room' }, 'a/4');
      expect(await store.channels(key, all)).toEqual({
        channels: [
          { channel: 'a-room', protocol: 'v3', members: [{ uuid: 'u3' }], count: 1 },
          {
            channel: 'b-room',
            protocol: 'v4',
            members: [{ uuid: 'u2', user: 'x' }, { uuid: 'u1' }],
            count: 2,
          },
        ],
        total: 2,
      });
      expect(await store.channels(key, { ...all, protocol: 'v3' })).toEqual({
        channels: [{ channel: 'a-room', protocol: 'v3', members: [{ uuid: 'u3' }], count: 1 }],
        total: 1,
      });
      expect(await store.channels(unique('nobody'), all)).toEqual({ channels: [], total: 0 });
    });

    it('pages channels by name, both protocols of a channel together, with members capped per topic', async () => {
      const names = ['b', 'a-b', 'a', '__proto__', 'C', 'a.b'];
      for (const [i, channel] of names.entries()) {
        await store.join(
          { ...room, channel, protocol: 'v4' },
          entry(`a/${i}`, { uuid: `v4-${i}` }),
          1000 + i,
        );
        for (let m = 0; m < 3; m++) {
          await store.join(
            { ...room, channel, protocol: 'v3' },
            entry(`a/${i}-${m}`, { uuid: `v3-${i}-${m}` }),
            2000 + m,
          );
        }
      }
      // byte order: 'C' < '__proto__' < 'a' < 'a-b' < 'a.b' < 'b'
      const page = await store.channels(key, { offset: 1, limit: 2, membersPerChannel: 2 });
      expect(page).toEqual({
        channels: [
          {
            channel: '__proto__',
            protocol: 'v3',
            members: [{ uuid: 'v3-3-2' }, { uuid: 'v3-3-1' }],
            count: 3,
          },
          { channel: '__proto__', protocol: 'v4', members: [{ uuid: 'v4-3' }], count: 1 },
          { channel: 'a', protocol: 'v3', members: [{ uuid: 'v3-2-2' }, { uuid: 'v3-2-1' }], count: 3 },
          { channel: 'a', protocol: 'v4', members: [{ uuid: 'v4-2' }], count: 1 },
        ],
        total: 6,
      });
      const v4 = await store.channels(key, { protocol: 'v4', offset: 4, limit: 10, membersPerChannel: 0 });
      expect(v4.channels.map((c) => [c.channel, c.members.length, c.count])).toEqual([
        ['a.b', 0, 1],
        ['b', 0, 1],
      ]);
      expect(v4.total).toBe(6);
      await store.leave({ ...room, channel: 'b', protocol: 'v4' }, 'a/0');
      expect((await store.channels(key, { ...all, protocol: 'v4' })).total).toBe(5);
      expect((await store.channels(key, all)).total).toBe(6);
      expect(await store.channels(key, { ...all, offset: 6 })).toEqual({ channels: [], total: 6 });
    });

    it('lists byIdentity families one member per identity, its most recent entry, in the channel listing', async () => {
      const pusher: Topic = { key, protocol: 'pusher', channel: 'presence-room' };
      const v4: Topic = { ...pusher, protocol: 'v4' };
      const ada1 = { uuid: 'sock-a1', user: 'ada', info: { name: 'Ada' } };
      const ada2 = { uuid: 'sock-b1', user: 'ada', info: { name: 'Ada', tab: 2 } };
      const bob = { uuid: 'sock-a2', user: 'bob' };
      // Ada's two tabs on two nodes, Bob between them; a V4 user with two entries in the same channel.
      await store.join(pusher, entry('a/1', ada1, 'node-a'), 1000);
      await store.join(pusher, entry('a/2', bob, 'node-a'), 1001);
      await store.join(pusher, entry('b/1', ada2, 'node-b'), 1002);
      await store.join(v4, entry('a/3', { uuid: 'v4-1', user: 'carol' }), 1003);
      await store.join(v4, entry('b/2', { uuid: 'v4-2', user: 'carol' }, 'node-b'), 1004);
      const byIdentity = new Set(['pusher']);

      expect(await store.channels(key, { ...all, byIdentity })).toEqual({
        channels: [
          {
            channel: 'presence-room',
            protocol: 'v4',
            members: [
              { uuid: 'v4-2', user: 'carol' },
              { uuid: 'v4-1', user: 'carol' },
            ],
            count: 2,
          },
          { channel: 'presence-room', protocol: 'pusher', members: [ada2, bob], count: 2 },
        ],
        total: 1,
      });
      // Without it, every family is listed per entry, as before.
      expect((await store.channels(key, all)).channels[1]).toEqual({
        channel: 'presence-room',
        protocol: 'pusher',
        members: [ada2, bob, ada1],
        count: 3,
      });
      // Capped per topic: the most recently active users, the count still every user.
      expect(
        await store.channels(key, { ...all, protocol: 'pusher', membersPerChannel: 1, byIdentity }),
      ).toEqual({
        channels: [{ channel: 'presence-room', protocol: 'pusher', members: [ada2], count: 2 }],
        total: 1,
      });
      // Pages of one user: each user once, none skipped, whatever page the tabs fall on.
      const pages = await Promise.all([0, 1, 2].map((offset) => store.identities(pusher, offset, 1)));
      expect(pages.map((page) => page.members)).toEqual([[ada2], [bob], []]);
      expect(pages.map((page) => page.count)).toEqual([2, 2, 2]);

      // Ada's most recent tab closes: she is shown by the other one; her last one: she is gone.
      await store.leave(pusher, 'b/1');
      expect((await store.channels(key, { ...all, protocol: 'pusher', byIdentity })).channels).toEqual([
        { channel: 'presence-room', protocol: 'pusher', members: [bob, ada1], count: 2 },
      ]);
      await store.leave(pusher, 'a/1');
      expect((await store.channels(key, { ...all, protocol: 'pusher', byIdentity })).channels).toEqual([
        { channel: 'presence-room', protocol: 'pusher', members: [bob], count: 1 },
      ]);
      expect(await store.identities(pusher, 0, 10)).toEqual({
        identities: ['bob'],
        members: [bob],
        count: 1,
      });
      await store.leave(pusher, 'a/2');
      expect(await store.channels(key, { ...all, protocol: 'pusher', byIdentity })).toEqual({
        channels: [],
        total: 0,
      });
    });

    it("removes a node's entries only, reporting identities still present elsewhere as not left", async () => {
      const lobby = { ...room, channel: 'lobby', protocol: 'v3' as const };
      await store.join(room, entry('a/1', { uuid: 'u1', user: 'alice' }, 'node-a'), 1000);
      await store.join(room, entry('b/1', { uuid: 'u2', user: 'alice' }, 'node-b'), 1001);
      await store.join(room, entry('a/2', { uuid: 'u3', user: 'bob' }, 'node-a'), 1002);
      await store.join(lobby, entry('a/3', { uuid: 'u4' }, 'node-a'), 1003);
      const removed = await store.removeNode('node-a');
      const byUuid = (x: { member: Member }, y: { member: Member }): number =>
        x.member.uuid < y.member.uuid ? -1 : 1;
      expect(removed.sort(byUuid)).toEqual([
        {
          topic: room,
          member: { uuid: 'u1', user: 'alice' },
          lastOfIdentity: false,
          identityCount: expect.any(Number),
        },
        {
          topic: room,
          member: { uuid: 'u3', user: 'bob' },
          lastOfIdentity: true,
          identityCount: expect.any(Number),
        },
        { topic: lobby, member: { uuid: 'u4' }, lastOfIdentity: true, identityCount: 0 },
      ]);
      expect(await store.roster(room, 10)).toEqual({ members: [{ uuid: 'u2', user: 'alice' }], total: 1 });
      expect((await store.channels(key, all)).channels).toEqual([
        { channel: 'room', protocol: 'v4', members: [{ uuid: 'u2', user: 'alice' }], count: 1 },
      ]);
      expect(await store.removeNode('node-a')).toEqual([]);
      expect(await store.leave(room, 'a/1')).toBeNull();
    });

    it('reports each removal exactly once when two survivors remove the same node at once', async () => {
      const dead = unique('dead');
      for (let i = 0; i < 50; i++) {
        await store.join(
          { ...room, channel: `ch${i % 5}` },
          entry(`${dead}/${i}`, { uuid: `u${i}` }, dead),
          1000 + i,
        );
      }
      const [first, second] = await Promise.all([store.removeNode(dead), store.removeNode(dead)]);
      const uuids = [...first, ...second].map((r) => r.member.uuid).sort();
      expect(uuids).toEqual(Array.from({ length: 50 }, (_, i) => `u${i}`).sort());
      expect(await store.channels(key, all)).toEqual({ channels: [], total: 0 });
    });

    it('removes a node of many entries, reporting each identity as left exactly once', async () => {
      const dead = unique('dead');
      // 450 entries (more than one cleanup step of the Redis engine), 3 per user, over 5 channels
      await Promise.all(
        Array.from({ length: 450 }, (_, i) =>
          store.join(
            { ...room, channel: `ch${i % 5}` },
            entry(`${dead}/${i}`, { uuid: `u${i}`, user: `user-${Math.floor(i / 15)}-${i % 5}` }, dead),
            1000 + i,
          ),
        ),
      );
      await store.join(
        { ...room, channel: 'ch0' },
        entry('live/1', { uuid: 'x', user: 'user-0-0' }, 'live'),
        5000,
      );
      const [first, second] = await Promise.all([store.removeNode(dead), store.removeNode(dead)]);
      const removed = [...first, ...second];
      expect(removed).toHaveLength(450);
      const left = removed
        .filter((r) => r.lastOfIdentity)
        .map((r) => `${r.topic.channel} ${String(r.member.user)}`);
      expect(new Set(left).size).toBe(left.length);
      expect(left).toHaveLength(149);
      expect(left).not.toContain('ch0 user-0-0');
      expect((await store.channels(key, all)).channels).toEqual([
        { channel: 'ch0', protocol: 'v4', members: [{ uuid: 'x', user: 'user-0-0' }], count: 1 },
      ]);
    });

    it('moves an entry to the node of its latest join', async () => {
      await store.join(room, entry('x/1', { uuid: 'u1' }, 'node-a'), 1000);
      await store.join(room, entry('x/1', { uuid: 'u1' }, 'node-b'), 1001);
      expect(await store.removeNode('node-a')).toEqual([]);
      expect(await store.removeNode('node-b')).toHaveLength(1);
    });

    it("walks a node's entries, across keys, protocols and channels, and no other node's", async () => {
      const node = unique('node');
      const other = { key: unique('key'), protocol: 'v3', channel: 'lobby' } as const;
      const expected: string[] = [];
      for (let i = 0; i < 25; i++) {
        const topic = i % 3 === 0 ? other : i % 3 === 1 ? room : { ...room, protocol: 'v3' as const };
        await store.join(topic, entry(`${node}/${i}`, { uuid: `u${i}` }, node), 1000 + i);
        expected.push(`${topic.key}|${topic.protocol}|${topic.channel}|${node}/${i}`);
      }
      await store.join(room, entry('elsewhere/1', { uuid: 'e' }, unique('node')), 2000);
      await store.leave(other, `${node}/0`);
      expected.splice(expected.indexOf(`${other.key}|v3|lobby|${node}/0`), 1);

      const seen = new Set<string>();
      for await (const batch of store.nodeEntries(node, 4)) {
        expect(batch.length).toBeGreaterThan(0);
        for (const { topic, connId } of batch)
          seen.add(`${topic.key}|${topic.protocol}|${topic.channel}|${connId}`);
      }
      expect([...seen].sort()).toEqual(expected.sort());
      const none: unknown[] = [];
      for await (const batch of store.nodeEntries(unique('node'))) none.push(...batch);
      expect(none).toEqual([]);
    });
  });
}

/**
 * A deployment's topic families are registered, not built in: with three of them, a channel is
 * listed while any family holds entries in it, each family's topic in their registered order.
 */
export function describePresenceFamiliesContract(
  name: string,
  createStore: (families: readonly string[]) => Promise<PresenceStore>,
): void {
  describe(`PresenceStore with three topic families: ${name}`, () => {
    const families = ['v3', 'v4', 'x3'];
    const all = { offset: 0, limit: 100, membersPerChannel: 100 };

    it("lists a channel while any family holds entries, in the families' order", async () => {
      const store = await createStore(families);
      const key = unique('key');
      const topic = (protocol: string): Topic => ({ key, protocol, channel: 'room' });
      const member = { uuid: 'u1', user: 'alice' };
      await store.join(topic('x3'), { connId: 'a/1', nodeId: 'a', member }, 1000);
      await store.join(topic('v3'), { connId: 'a/2', nodeId: 'a', member }, 1001);
      expect(await store.channels(key, all)).toEqual({
        channels: [
          { channel: 'room', protocol: 'v3', members: [member], count: 1 },
          { channel: 'room', protocol: 'x3', members: [member], count: 1 },
        ],
        total: 1,
      });
      await store.leave(topic('v3'), 'a/2');
      expect(await store.channels(key, all)).toEqual({
        channels: [{ channel: 'room', protocol: 'x3', members: [member], count: 1 }],
        total: 1,
      });
      expect((await store.channels(key, { ...all, protocol: 'x3' })).total).toBe(1);
      expect((await store.channels(key, { ...all, protocol: 'v3' })).total).toBe(0);
      await store.leave(topic('x3'), 'a/1');
      expect(await store.channels(key, all)).toEqual({ channels: [], total: 0 });
    });
  });
}
