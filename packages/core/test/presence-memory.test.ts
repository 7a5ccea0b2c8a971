import { MemoryPresenceStore } from '../src/presence/presence-memory';
import { describePresenceContract, describePresenceFamiliesContract } from './contracts/presence.contract';

describePresenceContract('memory', async () => new MemoryPresenceStore());
describePresenceFamiliesContract('memory', async (families) => new MemoryPresenceStore(undefined, families));
