import { createMemoryState } from '../src/engine';
import { describeWebhooksContract } from './contracts/webhooks.contract';

describeWebhooksContract('memory', async (limits) => {
  const state = createMemoryState(limits ? { webhookQueue: limits } : {});
  return { counts: state.counts, presence: state.presence, webhooks: state.webhooks, keys: state.keys };
});
