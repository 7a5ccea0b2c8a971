import type { Quotas } from '../../src/quotas/quotas';

/**
 * Quotas contract: `make(now)` gives two nodes' views of the same counters (two gateways), both
 * reading the day from `now`. Keys are fresh per test, so windows never carry over.
 */
export function describeQuotasContract(
  name: string,
  make: (now: () => number) => Promise<[Quotas, Quotas]>,
): void {
  describe(`Quotas (${name})`, () => {
    let clock = Date.UTC(2026, 10, 23, 23, 59, 0);
    let a: Quotas;
    let b: Quotas;
    let key: string;
    beforeEach(async () => {
      clock = Date.UTC(2026, 10, 23, 23, 59, 0);
      [a, b] = await make(() => clock);
      key = `q${Math.random().toString(36).slice(2)}`;
    });

    it('counts cluster API requests per second across nodes and names the limit', async () => {
      const answers = [];
      for (let i = 0; i < 5; i++) answers.push(await (i % 2 ? b : a).takeApiRequest(key, 3));
      expect(answers.slice(0, 3)).toEqual([undefined, undefined, undefined]);
      expect(answers[3]).toMatchObject({ limit: 'apiRequestsPerSecond', retryAfterSeconds: 1 });
      expect(answers[3]!.message).toBe(
        'Rate limit exceeded: more than 3 cluster API requests per second for this API key (apiRequestsPerSecond)',
      );
      expect(await a.takeApiRequest(`${key}-other`, 3)).toBeUndefined();
    });

    it('treats 0 as unlimited', async () => {
      for (let i = 0; i < 20; i++) {
        expect(await a.takeApiRequest(key, 0)).toBeUndefined();
        expect(await b.takePublish(key, 0, 0)).toBeUndefined();
      }
    });

    it('counts publishes per second across nodes; a refused one does not use the day', async () => {
      expect(await a.takePublish(key, 2, 3)).toBeUndefined();
      expect(await b.takePublish(key, 2, 3)).toBeUndefined();
      const refused = await a.takePublish(key, 2, 3);
      expect(refused).toMatchObject({ limit: 'publishesPerSecond', retryAfterSeconds: 1 });
      expect(refused!.message).toMatch(/more than 2 publishes per second .*\(publishesPerSecond\)/);
      // Two of three used today: one more is admitted once the per-second window allows it.
      expect(await b.takePublish(key, 0, 3)).toBeUndefined();
      expect(await b.takePublish(key, 0, 3)).toMatchObject({ limit: 'messagesPerDay' });
    });

    it('refuses the day once used up across nodes and starts afresh at 00:00 UTC', async () => {
      expect(await a.takePublish(key, 0, 2)).toBeUndefined();
      expect(await b.takePublish(key, 0, 2)).toBeUndefined();
      const refused = await a.takePublish(key, 0, 2);
      expect(refused).toEqual({
        limit: 'messagesPerDay',
        message:
          'Daily message quota used up: 2 messages per day for this API key (messagesPerDay); it resets at 00:00 UTC',
        // 23:59:00 → midnight
        retryAfterSeconds: 60,
      });
      clock = Date.UTC(2026, 10, 23, 23, 59, 59, 999);
      expect(await b.takePublish(key, 0, 2)).toMatchObject({ retryAfterSeconds: 1 });
      clock = Date.UTC(2026, 10, 24, 0, 0, 0);
      expect(await b.takePublish(key, 0, 2)).toBeUndefined();
      expect(await a.takePublish(key, 0, 2)).toBeUndefined();
      expect(await a.takePublish(key, 0, 2)).toMatchObject({
        limit: 'messagesPerDay',
        retryAfterSeconds: 86_400,
      });
    });

    it('keeps keys apart', async () => {
      expect(await a.takePublish(key, 0, 1)).toBeUndefined();
      expect(await a.takePublish(key, 0, 1)).toBeDefined();
      expect(await b.takePublish(`${key}-other`, 0, 1)).toBeUndefined();
    });
  });
}
