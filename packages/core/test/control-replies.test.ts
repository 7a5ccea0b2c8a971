import type { ControlCommand, RequestedCommand } from '../src/broker/broker';
import { PendingRequests, replyTo } from '../src/broker/control-replies';
import { EngineUnavailableError } from '../src/errors';

/** The waiting side of `requestControl`, shared by every broker: bounded, and never past its deadline. */
describe('PendingRequests', () => {
  const kick: RequestedCommand = { type: 'kick', selector: { key: 'k', reason: 'r' } };
  const idOf = (command: ControlCommand): string => command.request?.id ?? '';

  it('answers once every receiver replied, even when replies come before the receiver count', async () => {
    const requests = new PendingRequests();
    const answer = await requests.request(kick, 'n1', 5000, async (sent) => {
      expect(sent.request).toEqual({ id: expect.any(String), origin: 'n1' });
      requests.reply(replyTo(idOf(sent), 'n1', 2));
      requests.reply(replyTo(idOf(sent), 'n2', 5));
      return 2;
    });
    expect(answer).toEqual({ total: 7, replies: 2, receivers: 2, complete: true });
    expect(requests.size).toBe(0);
  });

  it('answers partial at the deadline, forgets the request and ignores a late reply', async () => {
    const requests = new PendingRequests();
    let id = '';
    const answer = await requests.request(kick, 'n1', 100, async (sent) => {
      id = idOf(sent);
      requests.reply(replyTo(id, 'n1', 1));
      return 3;
    });
    expect(answer).toEqual({ total: 1, replies: 1, receivers: 3, complete: false });
    expect(requests.size).toBe(0);
    expect(() => requests.reply(replyTo(id, 'n2', 4))).not.toThrow();
    expect(requests.size).toBe(0);
  });

  it('forgets the request when the engine refuses the command', async () => {
    const requests = new PendingRequests();
    await expect(
      requests.request(kick, 'n1', 5000, () => Promise.reject(new EngineUnavailableError())),
    ).rejects.toBeInstanceOf(EngineUnavailableError);
    expect(requests.size).toBe(0);
  });

  it('sends without a request past its limit instead of growing', async () => {
    const requests = new PendingRequests(1);
    const sent: ControlCommand[] = [];
    const publish = async (command: ControlCommand): Promise<number> => {
      sent.push(command);
      return 2;
    };
    const first = requests.request(kick, 'n1', 5000, publish);
    await Promise.resolve();
    const second = await requests.request(kick, 'n1', 5000, publish);
    expect(second).toEqual({ total: 0, replies: 0, receivers: 2, complete: false });
    expect(sent[1]).toEqual(kick);
    expect(requests.size).toBe(1);
    requests.close();
    expect(await first).toEqual({ total: 0, replies: 0, receivers: 2, complete: false });
    expect(requests.size).toBe(0);
  });

  it('counts nothing but a positive whole number as a count', () => {
    expect(replyTo('r', 'n', undefined).count).toBe(0);
    expect(replyTo('r', 'n', -2).count).toBe(0);
    expect(replyTo('r', 'n', Number.NaN).count).toBe(0);
    expect(replyTo('r', 'n', 3).count).toBe(3);
  });
});
