/**
 * The endpoint guard: which addresses a webhook may reach (security by default).
 *
 * A webhook URL is configuration, but whoever controls it (or its DNS) must not be able to make
 * the consumer reach what only the consumer can reach: loopback, the VPC's private ranges, the
 * cloud metadata service. So, unless allowlisted:
 * - literal IPs in a private, loopback, link-local, metadata or otherwise non-public range are
 *   refused when the URL is checked (start-up);
 * - DNS names are checked where the connection is made: `lookup` resolves every address and
 *   refuses the name when any of them is blocked. The socket connects to exactly the addresses
 *   that were checked, so there is no window for DNS rebinding between check and connect;
 * - `http:` is refused unless explicitly allowed (the local sandbox allows it).
 */
import dns from 'node:dns';
import net from 'node:net';
import { EndpointRefusedError } from '../errors';

export interface EndpointGuardOptions {
  /** CIDRs reachable even though they are in a blocked range, e.g. `['127.0.0.0/8', '::1/128']`. */
  readonly allowPrivateCidrs?: readonly string[];
  /** Allow plain `http:` URLs. Off by default: webhooks carry signed business data. */
  readonly allowHttp?: boolean;
}

/** The local sandbox's preset: its receiver listens on loopback, over plain http. */
export const SANDBOX_GUARD_OPTIONS: EndpointGuardOptions = {
  allowPrivateCidrs: ['127.0.0.0/8', '::1/128'],
  allowHttp: true,
};

/**
 * Ranges that are not the public internet (IANA special-purpose registries, RFC 6890 and later),
 * plus the cloud metadata addresses, which they contain.
 */
const BLOCKED_IPV4: readonly [string, number][] = [
  ['0.0.0.0', 8], // "this network"; 0.0.0.0 reaches the local host on Linux
  ['10.0.0.0', 8], // private
  ['100.64.0.0', 10], // carrier-grade NAT (also Alibaba's metadata, 100.100.100.200)
  ['127.0.0.0', 8], // loopback
  ['169.254.0.0', 16], // link-local, incl. 169.254.169.254 (AWS, GCP, Azure metadata)
  ['172.16.0.0', 12], // private
  ['192.0.0.0', 24], // IETF protocol assignments (incl. 192.0.0.192, Oracle metadata)
  ['192.0.2.0', 24], // documentation
  ['192.88.99.0', 24], // 6to4 relay anycast
  ['192.168.0.0', 16], // private
  ['198.18.0.0', 15], // benchmarking
  ['198.51.100.0', 24], // documentation
  ['203.0.113.0', 24], // documentation
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved, incl. broadcast 255.255.255.255
];

/**
 * IPv4-mapped addresses (`::ffff:a.b.c.d`) need no entry: Node's BlockList checks them against
 * the IPv4 rules. NAT64 addresses (`64:ff9b::a.b.c.d`) are checked by their embedded IPv4 below.
 */
const BLOCKED_IPV6: readonly [string, number][] = [
  ['::', 96], // unspecified, loopback (::1) and the deprecated IPv4-compatible form
  ['::ffff:0:0:0', 96], // IPv4-translated (SIIT, ::ffff:0:a.b.c.d): reaches an embedded IPv4 through a translator
  ['64:ff9b:1::', 48], // local-use NAT64
  ['100::', 64], // discard-only
  ['2001::', 32], // Teredo: tunnels to an embedded IPv4
  ['2001:db8::', 32], // documentation
  ['2002::', 16], // 6to4: tunnels to an embedded IPv4
  ['fc00::', 7], // unique local, incl. fd00:ec2::254 (AWS metadata over IPv6)
  ['fe80::', 10], // link-local
  ['fec0::', 10], // site-local (deprecated)
  ['ff00::', 8], // multicast
];

const NAT64_PREFIX: [string, number] = ['64:ff9b::', 96];

export class EndpointGuard {
  readonly allowHttp: boolean;
  private readonly blocked = new net.BlockList();
  private readonly allowed = new net.BlockList();
  private readonly nat64 = new net.BlockList();

  constructor(options: EndpointGuardOptions = {}) {
    this.allowHttp = options.allowHttp ?? false;
    for (const [address, prefix] of BLOCKED_IPV4) this.blocked.addSubnet(address, prefix, 'ipv4');
    for (const [address, prefix] of BLOCKED_IPV6) this.blocked.addSubnet(address, prefix, 'ipv6');
    this.nat64.addSubnet(NAT64_PREFIX[0], NAT64_PREFIX[1], 'ipv6');
    for (const cidr of options.allowPrivateCidrs ?? []) {
      const [address, prefix] = parseCidr(cidr);
      this.allowed.addSubnet(address, prefix, net.isIPv4(address) ? 'ipv4' : 'ipv6');
    }
  }

  /**
   * Checks a URL before any connection: scheme, and the host when it is a literal IP.
   * @throws EndpointRefusedError
   */
  checkUrl(url: string | URL): void {
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      // No `cause`: the parser's error carries the whole input, and a URL may hold a secret.
      throw new EndpointRefusedError('invalid-url', 'the webhook URL is not an absolute URL');
    }
    if (parsed.protocol === 'http:') {
      if (!this.allowHttp) {
        throw new EndpointRefusedError('insecure-scheme', 'the webhook URL must use https (http is not allowed here)');
      }
    } else if (parsed.protocol !== 'https:') {
      throw new EndpointRefusedError('invalid-url', `the webhook URL must be http(s), got ${parsed.protocol}`);
    }
    // The URL parser has already normalised odd IPv4 spellings (0x7f.1, 2130706433) to dotted form.
    const host = parsed.hostname.replace(/^\[(.*)\]$/, '$1');
    if (net.isIP(host) !== 0 && this.isBlocked(host)) throw blockedError(host, host);
  }

  /** Whether the guard refuses this IP address. Anything that is not an IP address is refused. */
  isBlocked(address: string): boolean {
    const ip = address.replace(/%.*$/, ''); // a zone index (fe80::1%eth0) would defeat BlockList
    const family = net.isIP(ip);
    if (family === 0) return true;
    const type = family === 4 ? 'ipv4' : 'ipv6';
    if (this.allowed.check(ip, type)) return false;
    if (this.blocked.check(ip, type)) return true;
    if (type === 'ipv6' && this.nat64.check(ip, 'ipv6')) return this.isBlocked(embeddedIpv4(ip));
    return false;
  }

  /**
   * A `lookup` for `http.request`/`net.connect`: resolves every address of a name and refuses
   * the name when any of them is blocked, so a name with one public and one private address
   * cannot be used to reach the private one.
   */
  readonly lookup: net.LookupFunction = (hostname, options, callback) => {
    dns.lookup(hostname, { ...options, all: true }, (error, addresses) => {
      if (error) {
        callback(error, '');
        return;
      }
      const first = addresses[0];
      if (first === undefined) {
        callback(Object.assign(new Error(`${hostname} has no address`), { code: 'ENOTFOUND' }), '');
        return;
      }
      const blocked = addresses.find((a) => this.isBlocked(a.address));
      if (blocked) {
        callback(blockedError(hostname, blocked.address), '');
        return;
      }
      if (options.all) callback(null, addresses);
      else callback(null, first.address, first.family);
    });
  };
}

function blockedError(host: string, address: string): EndpointRefusedError {
  const via = host === address ? '' : ` (${host} resolves to it)`;
  return new EndpointRefusedError(
    'blocked-address',
    `the webhook endpoint ${address}${via} is a private, loopback, link-local or metadata address; allowlist it to use it`,
    address,
  );
}

/** `address/prefix` (or a bare address) as [address, prefix]. @throws RangeError when it is not one. */
export function parseCidr(cidr: string): [string, number] {
  const [address = '', prefixText, extra] = cidr.split('/');
  const family = net.isIP(address);
  const prefix = prefixText === undefined ? (family === 4 ? 32 : 128) : Number(prefixText);
  const max = family === 4 ? 32 : 128;
  if (family === 0 || extra !== undefined || !Number.isInteger(prefix) || prefix < 0 || prefix > max) {
    throw new RangeError(`not a CIDR: "${cidr}"`);
  }
  return [address, prefix];
}

/** The IPv4 address in the last 32 bits of an IPv6 address (written `…:a.b.c.d` or `…:hhhh:hhhh`). */
function embeddedIpv4(ipv6: string): string {
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(ipv6);
  if (dotted?.[1]) return dotted[1];
  const groups = ipv6.split(':');
  const high = Number.parseInt(groups.at(-2) || '0', 16);
  const low = Number.parseInt(groups.at(-1) || '0', 16);
  return [high >> 8, high & 0xff, low >> 8, low & 0xff].join('.');
}
