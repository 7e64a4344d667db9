/**
 * The HTTP CONNECT proxy's URL (docs/contract.md §18 `proxyUrl`): how the sender reads it, and the
 * deployment's `HANDOFF_PROXY_URL` setting, refused with an error naming it and never showing a password.
 */
import { describe, expect, it } from 'vitest';
import { readSettings, settingsToEnvironment, validateSettings, DEFAULT_SETTINGS } from '../../../lib/config';
import { ConfigError } from '../../../lib/errors';
import { parseProxyUrl } from '../../../lib/webhook/connect-proxy';
import { HttpWebhookSender } from '../../../lib/webhook/http-sender';

describe('parseProxyUrl', () => {
  it('reads host and port, port 80 when none is given', () => {
    expect(parseProxyUrl('http://proxy.internal:3128')).toEqual({ host: 'proxy.internal', port: 3128 });
    expect(parseProxyUrl('http://10.0.0.5/')).toEqual({ host: '10.0.0.5', port: 80 });
    expect(parseProxyUrl('http://[fd00::5]:8080')).toEqual({ host: 'fd00::5', port: 8080 });
  });

  it('makes Basic proxy credentials of the user and password, percent-decoded', () => {
    const proxy = parseProxyUrl('http://ops%40acme:p%3Ass%20w@proxy.internal:3128');

    expect(proxy.authorization).toBe(`Basic ${Buffer.from('ops@acme:p:ss w').toString('base64')}`);
  });

  it.each([
    ['https://proxy.internal:3128', 'must be an http:// URL'],
    ['socks5://proxy.internal:1080', 'must be an http:// URL'],
    ['http://proxy.internal:3128/path', 'no path, query or fragment'],
    ['http://proxy.internal:3128?x=1', 'no path, query or fragment'],
    ['proxy.internal:3128', 'must be an http:// URL'],
    ['not a url', 'must be an absolute URL'],
  ])('refuses %s', (url, problem) => {
    expect(() => parseProxyUrl(url)).toThrow(problem);
  });

  it('never shows the password of a URL it refuses', () => {
    let message = '';
    try {
      parseProxyUrl('https://ops:hunter2@proxy.internal:3128');
    } catch (error) {
      message = (error as Error).message;
    }

    expect(message).toContain('https://***@proxy.internal:3128');
    expect(message).not.toContain('hunter2');
  });
});

describe('HANDOFF_PROXY_URL', () => {
  it('is read, checked and written back for the consumer', () => {
    const settings = readSettings({ HANDOFF_PROXY_URL: 'http://ops:pw@proxy.internal:3128' });

    expect(settings.proxyUrl).toBe('http://ops:pw@proxy.internal:3128');
    expect(settingsToEnvironment(settings).HANDOFF_PROXY_URL).toBe('http://ops:pw@proxy.internal:3128');
    expect(settingsToEnvironment(DEFAULT_SETTINGS)).not.toHaveProperty('HANDOFF_PROXY_URL');
    expect(readSettings({}).proxyUrl).toBeUndefined();
  });

  it('refuses a URL that is no HTTP CONNECT proxy, naming the variable (or the property) and hiding the password', () => {
    const read = () => readSettings({ HANDOFF_PROXY_URL: 'https://ops:hunter2@proxy.internal:3128' });

    expect(read).toThrow(ConfigError);
    expect(read).toThrow(/^HANDOFF_PROXY_URL must be an http:\/\/ URL .*https:\/\/\*\*\*@proxy\.internal:3128\/$/);
    expect(() => validateSettings({ ...DEFAULT_SETTINGS, proxyUrl: 'http://proxy.internal/x' })).toThrow(/^proxyUrl must be the proxy's address only/);
  });
});

describe('HttpWebhookSender: proxyUrl', () => {
  it('refuses, when made, a proxy URL it cannot use, naming proxyUrl', () => {
    const make = () => new HttpWebhookSender({ url: 'https://hooks.example.com/in', timeoutMs: 1000, proxyUrl: 'https://proxy.internal:3128' });

    expect(make).toThrow(RangeError);
    expect(make).toThrow(/^proxyUrl must be an http:\/\/ URL/);
  });
});
