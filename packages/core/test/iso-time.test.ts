import { isoTime } from '../src/logs/iso-time';

describe('isoTime', () => {
  it('writes what Date#toISOString writes, also when the second changes back and forth', () => {
    const base = Date.UTC(2026, 10, 27, 23, 59, 58, 990);
    const times = [
      base,
      base + 1,
      base + 9,
      base + 10,
      base + 99,
      base + 100,
      base + 1_010, // the next second, and past midnight
      base + 2_000,
      base, // back to an earlier second
      0,
      999,
      1_000,
      Date.UTC(2000, 1, 29, 12, 0, 0, 5), // a leap day
      Date.UTC(9999, 11, 31, 23, 59, 59, 999),
    ];
    for (const ms of times) expect(isoTime(ms)).toBe(new Date(ms).toISOString());
  });

  it('agrees with Date#toISOString over a run of consecutive and random times', () => {
    const start = Date.now();
    for (let ms = start; ms < start + 3_000; ms += 7) expect(isoTime(ms)).toBe(new Date(ms).toISOString());
    for (let i = 0; i < 2_000; i++) {
      const ms = Math.floor(Math.random() * 253_402_300_799_999);
      expect(isoTime(ms)).toBe(new Date(ms).toISOString());
    }
  });

  it('takes the general way outside what a clock reads', () => {
    expect(isoTime(-1)).toBe(new Date(-1).toISOString());
    expect(isoTime(1.5)).toBe(new Date(1.5).toISOString());
    expect(isoTime(253_402_300_800_000)).toBe(new Date(253_402_300_800_000).toISOString());
  });
});
