import {
  createLogger,
  createMemoryEngine,
  createMemoryState,
  EngineUnavailableError,
  loadConfig,
} from '@switchboard/core';
import type { ApiKeyRecord, Engine } from '@switchboard/core';
import { createGateway } from '@switchboard/gateway';
import type { Gateway } from '@switchboard/gateway';
import { connectClient, createTestKey } from '@switchboard/testing';
import type { TestClient } from '@switchboard/testing';
import { failingPort } from '../../account-api/test/fixtures';

/**
 * A V4 subscribe that fails only because the engine is unreachable is answered with
 * `system::subscribe_error` marked `"retry": true` (docs/protocol.md, "Control frames"), so a
 * client subscribes again instead of giving the channel up; a refusal of the request itself is not.
 */

let gateway: Gateway;
let port: number;
let key: ApiKeyRecord;
const clients: TestClient[] = [];

beforeAll(async () => {
  const config = loadConfig({}, { PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'silent', NODE_ID: 'no-history' });
  const healthy = createMemoryEngine(createMemoryState());
  // History reads fail as they do while Redis is down; everything else works.
  const engine: Engine = {
    ...healthy,
    history: failingPort(healthy.history, () => new EngineUnavailableError()),
  };
  key = await createTestKey(engine);
  gateway = createGateway({ config, engine, logger: createLogger({ level: 'silent' }) });
  port = await gateway.listen();
});

afterAll(async () => {
  for (const client of clients) client.close();
  await gateway.close();
});

it('marks a subscribe refused for an unreachable engine retry: true, and only that one', async () => {
  const client = await connectClient(`ws://127.0.0.1:${port}/v4/main?api_key=${key.key}`);
  clients.push(client);
  client.send({
    event: 'system::subscribe',
    data: { channel: 'side', recover: true, since: 3, epoch: 'e1' },
  });
  const refused = await client.nextEvent('system::subscribe_error');
  expect(refused.json?.['data']).toEqual({
    channel: 'side',
    error: 'History is unavailable (the engine is unreachable); try again with since and epoch',
    retry: true,
  });
  client.send({ event: 'system::subscribe', data: { channel: 'bad name!' } });
  const invalid = await client.nextEvent('system::subscribe_error');
  expect(invalid.json?.['data']).not.toHaveProperty('retry');
  client.send({ event: 'system::subscribe', data: { channel: 'plain' } });
  expect((await client.nextEvent('system::subscribe_success')).json?.['data']).toEqual({ channel: 'plain' });
});
