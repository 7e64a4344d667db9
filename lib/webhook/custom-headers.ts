/**
 * The request headers an endpoint may add to its requests (docs/contract.md §18, its `headers`
 * field): names and values as HTTP takes them, and the names it may not set. The endpoint's field is
 * checked with these (lib/endpoints/field-schemas.ts) and the sender checks them again when it is
 * made (lib/webhook/http-sender.ts), so a request's own headers (docs/contract.md §3) are never
 * replaced or doubled, whatever an item written by hand holds.
 */

/** At most this many headers an endpoint: enough for a token, a tenant and a few routing keys. */
export const MAX_CUSTOM_HEADERS = 20;
/** A value's longest: a long bearer token fits; common servers take 8 KiB of headers in all. */
export const MAX_HEADER_VALUE_CHARS = 4096;
export const MAX_HEADER_NAME_CHARS = 128;

/** A header name: an RFC 7230 token. */
export const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
/** A header value: visible ASCII, spaces within but not at either end (no tab, no control, nothing past 0x7E). */
export const HEADER_VALUE = /^[\x21-\x7e](?:[\x20-\x7e]*[\x21-\x7e])?$/;

/**
 * The names the contract refuses (docs/contract.md §18), what every request carries itself (§3:
 * `content-type`, `idempotency-key`, the `webhook-*` headers, `user-agent`), what frames the request
 * (a second `content-length` or a `transfer-encoding` would make it another request), and the
 * hop-by-hop headers a connection, not a receiver, reads. Lower case: names are case-insensitive.
 */
export const REFUSED_HEADERS: ReadonlySet<string> = new Set([
  'host',
  'content-length',
  'content-type',
  'idempotency-key',
  'traceparent',
  'tracestate',
  'user-agent',
  'connection',
  'keep-alive',
  'proxy-connection',
  'transfer-encoding',
  'te',
  'trailer',
  'upgrade',
  'expect',
]);
/** Every `webhook-…` header is the request's own (Standard Webhooks' and §13's `webhook-sequence`). */
export const REFUSED_HEADER_PREFIX = 'webhook-';

/** Why an endpoint may not set header `name`, or undefined when it may. */
export function refusedHeaderProblem(name: string): string | undefined {
  const lower = name.toLowerCase();
  if (lower.startsWith(REFUSED_HEADER_PREFIX)) return `is refused: every ${REFUSED_HEADER_PREFIX}… header is the request's own (docs/contract.md §3)`;
  if (REFUSED_HEADERS.has(lower)) return `is refused: the request sets ${lower} itself, or it is the connection's (refused: ${[...REFUSED_HEADERS].join(', ')}, ${REFUSED_HEADER_PREFIX}…)`;
  return undefined;
}
