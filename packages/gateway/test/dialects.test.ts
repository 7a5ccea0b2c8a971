import { TOPIC_FAMILIES } from '@switchboard/core';
import { DIALECTS, Dialects } from '../src/protocols';

describe('the registered dialects', () => {
  it('each speak a topic family of core, one family each', () => {
    const dialects = new Dialects(DIALECTS);
    expect(dialects.families).toEqual([...TOPIC_FAMILIES]);
    for (const dialect of DIALECTS) expect(dialects.find(dialect.family)).toBe(dialect);
  });

  it('refuse a dialect whose family core does not list, and two dialects of one family', () => {
    const [first] = DIALECTS;
    expect(() => new Dialects([{ ...first!, family: 'x9' }])).toThrow(/x9.*TOPIC_FAMILIES/);
    expect(() => new Dialects([first!, first!])).toThrow(/share a topic family/);
  });

  it('each claim their own upgrade paths only', () => {
    const request = (path: string) => ({ path, query: 'api_key=k', headers: { origin: '', jwt: '' } });
    for (const dialect of DIALECTS) {
      const others = DIALECTS.filter((other) => other !== dialect);
      const own = [`/v3/room`, `/v4/room`].filter((path) => dialect.upgrade(request(path)));
      expect(own).toHaveLength(1);
      for (const other of others) expect(other.upgrade(request(own[0]!))).toBeUndefined();
    }
  });
});
