import { MAX_SECRET_LENGTH, rememberedSecretDigests, secretMatches } from '../src/keys/key-store';

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

  it('remembers nothing of wrong secrets: a stranger’s guesses add no digest', () => {
    expect(secretMatches(stored, stored)).toBe(true);
    const before = rememberedSecretDigests();
    for (let i = 0; i < 500; i++) expect(secretMatches(`guess-${i}-${'x'.repeat(200)}`, stored)).toBe(false);
    expect(rememberedSecretDigests()).toBe(before);
    expect(secretMatches(stored, stored)).toBe(true);
    expect(rememberedSecretDigests()).toBe(before);
  });

  it(`is false at once for a secret longer than ${MAX_SECRET_LENGTH} characters, even an equal one`, () => {
    const long = 's'.repeat(MAX_SECRET_LENGTH + 1);
    const before = rememberedSecretDigests();
    expect(secretMatches(long, stored)).toBe(false);
    expect(secretMatches('x'.repeat(64 * 1024), stored)).toBe(false);
    expect(secretMatches(long, long)).toBe(false);
    expect(rememberedSecretDigests()).toBe(before);
    expect(secretMatches('s'.repeat(MAX_SECRET_LENGTH), 's'.repeat(MAX_SECRET_LENGTH))).toBe(true);
  });

  it('keeps answering right once more secrets were compared against than it remembers digests of', () => {
    for (let i = 0; i < 10_050; i++) expect(secretMatches(stored, `stored-${i}`)).toBe(false);
    expect(rememberedSecretDigests()).toBeLessThanOrEqual(10_000);
    expect(secretMatches(stored, stored)).toBe(true);
    expect(secretMatches('guess-1', stored)).toBe(false);
    expect(secretMatches('guess-1', 'guess-1')).toBe(true);
  });
});
