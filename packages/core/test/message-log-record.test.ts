import type { LogRecord } from '../src/logs/message-log';
import { recordJson } from '../src/logs/message-log-redis';

const base: LogRecord = {
  id: '4f0c8a43-3c8e-4a59-9d7e-0e4b7d0f3a11',
  channel: 'room-1',
  protocol: 'v3',
  source: 'api',
  message: 'hello',
  timestamp: '2026-11-27T01:02:03.004Z',
};

describe('a message-log record as stored', () => {
  it('is the JSON of the record, for every message text', () => {
    const messages = [
      '',
      'plain',
      '{"event":"x","data":{"a":[1,2,"three"]}}',
      'quotes " and backslashes \\ and / slashes',
      'control \u0000 \u0001 \b \f \n \r \t \u001f characters',
      'unicode é 漢字 🎉 and a lone surrogate \ud800',
      'line\u2028separator\u2029',
    ];
    for (const message of messages) {
      const record = { ...base, message };
      expect(recordJson(record)).toBe(JSON.stringify(record));
      expect(JSON.parse(recordJson(record))).toEqual(record);
    }
  });

  it('is the JSON of the record for every channel character, protocol and source', () => {
    const record: LogRecord = { ...base, channel: 'A-z_0.9=@,;', protocol: 'v4', source: 'client' };
    expect(recordJson(record)).toBe(JSON.stringify(record));
  });

  it('keeps the optional fields of a client message', () => {
    const records: LogRecord[] = [
      { ...base, source: 'client', uuid: 'u "1"' },
      { ...base, source: 'client', uuid: 'u1', user: { name: 'Ann "A"', roles: ['x'] } },
      { ...base, source: 'client', message: 'AAEC', binary: true, uuid: 'u1' },
    ];
    for (const record of records) expect(JSON.parse(recordJson(record))).toEqual(record);
  });
});
