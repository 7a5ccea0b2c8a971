import { MemoryBroker, MemoryBus } from '../src/broker/broker-memory';
import { describeBrokerContract } from './contracts/broker.contract';

describeBrokerContract('memory', async (count) => {
  const bus = new MemoryBus();
  const brokers = Array.from({ length: count }, () => new MemoryBroker(bus));
  return { brokers, close: async () => void (await Promise.all(brokers.map((b) => b.close()))) };
});
