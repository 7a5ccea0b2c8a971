import { createMemoryQuotas } from '../src/quotas/quotas-memory';
import { describeQuotasContract } from './contracts/quotas.contract';

// Gateways on the memory engine share one state, hence one Quotas object.
describeQuotasContract('memory', async (now) => {
  const quotas = createMemoryQuotas(now);
  return [quotas, quotas];
});
