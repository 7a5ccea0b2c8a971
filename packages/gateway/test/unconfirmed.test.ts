import type { Publication } from '@switchboard/core';
import { UNCONFIRMED_WAIT_MS, UnconfirmedPublications } from '../src/api/unconfirmed';

// A REST publication whose publish failed unconfirmed is delivered by its own node when Redis
// hands it back (engine-stall.int.test.ts shows it end to end): once, and only while waited for.

const publication = (body: string, acceptedAt = 1000): Publication => ({
  topic: { key: 'k', protocol: 'v3', channel: 'room' },
  body,
  origin: 'node-1',
  source: 'api',
  acceptedAt,
});

afterEach(() => jest.useRealTimers());

describe('unconfirmed publications', () => {
  it('are claimed once, when the same publication comes back', () => {
    const waiting = new UnconfirmedPublications();
    waiting.add(publication('hello'));
    expect(waiting.claim(publication('hello', 1001))).toBe(false);
    expect(waiting.claim(publication('other'))).toBe(false);
    expect(waiting.claim(publication('hello'))).toBe(true);
    expect(waiting.claim(publication('hello'))).toBe(false);
  });

  it('are not claimed once the wait is over', () => {
    jest.useFakeTimers({ now: 0 });
    const waiting = new UnconfirmedPublications();
    waiting.add(publication('late'));
    jest.setSystemTime(UNCONFIRMED_WAIT_MS + 1);
    expect(waiting.claim(publication('late'))).toBe(false);
  });

  it('are at most 1,000: the oldest is forgotten first', () => {
    const waiting = new UnconfirmedPublications();
    for (let i = 0; i <= 1000; i++) waiting.add(publication(`m${i}`));
    expect(waiting.claim(publication('m0'))).toBe(false);
    expect(waiting.claim(publication('m1'))).toBe(true);
    expect(waiting.claim(publication('m1000'))).toBe(true);
  });
});
