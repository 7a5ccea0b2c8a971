import request from 'supertest';
import { authA, authB, KEY_A, KEY_B, populatedApp } from './fixtures';

describe('key isolation: nothing of key A is visible with key B', () => {
  test('key B sees none of the data key A owns', async () => {
    const { app } = await populatedApp();
    await request(app).get('/api/domains').set(authB).expect(200, []);
    await request(app).get('/api/connections').set(authB).expect(200, []);
    await request(app).get('/api/connections?page=1&limit=100').set(authB).expect(200, {
      data: [],
      total: 0,
      page: 1,
      limit: 100,
      totalPages: 0,
    });
    await request(app).get('/api/connections/sum').set(authB).expect(200, { connection_count: 0 });
    await request(app).get('/api/logs').set(authB).expect(200, []);
    await request(app).get('/api/members').set(authB).expect(200, {});
  });

  test("one key's secret never opens another key", async () => {
    const { app } = await populatedApp();
    await request(app).get('/api/logs').set({ key: KEY_B.key, secret: KEY_A.secret }).expect(401);
    await request(app).get('/api/logs').set({ key: KEY_A.key, secret: KEY_B.secret }).expect(401);
  });

  test('data on the same channel names stays with its key', async () => {
    const { app, engine } = await populatedApp();
    await engine.counts.increment('node-1', KEY_B.key, 'room-1');
    await engine.presence.join(
      { key: KEY_B.key, protocol: 'v3', channel: 'room-1' },
      { connId: 'node-1/99', nodeId: 'node-1', member: { uuid: 'b-user' } },
      5,
    );
    await engine.logs.append(KEY_B.key, {
      id: 'b-1',
      channel: 'room-1',
      protocol: 'v3',
      source: 'api',
      message: 'for B',
      timestamp: new Date(0).toISOString(),
    });
    const b = await request(app).get('/api/members').set(authB).expect(200);
    expect(b.body).toEqual({ 'room-1': [{ uuid: 'b-user', protocol: 'v3' }] });
    await request(app)
      .get('/api/connections')
      .set(authB)
      .expect(200, [{ channel_id: 'room-1', room_id: 'room-1', connection_count: 1 }]);
    expect((await request(app).get('/api/logs').set(authB)).body.map((r: { id: string }) => r.id)).toEqual([
      'b-1',
    ]);
    const a = await request(app).get('/api/members').set(authA).expect(200);
    expect(JSON.stringify(a.body)).not.toContain('b-user');
    expect(
      (await request(app).get('/api/logs').set(authA)).body.map((r: { id: string }) => r.id),
    ).not.toContain('b-1');
    await request(app).get('/api/connections/sum').set(authA).expect(200, { connection_count: 8 });
  });
});
