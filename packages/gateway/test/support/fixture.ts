import { createMemoryState } from '@switchboard/core';
import type { ApiKeyRecord } from '@switchboard/core';
import { connectClient, createTestKey, postJson, startGateway } from '@switchboard/testing';
import type { TestClient, TestGateway } from '@switchboard/testing';

export interface GatewayFixture {
  /** The gateway of this test file (memory engine, port 0). */
  readonly node: TestGateway;
  /** A key stored before the first test. */
  readonly key: ApiKeyRecord;
  /** Connects a client with the fixture's key (or `apiKey`); it is closed after the test. */
  open(path: string, query?: Record<string, string>, apiKey?: string): Promise<TestClient>;
  /** POSTs to the cluster API with the credentials of `creds` (the fixture's key by default). */
  call(path: string, body: Record<string, unknown>, creds?: ApiKeyRecord): ReturnType<typeof postJson>;
  /** Closes `client` after the test. */
  track(client: TestClient): TestClient;
}

/** One gateway per test file: started before all tests, clients closed after each, stopped after all. */
export function useGateway(env: Record<string, string> = {}): GatewayFixture {
  let node: TestGateway | undefined;
  let key: ApiKeyRecord | undefined;
  const clients: TestClient[] = [];
  const fixture: GatewayFixture = {
    get node() {
      if (!node) throw new Error('the gateway starts in beforeAll');
      return node;
    },
    get key() {
      if (!key) throw new Error('the key is created in beforeAll');
      return key;
    },
    track(client) {
      clients.push(client);
      return client;
    },
    async open(path, query = {}, apiKey) {
      return fixture.track(
        await connectClient(fixture.node.wsUrl(path, { api_key: apiKey ?? fixture.key.key, ...query })),
      );
    },
    call(path, body, creds = fixture.key) {
      return postJson(`${fixture.node.httpUrl}${path}`, { key: creds.key, secret: creds.secret, ...body });
    },
  };
  beforeAll(async () => {
    node = await startGateway({ memoryState: createMemoryState(), env });
    key = await createTestKey(node.engine);
  });
  afterEach(() => {
    for (const client of clients.splice(0)) client.close();
  });
  afterAll(() => node?.close());
  return fixture;
}
