import { secretMatches } from '../src/keys/key-store';

describe('secretMatches', () => {
  const stored = 'a'.repeat(43) + 'Z';

  it('matches only the exact secret, whatever was presented before', () => {
    for (let round = 0; round < 3; round++) {
      expect(secretMatches(stored, stored)).toBe(true);
      expect(secretMatches(stored.slice(0, -1), stored)).toBe(false);
      expect(secretMatches(stored + 'Z', stored)).toBe(false);
      expect(secretMatches('a'.repeat(44), stored)).toBe(false);
      expect(secretMatches('', stored)).toBe(false);
    }
  });

  it('keeps answering right once more texts were presented than it remembers digests of', () => {
    for (let i = 0; i < 10_050; i++) expect(secretMatches(`guess-${i}`, stored)).toBe(false);
    expect(secretMatches(stored, stored)).toBe(true);
    expect(secretMatches('guess-1', stored)).toBe(false);
    expect(secretMatches('guess-1', 'guess-1')).toBe(true);
  });
});
