import { ClientAddresses, ConnectionRateLimit } from '../src/limits/rate-limit';

describe('ClientAddresses (TRUSTED_PROXIES)', () => {
  const behind = new ClientAddresses(['10.0.0.0/8', '::1']);

  it('believes X-Forwarded-For only from a trusted peer, taking its rightmost untrusted entry', () => {
    expect(behind.of('10.1.2.3', '192.0.2.1')).toBe('192.0.2.1');
    expect(behind.of('::ffff:10.1.2.3', '198.51.100.9, 192.0.2.1')).toBe('192.0.2.1');
    expect(behind.of('::1', '192.0.2.1, 10.4.4.4')).toBe('192.0.2.1');
    expect(behind.of('203.0.113.5', '192.0.2.1')).toBe('203.0.113.5');
    expect(behind.of('10.1.2.3', '')).toBe('10.1.2.3');
    expect(behind.of('10.1.2.3', 'garbage, 10.9.9.9')).toBe('garbage');
  });

  it('believes nobody without TRUSTED_PROXIES', () => {
    expect(new ClientAddresses([]).of('127.0.0.1', '192.0.2.1')).toBe('127.0.0.1');
  });
});

describe('ConnectionRateLimit (NEW_CONNECTIONS_PER_SECOND_PER_IP)', () => {
  it('refuses past the limit within one second per address, names the limit, and starts over', () => {
    const limit = new ConnectionRateLimit(2);
    expect(limit.take('a', 1000)).toBeUndefined();
    expect(limit.take('a', 1500)).toBeUndefined();
    expect(limit.take('a', 1999)).toBe(
      'Too many new connections: more than 2 per second from this address (NEW_CONNECTIONS_PER_SECOND_PER_IP)',
    );
    expect(limit.take('b', 1999)).toBeUndefined();
    expect(limit.take('a', 2000)).toBeUndefined();
    expect(new ConnectionRateLimit(0).take('a')).toBeUndefined();
  });
});
