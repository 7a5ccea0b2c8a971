import { createServer } from 'node:net';
import { createLogger, createMemoryEngine, createMemoryState, loadConfig } from '@switchboard/core';
import { createGateway } from '../src/gateway';

describe('listen', () => {
  it('a gateway that cannot bind its port rejects and leaves the node registry', async () => {
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    const address = taken.address();
    const port = typeof address === 'object' && address ? address.port : 0;
    const config = loadConfig(
      {},
      { PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'silent', NODE_ID: 'cannot-bind' },
    );
    const engine = createMemoryEngine(createMemoryState());
    const gateway = createGateway({ config, engine, logger: createLogger({ level: 'silent' }) });
    try {
      await expect(gateway.listen()).rejects.toThrow(`Cannot listen on 127.0.0.1:${port}`);
      // Registered nodes all count as expired with a timeout of 0 far enough ahead.
      expect(await engine.nodes.expired(Date.now() + 60_000, 0)).not.toContain('cannot-bind');
    } finally {
      await gateway.close();
      await engine.close();
      await new Promise((resolve) => taken.close(resolve));
    }
  });
});
