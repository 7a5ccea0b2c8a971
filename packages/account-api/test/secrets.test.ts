import fc from 'fast-check';
import { secretsMatch } from '../src';

describe('secretsMatch', () => {
  test('matches equal secrets only', () => {
    fc.assert(
      fc.property(fc.string(), fc.string(), (a, b) => {
        expect(secretsMatch(a, a)).toBe(true);
        expect(secretsMatch(a, b)).toBe(a === b);
      }),
    );
  });

  test('compares secrets of different lengths without throwing', () => {
    expect(secretsMatch('short', 'a much longer secret value')).toBe(false);
    expect(secretsMatch('', 'x')).toBe(false);
  });
});
