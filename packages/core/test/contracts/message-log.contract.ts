import type { LogRecord, MessageLog } from '../../src/logs/message-log';
import { unique } from '../support/wait';

const record = (i: number, extra: Partial<LogRecord> = {}): LogRecord => ({
  id: `id-${i}`,
  channel: 'room',
  protocol: 'v4',
  source: 'api',
  message: `message ${i}`,
  timestamp: new Date(1_700_000_000_000 + i).toISOString(),
  ...extra,
});

/** The MessageLog port's contract (message-log.ts); `createLog(capacity)` builds one with that capacity. */
export function describeMessageLogContract(
  name: string,
  createLog: (capacity: number) => Promise<MessageLog>,
): void {
  describe(`MessageLog contract: ${name}`, () => {
    let key: string;

    beforeEach(() => {
      key = unique('key');
    });

    it('returns records newest first, exactly as appended', async () => {
      const log = await createLog(10);
      const records = [
        record(1),
        record(2, { protocol: 'v3', source: 'client', uuid: 'u1', user: { id: 1, tags: ['a'] } }),
        record(3, { message: 'AAEC', binary: true }),
      ];
      for (const r of records) await log.append(key, r);
      expect(await log.recent(key)).toEqual([...records].reverse());
      expect(await log.recent(key, 2)).toEqual([records[2], records[1]]);
    });

    it('keeps at most its capacity, dropping the oldest', async () => {
      const log = await createLog(5);
      for (let i = 0; i < 12; i++) await log.append(key, record(i));
      const recent = await log.recent(key);
      expect(recent.map((r) => r.id)).toEqual(['id-11', 'id-10', 'id-9', 'id-8', 'id-7']);
      expect(await log.recent(key, 100)).toHaveLength(5);
    });

    it('keeps API keys apart', async () => {
      const log = await createLog(10);
      const other = unique('other');
      await log.append(key, record(1));
      await log.append(other, record(2));
      expect((await log.recent(key)).map((r) => r.id)).toEqual(['id-1']);
      expect((await log.recent(other)).map((r) => r.id)).toEqual(['id-2']);
      expect(await log.recent(unique('empty'))).toEqual([]);
    });
  });
}
