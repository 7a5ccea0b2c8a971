import { isPrivateAddress, privateWebhookUrlProblem } from '../src/webhooks/private-addresses';

describe('private addresses (WEBHOOK_DENY_PRIVATE)', () => {
  it.each([
    '127.0.0.1',
    '127.255.0.9',
    '0.0.0.0',
    '10.0.0.1',
    '172.16.0.1',
    '172.31.255.255',
    '192.168.1.1',
    '169.254.169.254',
    '100.64.0.1',
    '100.127.255.254',
    '224.0.0.1',
    '255.255.255.255',
    '::',
    '::1',
    'fe80::1',
    'fc00::1',
    'fd12:3456::1',
    '::ffff:127.0.0.1',
    '::ffff:a9fe:a9fe',
    '64:ff9b::a00:1',
    'ff02::1',
  ])('%s is refused', (address) => {
    expect(isPrivateAddress(address)).toBe(true);
  });

  it.each([
    '8.8.8.8',
    '1.1.1.1',
    '172.32.0.1',
    '100.128.0.1',
    '193.0.0.1',
    '2606:4700::1111',
    '::ffff:8.8.8.8',
  ])('%s is public', (address) => {
    expect(isPrivateAddress(address)).toBe(false);
  });

  it('judges a URL by its literal address or a localhost name, leaving other names to connect time', () => {
    expect(privateWebhookUrlProblem('http://[::1]:8080/h')).toMatch(/WEBHOOK_DENY_PRIVATE refuses/);
    expect(privateWebhookUrlProblem('http://LOCALHOST./h')).toMatch(/WEBHOOK_DENY_PRIVATE refuses/);
    expect(privateWebhookUrlProblem('http://api.localhost/h')).toMatch(/WEBHOOK_DENY_PRIVATE refuses/);
    // The WHATWG URL parser turns these spellings of 127.0.0.1 into the address itself.
    expect(privateWebhookUrlProblem('http://2130706433/h')).toMatch(/WEBHOOK_DENY_PRIVATE refuses/);
    expect(privateWebhookUrlProblem('http://0x7f.1/h')).toMatch(/WEBHOOK_DENY_PRIVATE refuses/);
    expect(privateWebhookUrlProblem('https://hooks.example.com/h')).toBeUndefined();
    expect(privateWebhookUrlProblem('https://8.8.8.8/h')).toBeUndefined();
  });
});
