import { createMemoryState } from '../src/engine';
import { describeWebhooksContract } from './contracts/webhooks.contract';

describeWebhooksContract('memory', async () => {
  const state = createMemoryState();
  return { counts: state.counts, presence: state.presence, webhooks: state.webhooks, keys: state.keys };
});
