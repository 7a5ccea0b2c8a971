/** docs/pusher.md's table of codes and the Pusher catalog (protocols/pusher/codes.ts) agree. */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { PUSHER_ERRORS } from '../../src/protocols/pusher';

const doc = readFileSync(join(__dirname, '../../../../docs/pusher.md'), 'utf8');

const rows = new Map(
  doc
    .split('\n')
    .filter((line) => /^\| 4\d{3} \|/.test(line))
    .map((line) => {
      const cells = line.split('|').map((cell) => cell.trim());
      return [Number(cells[1]), { message: cells[2], then: cells[4] }] as const;
    }),
);

const THEN = { never: 'stops', backoff: 'reconnects with backoff', immediately: 'reconnects at once' };

describe('docs/pusher.md codes', () => {
  it('lists every catalog code with its message and what pusher-js does', () => {
    expect([...rows.keys()].sort()).toEqual(
      Object.values(PUSHER_ERRORS)
        .map((spec) => spec.code)
        .sort(),
    );
    for (const spec of Object.values(PUSHER_ERRORS)) {
      const row = rows.get(spec.code);
      expect(row?.message).toBe(spec.message);
      expect(row?.then).toBe(spec.closes ? THEN[spec.reconnect] : 'socket stays open');
    }
  });
});
