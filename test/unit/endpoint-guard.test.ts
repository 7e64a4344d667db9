/**
 * The endpoint guard: which webhook addresses are refused, by literal and by what a name
 * resolves to. No network: names resolve through the local resolver (`localhost`).
 */
import type { LookupAddress, LookupOptions } from 'node:dns';
import { inspect } from 'node:util';
import { describe, expect, it } from 'vitest';
import {
  EndpointGuard,
  SANDBOX_GUARD_OPTIONS,
} from '../../lib/webhook/endpoint-guard';
import { EndpointRefusedError } from '../../lib/errors';

const strict = new EndpointGuard();

describe('Method: isBlocked', () => {
  /** The addresses refused, by family, each with what it is. */
  const blocked: Record<string, [address: string, what: string][]> = {
    IPv4: [
      ['0.0.0.0', 'this network'],
      ['0.1.2.3', 'this network'],
      ['10.0.0.1', 'private 10/8'],
      ['100.64.0.1', 'carrier-grade NAT'],
      ['100.127.255.254', 'carrier-grade NAT, last address'],
      ['100.100.100.200', 'Alibaba metadata (CGNAT)'],
      ['127.0.0.1', 'loopback'],
      ['127.255.255.254', 'loopback, end of range'],
      ['169.254.169.254', 'cloud metadata'],
      ['169.254.0.1', 'link-local'],
      ['172.16.0.1', 'private 172.16/12'],
      ['172.31.255.255', 'private 172.16/12, end of range'],
      ['192.0.0.192', 'IETF protocol assignments (Oracle metadata)'],
      ['192.168.1.1', 'private 192.168/16'],
      ['198.18.0.1', 'benchmarking'],
      ['224.0.0.1', 'multicast'],
      ['255.255.255.255', 'broadcast'],
    ],
    IPv6: [
      ['::', 'unspecified'],
      ['::1', 'loopback'],
      ['::ffff:10.0.0.1', 'IPv4-mapped private, dotted'],
      ['::ffff:a00:1', 'IPv4-mapped private, hex'],
      ['::ffff:127.0.0.1', 'IPv4-mapped loopback'],
      ['::ffff:169.254.169.254', 'IPv4-mapped metadata'],
      ['0:0:0:0:0:ffff:7f00:1', 'IPv4-mapped loopback, uncompressed'],
      ['64:ff9b::a9fe:a9fe', 'NAT64 of the metadata address'],
      ['64:ff9b::10.1.2.3', 'NAT64 of a private address, dotted'],
      ['fc00::1', 'unique local'],
      ['fd12:3456::1', 'unique local'],
      ['fd00:ec2::254', 'AWS metadata over IPv6'],
      ['fe80::1', 'link-local'],
      ['fe80::1%eth0', 'link-local with a zone index'],
      ['febf::1', 'link-local, end of range'],
      ['ff02::1', 'multicast'],
      ['2001:db8::1', 'documentation'],
      ['2002:a00:1::1', '6to4'],
      ['2001:0:4136:e378::1', 'Teredo'],
    ],
  };

  it.each(Object.entries(blocked).flatMap(([family, addresses]) => addresses.map(([address, what]) => [family, address, what])))(
    'refuses the %s address %s (%s)',
    (_family, address) => {
      expect(strict.isBlocked(address)).toBe(true);
    },
  );

  it.each(['93.184.215.14', '8.8.8.8', '100.63.255.255', '100.128.0.0', '172.32.0.1', '2606:4700::1111', '64:ff9b::808:808'])(
    'allows the public address %s',
    (address) => {
      expect(strict.isBlocked(address)).toBe(false);
    },
  );

  it('refuses anything that is not an IP address', () => {
    expect(strict.isBlocked('localhost')).toBe(true);
  });

  it('allows allowlisted ranges, in either IPv4 spelling', () => {
    const sandbox = new EndpointGuard(SANDBOX_GUARD_OPTIONS);

    expect(sandbox.isBlocked('127.0.0.1')).toBe(false);
    expect(sandbox.isBlocked('::ffff:127.0.0.1')).toBe(false);
    expect(sandbox.isBlocked('::1')).toBe(false);
    expect(sandbox.isBlocked('10.0.0.1')).toBe(true);
    expect(sandbox.isBlocked('169.254.169.254')).toBe(true);
  });

  it('throws on an allowlist entry that is not a CIDR', () => {
    expect(() => new EndpointGuard({ allowPrivateCidrs: ['10.0.0.0/33'] })).toThrow(RangeError);
    expect(() => new EndpointGuard({ allowPrivateCidrs: ['intranet'] })).toThrow(RangeError);
  });
});

describe('Method: checkUrl', () => {
  it('accepts an https URL with a DNS name (checked later, at connect time)', () => {
    expect(() => strict.checkUrl('https://hooks.example.com/shipments')).not.toThrow();
  });

  it('refuses http unless allowHttp is set', () => {
    expect(() => strict.checkUrl('http://hooks.example.com/')).toThrow(
      expect.objectContaining({ name: 'EndpointRefusedError', code: 'insecure-scheme' }),
    );
    expect(() => new EndpointGuard({ allowHttp: true }).checkUrl('http://hooks.example.com/')).not.toThrow();
  });

  it('refuses a URL that is not http(s) or not a URL at all', () => {
    expect(() => strict.checkUrl('ftp://hooks.example.com/')).toThrow(
      expect.objectContaining({ code: 'invalid-url' }),
    );
    expect(() => strict.checkUrl('hooks.example.com')).toThrow(expect.objectContaining({ code: 'invalid-url' }));
  });

  it.each([
    'https://169.254.169.254/latest/meta-data/',
    'https://[::1]/',
    'https://[::ffff:10.0.0.1]/',
    'https://[fd00:ec2::254]/',
    'https://0x7f.1/', // 127.0.0.1, spelled so a naive check misses it
    'https://2130706433/', // 127.0.0.1 as one number
    'https://0/',
  ])('refuses the literal address in %s', (url) => {
    expect(() => strict.checkUrl(url)).toThrow(expect.objectContaining({ code: 'blocked-address' }));
  });

  it('refuses an unparsable URL without keeping it anywhere on the error, since it may hold a secret', () => {
    let error: unknown;
    try {
      strict.checkUrl('hooks.example.com/in?token=s3cr3t');
    } catch (caught) {
      error = caught;
    }

    expect(error).toBeInstanceOf(EndpointRefusedError);
    expect((error as EndpointRefusedError).code).toBe('invalid-url');
    expect(inspect(error, { depth: 5 })).not.toContain('s3cr3t');
  });

  it('allows a literal loopback address with the sandbox preset', () => {
    const sandbox = new EndpointGuard(SANDBOX_GUARD_OPTIONS);

    expect(() => sandbox.checkUrl('http://127.0.0.1:8080/hook')).not.toThrow();
    expect(() => sandbox.checkUrl('http://[::1]:8080/hook')).not.toThrow();
  });
});

describe('Method: lookup', () => {
  function lookup(guard: EndpointGuard, hostname: string, options: LookupOptions) {
    return new Promise<{ error: NodeJS.ErrnoException | null; address: string | LookupAddress[]; family?: number }>(
      (resolve) => guard.lookup(hostname, options, (error, address, family) => resolve({ error, address, family })),
    );
  }

  it('refuses a name that resolves to a blocked address', async () => {
    const { error } = await lookup(strict, 'localhost', { all: true });

    expect(error).toBeInstanceOf(EndpointRefusedError);
    expect(error).toMatchObject({ code: 'blocked-address' });
    expect(error?.message).toContain('localhost resolves to it');
  });

  it('resolves an allowlisted name to every address when asked for all', async () => {
    const sandbox = new EndpointGuard(SANDBOX_GUARD_OPTIONS);

    const { error, address } = await lookup(sandbox, 'localhost', { all: true });

    expect(error).toBeNull();
    expect(Array.isArray(address) && address.length > 0).toBe(true);
    for (const { address: each } of address as LookupAddress[]) expect(['127.0.0.1', '::1']).toContain(each);
  });

  it('resolves an allowlisted name to one address and family when asked for one', async () => {
    const sandbox = new EndpointGuard(SANDBOX_GUARD_OPTIONS);

    const { error, address, family } = await lookup(sandbox, 'localhost', { family: 4 });

    expect(error).toBeNull();
    expect(address).toBe('127.0.0.1');
    expect(family).toBe(4);
  });

  it('refuses a name when any one of its addresses is blocked', async () => {
    // Only ::1 allowlisted: localhost's 127.0.0.1 stays blocked, whichever address comes first.
    const partial = new EndpointGuard({ allowPrivateCidrs: ['::1/128'] });

    const { error } = await lookup(partial, 'localhost', { all: true });

    expect(error).toMatchObject({ code: 'blocked-address', address: '127.0.0.1' });
  });

  it('passes a DNS failure through unchanged', async () => {
    const { error } = await lookup(strict, 'no-such-host.invalid', { all: true });

    expect(error).not.toBeInstanceOf(EndpointRefusedError);
    expect(error?.syscall).toBe('getaddrinfo');
  });
});
