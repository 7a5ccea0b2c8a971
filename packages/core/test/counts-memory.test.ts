import { MemoryConnectionCounts } from '../src/counts/counts-memory';
import { describeCountsContract } from './contracts/counts.contract';

describeCountsContract('memory', async () => new MemoryConnectionCounts());
