import {
  createLogger,
  createMemoryEngine,
  createMemoryState,
  EngineUnavailableError,
  loadConfig,
} from '@switchboard/core';
import type { ApiKeyRecord, Engine, MemoryState, Topic } from '@switchboard/core';
import { createGateway } from '@switchboard/gateway';
import type { Gateway } from '@switchboard/gateway';
import { createTestKey, startGateway } from '@switchboard/testing';
import type { TestGateway } from '@switchboard/testing';
import { OpenApiChecker } from '../../account-api/test/openapi-document';
import { failingPort } from '../../account-api/test/fixtures';

/** Real cluster API responses checked against docs/openapi.yaml, every documented status. */
const GATEWAY_SERVER = 'Gateway';

const checker = new OpenApiChecker();
let state: MemoryState;
let node: TestGateway;
let limited: TestGateway;
let key: ApiKeyRecord;
let broken: { gateway: Gateway; url: string; engine: Engine };

async function call(base: string, method: string, path: string, body?: unknown) {
  const response = await fetch(`${base}${path}`, {
    method,
    headers: { 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
  });
  const text = await response.text();
  const headers: Record<string, string> = {};
  response.headers.forEach((value, name) => (headers[name] = value));
  return { status: response.status, body: JSON.parse(text) as unknown, headers };
}

const post = async (path: string, body: unknown, base = node.httpUrl) => {
  const response = await call(base, 'POST', path, body);
  checker.check('post', path, response);
  return response;
};

beforeAll(async () => {
  state = createMemoryState();
  node = await startGateway({ memoryState: state, env: { MAX_MESSAGE_BYTES: '2048' } });
  key = await createTestKey(node.engine);
  limited = await startGateway({ memoryState: state, env: { API_REQUESTS_PER_SECOND: '1' } });
  const join = (topic: Topic, connId: string, member: { uuid: string; user?: string }, now: number) =>
    state.presence.join(topic, { connId, nodeId: 'elsewhere', member }, now);
  await join(
    { key: key.key, protocol: 'v3', channel: 'room-1' },
    'elsewhere/1',
    { uuid: 'u1', user: 'alice' },
    1,
  );
  await join({ key: key.key, protocol: 'v3', channel: 'room-1' }, 'elsewhere/2', { uuid: 'u2' }, 2);
  await join(
    { key: key.key, protocol: 'v4', channel: 'room-4' },
    'elsewhere/3',
    { uuid: 'u3', user: 'bob' },
    3,
  );
  await join({ key: key.key, protocol: 'v4', channel: 'room-4' }, 'elsewhere/4', { uuid: 'u4' }, 4);

  const config = loadConfig(
    {},
    { PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'silent', NODE_ID: 'broken-node' },
  );
  const healthy = createMemoryEngine(state);
  const fail = () => new EngineUnavailableError();
  const engine: Engine = {
    ...healthy,
    isAvailable: () => false,
    broker: failingPort(healthy.broker, fail, ['publish', 'publishControl']),
    presence: failingPort(healthy.presence, fail),
    history: failingPort(healthy.history, fail),
  };
  const gateway = createGateway({ config, engine, logger: createLogger({ level: 'silent' }) });
  broken = { gateway, engine, url: `http://127.0.0.1:${await gateway.listen()}` };
});

afterAll(async () => {
  await node.close();
  await limited.close();
  await broken.gateway.close();
});

describe('docs/openapi.yaml: cluster API', () => {
  const creds = () => ({ key: key.key, secret: key.secret });

  test('200 responses of every endpoint match', async () => {
    const published = await post('/api/publish', {
      ...creds(),
      channel: 'room-1',
      message: { event: 'e', data: 1 },
    });
    expect(published.body).toEqual({ success: true, offset: 1, epoch: expect.any(String) });
    await post('/api/v4/publish', { ...creds(), channel: 'room-4', message: 'text' });
    const history = await post('/api/history', { ...creds(), channel: 'room-1', since: 0 });
    expect(history.body).toMatchObject({
      offset: 1,
      publications: [{ offset: 1, message: '{"event":"e","data":1}' }],
    });
    await post('/api/v4/history', { ...creds(), channel: 'room-4', limit: 1 });
    await post('/api/pusher/history', { ...creds(), channel: 'room-p', limit: 1 });
    const one = await post('/api/members', { ...creds(), channel: 'room-1' });
    expect(one.body).toMatchObject({ members: [{ uuid: 'u2' }, { uuid: 'u1', user: 'alice' }] });
    const all = await post('/api/members', creds());
    expect(all.body).toMatchObject({ channels: { 'room-1': expect.any(Array) } });
    const v4 = await post('/api/v4/members', { ...creds(), channel: 'room-4' });
    expect(v4.body).toEqual({ success: true, members: ['u4', 'bob'], count: 2 });
    const paged = await post('/api/v4/members', {
      ...creds(),
      channel: 'room-4',
      paginate: 1,
      page: 2,
      limit: 1,
    });
    expect(paged.body).toEqual({
      success: true,
      members: ['bob'],
      count: 2,
      page: 2,
      limit: 1,
      totalPages: 2,
    });
    await post('/api/kick', { ...creds(), reason: 'bye' });
    await post('/api/v4/kick', { ...creds(), user: 'nobody', channel: 'room-4' });
    checker.check('get', '/api/health', await call(node.httpUrl, 'GET', '/api/health'));
    checker.check('get', '/api/live', await call(node.httpUrl, 'GET', '/api/live'));
    checker.check('get', '/api/live', await call(broken.url, 'GET', '/api/live'));
  });

  test('400, 401, 413 and 503 responses of every endpoint match', async () => {
    const bodies: Record<string, Record<string, unknown>> = {
      '/api/publish': { channel: 'room-1', message: 'm' },
      '/api/v4/publish': { channel: 'room-4', message: 'm' },
      '/api/members': { channel: 'room-1' },
      '/api/v4/members': { channel: 'room-4' },
      '/api/history': { channel: 'room-1' },
      '/api/v4/history': { channel: 'room-4' },
      '/api/pusher/history': { channel: 'room-p' },
      '/api/kick': {},
      '/api/v4/kick': {},
    };
    for (const [path, body] of Object.entries(bodies)) {
      expect((await post(path, '{not json')).status).toBe(400);
      expect((await post(path, { ...body, key: key.key })).status).toBe(400);
      expect((await post(path, { ...body, key: key.key, secret: 'wrong' })).status).toBe(401);
      expect((await post(path, { ...body, ...creds(), padding: 'x'.repeat(4096) })).status).toBe(413);
      expect((await post(path, { ...body, ...creds() }, broken.url)).status).toBe(503);
    }
    checker.check('get', '/api/health', await call(broken.url, 'GET', '/api/health'));
  });

  test('404 and 405 match their documented responses', async () => {
    checker.checkComponent('ClusterNotFound', await call(node.httpUrl, 'POST', '/api/nothing', {}));
    checker.checkComponent('ClusterMethodNotAllowed', await call(node.httpUrl, 'GET', '/api/publish'));
    checker.checkComponent('ClusterMethodNotAllowed', await call(node.httpUrl, 'POST', '/api/health', {}));
  });

  test('429 responses of every endpoint match', async () => {
    for (const path of [
      '/api/publish',
      '/api/v4/publish',
      '/api/members',
      '/api/v4/members',
      '/api/history',
      '/api/v4/history',
      '/api/pusher/history',
      '/api/kick',
      '/api/v4/kick',
    ]) {
      const body = { ...creds(), channel: 'room-9', message: 'm' };
      const trimmed = path.endsWith('kick')
        ? creds()
        : path.endsWith('members') || path.endsWith('history')
          ? { ...creds(), channel: 'room-9' }
          : body;
      // Ten requests take far less than two seconds, so at least two share a one-second window.
      let limitedReply: Awaited<ReturnType<typeof post>> | undefined;
      for (let i = 0; i < 10 && !limitedReply; i++) {
        const reply = await post(path, trimmed, limited.httpUrl);
        if (reply.status === 429) limitedReply = reply;
      }
      expect(limitedReply?.headers['retry-after']).toBe('1');
    }
  });

  test('every documented status of the cluster API was exercised', () => {
    const missing = checker.documented(GATEWAY_SERVER).filter((entry) => !checker.seen.has(entry));
    expect(missing).toEqual([]);
  });
});
