import type { NodeRegistry } from '../../src/nodes/node-registry';
import { unique } from '../support/wait';

/** The NodeRegistry port's contract (node-registry.ts); each `createRegistry()` starts empty. */
export function describeNodeRegistryContract(
  name: string,
  createRegistry: () => Promise<NodeRegistry>,
): void {
  describe(`NodeRegistry contract: ${name}`, () => {
    let registry: NodeRegistry;

    beforeEach(async () => {
      registry = await createRegistry();
    });

    it('lists nodes whose last heartbeat is older than the timeout', async () => {
      const [a, b, c] = [unique('a'), unique('b'), unique('c')];
      await registry.heartbeat(a, 1000);
      await registry.heartbeat(b, 5000);
      await registry.heartbeat(c, 2000);
      await registry.heartbeat(c, 9000);
      expect((await registry.expired(10_000, 5000)).sort()).toEqual([a]);
      expect((await registry.expired(10_001, 5000)).sort()).toEqual([a, b].sort());
      await registry.leave(a);
      expect(await registry.expired(10_001, 5000)).toEqual([b]);
    });

    it('gives a claim to exactly one caller', async () => {
      const dead = unique('dead');
      await registry.heartbeat(dead, 1000);
      const claims = await Promise.all(Array.from({ length: 5 }, () => registry.claim(dead)));
      expect(claims.filter(Boolean)).toHaveLength(1);
      expect(await registry.expired(100_000, 1000)).toEqual([]);
      expect(await registry.claim(dead)).toBe(false);
      await registry.heartbeat(dead, 2000);
      expect(await registry.expired(100_000, 1000)).toEqual([dead]);
    });
  });
}
