import { MemoryNodeRegistry } from '../src/nodes/node-registry-memory';
import { describeNodeRegistryContract } from './contracts/node-registry.contract';

describeNodeRegistryContract('memory', async () => new MemoryNodeRegistry());
