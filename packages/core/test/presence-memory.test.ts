import { MemoryPresenceStore } from '../src/presence/presence-memory';
import { describePresenceContract } from './contracts/presence.contract';

describePresenceContract('memory', async () => new MemoryPresenceStore());
