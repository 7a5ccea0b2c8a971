import WebSocket from 'ws';
import { connectClient, createTestKey, postJson, startGateway } from '@switchboard/testing';

it('probe', async () => {
  const node = await startGateway({});
  const key = await createTestKey(node.engine);
  const a = await connectClient(node.wsUrl('/v3/room', { api_key: key.key, notify_self: '1' }));
  a.socket.send(Buffer.from([0x7b, 0xff, 0xfe, 0x41]), { binary: false });
  const r = await Promise.race([
    a.next().then((f) => ({ frame: f.text })),
    a.closed.then((c) => ({ closed: c })),
  ]);
  console.log('invalid utf8 v3', JSON.stringify(r));
  const b = await connectClient(node.wsUrl('/v4/room', { api_key: key.key, notify_self: '1' }));
  b.socket.send(Buffer.from([0xc3, 0x28]), { binary: false });
  const r2 = await Promise.race([
    b.next().then((f) => ({ frame: f.text })),
    b.closed.then((c) => ({ closed: c })),
  ]);
  console.log('invalid utf8 v4', JSON.stringify(r2));
  // deep nesting
  const deep = '['.repeat(30000) + ']'.repeat(30000);
  let res = await fetch(`${node.httpUrl}/api/publish`, {
    method: 'POST',
    body: `{"key":"${key.key}","secret":"${key.secret}","channel":"room","message":${deep}}`,
  });
  console.log('deep', res.status, (await res.text()).slice(0, 200));
  res = await fetch(`${node.httpUrl}/api/publish`, { method: 'POST', body: deep });
  console.log('deep top', res.status, (await res.text()).slice(0, 200));
  // invalid utf8 body
  res = await fetch(`${node.httpUrl}/api/publish`, {
    method: 'POST',
    body: Buffer.concat([
      Buffer.from(`{"key":"${key.key}","secret":"${key.secret}","channel":"room","message":"`),
      Buffer.from([0xff, 0xfe]),
      Buffer.from('"}'),
    ]),
  });
  console.log('bad utf8', res.status, await res.text());
  // 413 with content-length
  try {
    res = await fetch(`${node.httpUrl}/api/publish`, { method: 'POST', body: 'x'.repeat(70000) });
    console.log('413 cl', res.status, await res.text());
  } catch (e) {
    console.log('413 cl error', e);
  }
  // 413 chunked
  try {
    const stream = new ReadableStream({
      start(c) {
        c.enqueue(new TextEncoder().encode('y'.repeat(70000)));
        c.close();
      },
    });
    res = await fetch(`${node.httpUrl}/api/publish`, {
      method: 'POST',
      body: stream,
      duplex: 'half',
    } as RequestInit);
    console.log('413 chunked', res.status, await res.text());
  } catch (e) {
    console.log('413 chunked error', e);
  }
  // empty
  res = await fetch(`${node.httpUrl}/api/publish`, { method: 'POST' });
  console.log('empty', res.status, await res.text());
  res = await fetch(`${node.httpUrl}/api/publish`, { method: 'GET' });
  console.log('get', res.status, res.headers.get('allow'), await res.text());
  res = await fetch(`${node.httpUrl}/api/health`);
  console.log('health', res.status, await res.text());
  console.log(
    await postJson(`${node.httpUrl}/api/v4/members`, {
      key: key.key,
      secret: key.secret,
      channel: 'room',
      paginate: 1,
      page: 0,
    }),
  );
  // v4 control frames
  const c = await connectClient(node.wsUrl('/v4/main', { api_key: key.key }));
  c.send({ event: 'system::xyz', data: {} });
  c.send({ event: 'system::subscribe' });
  c.send({ event: 'system::subscribe', data: { channel: 'bad name!' } });
  c.send({ event: 'system::subscribe', data: { channel: 5 } });
  c.send({ event: 'system::get_members', data: { channel: 'main' } });
  c.send({
    event: 'system::subscribe',
    data: { channel: 'presence-x', uuid: 7, jwt: 3, presence: 'yes', user: { a: 1 } },
  });
  c.send({ event: 'system::unsubscribe', data: { channel: 'main' } });
  c.send({ event: 'chat', 'system::channel': 'nope' });
  c.send({ event: 'chat', 'system::to': 5 });
  c.send({ event: 'system:xyz' });
  for (let i = 0; i < 11; i++) console.log('v4 reply', (await c.next()).text);
  await c.expectSilence(undefined, 300);
  const d = await connectClient(node.wsUrl('/v3/main', { api_key: key.key }));
  d.send({ event: 'system::xyz', data: {} });
  d.send('{"event":"system::subscribe"}');
  console.log('v3', (await d.next()).text, (await d.next()).text);
  const bad = new WebSocket(node.wsUrl('/v4/bad%20name', { api_key: key.key }));
  bad.on('message', (m) => console.log('bad msg', m.toString()));
  const cl = await new Promise((r) => bad.on('close', (code, reason) => r([code, reason.toString()])));
  console.log('bad close', cl);
  const nope = await fetch(`${node.httpUrl}/v4/`, { headers: { upgrade: 'websocket' } });
  console.log('nope', nope.status);
  await node.close();
});
