/**
 * How a webhook URL is shown: userinfo and query values redacted, the rest kept, unparsable
 * input never echoed.
 */
import { describe, expect, it } from 'vitest';
import { UNPARSABLE_URL, redactUrl } from '../../lib/webhook/redact-url';

describe('Function: redactUrl', () => {
  it.each([
    ['keeps a URL without secrets as it is', 'https://hooks.example.com/v1/events', 'https://hooks.example.com/v1/events'],
    ['replaces the userinfo (user and password) with ***', 'https://alice:s3cr3t@hooks.example.com/in', 'https://***@hooks.example.com/in'],
    ['replaces a userinfo with only a user name with ***', 'https://tokenonly@hooks.example.com/in', 'https://***@hooks.example.com/in'],
    ['replaces each query value with *** and keeps the keys', 'https://hooks.example.com/in?token=s3cr3t&tenant=acme', 'https://hooks.example.com/in?token=***&tenant=***'],
    ['redacts a query part without = whole, since it may be a bare token', 'https://hooks.example.com/in?s3cr3t&a=1', 'https://hooks.example.com/in?***&a=***'],
    ['redacts a value that itself contains =', 'https://hooks.example.com/in?sig=abc==', 'https://hooks.example.com/in?sig=***'],
    ['redacts the fragment whole', 'https://hooks.example.com/in#access_token=s3cr3t', 'https://hooks.example.com/in#***'],
    ['keeps the port and an IPv6 literal host', 'http://u:p@[::1]:8443/hook?k=v', 'http://***@[::1]:8443/hook?k=***'],
  ])('%s', (_case, url, shown) => {
    expect(redactUrl(url)).toBe(shown);
  });

  it('redacts userinfo and query together on a loopback URL', () => {
    const shown = redactUrl('http://user:pass@127.0.0.1:4000/hook?token=s3cr3t');
    expect(shown).toBe('http://***@127.0.0.1:4000/hook?token=***');
    expect(shown).not.toContain('s3cr3t');
    expect(shown).not.toContain('pass');
  });

  it.each([['not a url'], ['hooks.example.com/in?token=s3cr3t'], [''], ['https://']])(
    'shows the fixed placeholder for the unparsable input %j',
    (input) => {
      expect(redactUrl(input)).toBe(UNPARSABLE_URL);
    },
  );
});
