import { TurnBatches } from '../src/redis/turn-batches';

describe('TurnBatches', () => {
  it('writes the values of one target and one turn with one call, in order, and settles every add', async () => {
    const writes: Array<[string, number[]]> = [];
    const batches = new TurnBatches<string, number>(
      (target) => target,
      async (target, values) => {
        writes.push([target, values]);
      },
    );
    await Promise.all([batches.add('a', 1), batches.add('b', 9), batches.add('a', 2), batches.add('a', 3)]);
    await batches.add('a', 4);
    expect(writes).toEqual([
      ['a', [1, 2, 3]],
      ['b', [9]],
      ['a', [4]],
    ]);
  });

  it('rejects every add of a batch whose write failed, and only those', async () => {
    const batches = new TurnBatches<string, number>(
      (target) => target,
      async (target) => {
        if (target === 'bad') throw new Error('down');
      },
    );
    const results = await Promise.allSettled([
      batches.add('bad', 1),
      batches.add('bad', 2),
      batches.add('ok', 3),
    ]);
    expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected', 'fulfilled']);
  });

  it('hands each request the result at its own index', async () => {
    const batches = new TurnBatches<string, number, string>(
      (target) => target,
      async (target, values) => values.map((v) => `${target}${v * 10}`),
    );
    expect(
      await Promise.all([batches.request('a', 1), batches.request('b', 2), batches.request('a', 3)]),
    ).toEqual(['a10', 'b20', 'a30']);
  });
});
