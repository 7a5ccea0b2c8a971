import { MemoryBroker, MemoryBus } from '../src/broker/broker-memory';
import type { ControlCommand } from '../src/broker/broker';
import { describeBrokerContract } from './contracts/broker.contract';

/** A bus member that executes control commands and never replies, as an older node does. */
class SilentBroker extends MemoryBroker {
  override receiveControl(command: ControlCommand): number | undefined {
    super.receiveControl(command);
    return undefined;
  }
}

describeBrokerContract('memory', async (count) => {
  const bus = new MemoryBus();
  const brokers: MemoryBroker[] = Array.from({ length: count }, () => new MemoryBroker(bus));
  return {
    brokers,
    addBroker: async () => {
      const broker = new MemoryBroker(bus);
      brokers.push(broker);
      return broker;
    },
    addSilentReceiver: async () => {
      brokers.push(new SilentBroker(bus));
    },
    close: async () => void (await Promise.all(brokers.map((b) => b.close()))),
  };
});
