import { ConfigError, domainProblem, loadConfig, parseDomain } from '../src';

describe('allowed domains', () => {
  it.each([
    ['example.com', { host: 'example.com', port: undefined }],
    ['Example.COM', { host: 'example.com', port: undefined }],
    ['localhost:3000', { host: 'localhost', port: 3000 }],
    ['app.example.org:8443', { host: 'app.example.org', port: 8443 }],
    ['127.0.0.1:8080', { host: '127.0.0.1', port: 8080 }],
    ['[::1]', { host: '[::1]', port: undefined }],
    ['[::1]:8080', { host: '[::1]', port: 8080 }],
    ['xn--bcher-kva.example', { host: 'xn--bcher-kva.example', port: undefined }],
  ])('%s is a domain', (value, parsed) => {
    expect(domainProblem(value)).toBeUndefined();
    expect(parseDomain(value)).toEqual(parsed);
  });

  it.each([
    ['', /empty domain/],
    ['https://example.com', /"https:\/\/example.com" is not a domain: drop the scheme/],
    ['example.com/path', /"example.com\/path" is not a domain: drop the path/],
    ['example.com?x=1', /drop the path, query or fragment/],
    ['*.example.com', /"\*\.example\.com" is not a domain: no wildcards/],
    ['*', /"\*" is not a domain: no wildcards/],
    ['example .com', /"example \.com" is not a domain: it contains whitespace/],
    [' example.com', /contains whitespace/],
    ['example.com\t', /contains whitespace/],
    ['user@example.com', /no user name/],
    ['example.com:0', /not a valid host name or port/],
    ['example.com:65536', /not a valid host name or port/],
    ['example.com:', /not a valid host name or port/],
    ['example..com', /not a valid host name or port/],
    ['-example.com', /not a valid host name or port/],
    ['exa_mple.com', /not a valid host name or port/],
    ['[::1', /not a valid host name or port/],
    [':8080', /not a valid host name or port/],
  ])('%j is refused, naming it', (value, message) => {
    const problem = domainProblem(value);
    expect(problem).toMatch(message);
    expect(problem).toMatch(/example\.com or example\.com:8443/);
    expect(parseDomain(value)).toBeUndefined();
  });
});

describe('SWITCHBOARD_KEYS domains', () => {
  const seeds = (domains: unknown[]): string =>
    JSON.stringify([{ key: 'k', secret: 'a-secret-value', domains }]);

  it('are validated and stored in lower case', () => {
    const config = loadConfig({ SWITCHBOARD_KEYS: seeds(['Example.com', 'localhost:3000']) });
    expect(config.seedKeys[0]?.domains).toEqual(['example.com', 'localhost:3000']);
  });

  it.each([['https://example.com'], ['example.com/x'], ['*.example.com'], ['a b'], ['']])(
    '%j is refused with one line naming it',
    (bad) => {
      let error: unknown;
      try {
        loadConfig({ SWITCHBOARD_KEYS: seeds(['ok.example', bad]) });
      } catch (caught) {
        error = caught;
      }
      expect(error).toBeInstanceOf(ConfigError);
      const problems = (error as ConfigError).problems;
      expect(problems).toHaveLength(1);
      expect(problems[0]).toMatch(/^SWITCHBOARD_KEYS\.0\.domains\.1: /);
      expect(problems[0]).toContain(bad === '' ? 'empty domain' : `"${bad}" is not a domain`);
    },
  );
});
