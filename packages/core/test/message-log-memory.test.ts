import { MemoryMessageLog } from '../src/logs/message-log-memory';
import { describeMessageLogContract } from './contracts/message-log.contract';

describeMessageLogContract('memory', async (capacity) => new MemoryMessageLog(capacity));
