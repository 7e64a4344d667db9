/**
 * How a webhook URL is shown: userinfo and query values redacted, the rest kept, unparsable
 * input never echoed.
 */
import { describe, expect, it } from 'vitest';
import { UNPARSABLE_URL, redactUrl } from '../../lib/webhook/redact-url';

describe('Function: redactUrl', () => {
  it('keeps a URL without secrets as it is', () => {
    expect(redactUrl('https://hooks.example.com/v1/events')).toBe(
      'https://hooks.example.com/v1/events',
    );
  });

  it('replaces the userinfo (user and password) with ***', () => {
    expect(redactUrl('https://alice:s3cr3t@hooks.example.com/in')).toBe(
      'https://***@hooks.example.com/in',
    );
  });

  it('replaces a userinfo with only a user name with ***', () => {
    expect(redactUrl('https://tokenonly@hooks.example.com/in')).toBe(
      'https://***@hooks.example.com/in',
    );
  });

  it('replaces each query value with *** and keeps the keys', () => {
    expect(redactUrl('https://hooks.example.com/in?token=s3cr3t&tenant=acme')).toBe(
      'https://hooks.example.com/in?token=***&tenant=***',
    );
  });

  it('redacts a query part without = whole, since it may be a bare token', () => {
    expect(redactUrl('https://hooks.example.com/in?s3cr3t&a=1')).toBe(
      'https://hooks.example.com/in?***&a=***',
    );
  });

  it('redacts a value that itself contains =', () => {
    expect(redactUrl('https://hooks.example.com/in?sig=abc==')).toBe(
      'https://hooks.example.com/in?sig=***',
    );
  });

  it('redacts the fragment whole', () => {
    expect(redactUrl('https://hooks.example.com/in#access_token=s3cr3t')).toBe(
      'https://hooks.example.com/in#***',
    );
  });

  it('keeps the port and an IPv6 literal host', () => {
    expect(redactUrl('http://u:p@[::1]:8443/hook?k=v')).toBe('http://***@[::1]:8443/hook?k=***');
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
