/**
 * An endpoint's client certificate (docs/contract.md §18 `tls`) as the sender presents it, and the
 * TLS refusals that are the receiver's certificate checks rather than a lost answer.
 *
 * The certificate, its key and the endpoint's CA are made into one secure context when the sender is
 * made: a key that does not parse or is not the certificate's fails there, naming the field (never
 * the text), and no connection parses PEM again.
 *
 * `ca` adds to the public roots, never replaces them (Node's own `ca` option replaces them): it says
 * which private CA this endpoint's receiver may also present a certificate of, so a receiver that
 * moves to a publicly trusted certificate keeps working, and nothing is trusted that would not be
 * without the field but that one CA, for that one endpoint.
 *
 * A context is made once per container for the same material: the consumer's resolution checks it
 * (lib/endpoints/resolved-locks.ts), then the sender and its token agent use it. Making one with a
 * `ca` parses every public root again (about 25 ms of CPU, the event loop blocked), so contexts are
 * kept by a digest of what they are made of (`contexts`).
 */
import { createHash, X509Certificate } from 'node:crypto';
import tls from 'node:tls';
import type { ClientTls } from './sender';

/** Client TLS material that cannot be used: a field's problem, the PEM never shown. Decide on `code`. */
export class ClientTlsError extends Error {
  override readonly name = 'ClientTlsError';
  readonly code = 'client-tls';
  constructor(
    /** The field: `tls.clientCertificate`, `tls.privateKey` or `tls.ca`. */
    readonly field: string,
    problem: string,
  ) {
    super(`${field} ${problem} (the value is not shown)`);
  }
}

/**
 * The secure context a connection to the endpoint uses: the roots it trusts (the public ones, plus
 * `tls.ca` when given) and, with `tls`, the client certificate it presents. Undefined when neither is
 * needed: Node's default context then serves.
 * @throws ClientTlsError naming the field that cannot be used
 */
export function secureContextFor(clientTls: ClientTls | undefined): tls.SecureContext | undefined {
  if (clientTls === undefined) return undefined;
  const { clientCertificate: cert, privateKey: key, ca } = clientTls;
  return contexts.get(['client', cert, key, ca ?? null], () => {
    // Each part alone first, so the error names the one that fails; then together, for the key's match.
    attempt('tls.clientCertificate', 'is no PEM certificate Node can read', () => tls.createSecureContext({ cert }));
    attempt('tls.privateKey', 'is no unencrypted PEM private key Node can read', () => tls.createSecureContext({ key }));
    if (ca !== undefined) checkCa(ca);
    return attempt('tls.privateKey', 'is not the key of tls.clientCertificate', () =>
      tls.createSecureContext({ cert, key, ...(ca !== undefined ? { ca: [...tls.rootCertificates, ca] } : {}) }),
    );
  });
}

/**
 * The context for an endpoint's token fetches (docs/contract.md §18 `auth`): the same roots as its
 * receiver's (its `ca` too, which often signs both), but no client certificate: client credentials
 * authenticate by the secret, and a token endpoint that wanted the certificate would say so by
 * another method than this one.
 */
export function tokenContextFor(clientTls: ClientTls | undefined): tls.SecureContext | undefined {
  const ca = clientTls?.ca;
  if (ca === undefined) return undefined;
  return contexts.get(['token', ca], () => {
    checkCa(ca);
    return tls.createSecureContext({ ca: [...tls.rootCertificates, ca] });
  });
}

/**
 * How many contexts a container keeps. Each sender holds its own anyway; these are for the next
 * resolution and sender of the same material. Bounded because one made with a `ca` holds its own copy
 * of the public roots, about 1 MB, and the consumer has 256 MB: 64 covers every endpoint with `tls`
 * that a batch routes to in all but the largest registries (beyond it, a miss costs what it did
 * before), and at worst keeps 64 MB of material an endpoint no longer has.
 */
export const MAX_KEPT_CONTEXTS = 64;

/**
 * Contexts by a SHA-256 of what they are made of (never the PEM itself as a key), the one used
 * longest ago dropped first. A context that cannot be made is not kept: the next call says why again.
 */
class ContextCache {
  readonly #kept = new Map<string, tls.SecureContext>();

  get(material: readonly (string | null)[], make: () => tls.SecureContext): tls.SecureContext {
    const digest = createHash('sha256').update(JSON.stringify(material)).digest('base64');
    const kept = this.#kept.get(digest);
    if (kept !== undefined) {
      // Last in the Map's order: the one used most recently.
      this.#kept.delete(digest);
      this.#kept.set(digest, kept);
      return kept;
    }
    const made = make();
    this.#kept.set(digest, made);
    if (this.#kept.size > MAX_KEPT_CONTEXTS) this.#kept.delete(this.#kept.keys().next().value!);
    return made;
  }
}

const contexts = new ContextCache();

/** Node's context skips a CA it cannot read without a word, so each CERTIFICATE block is read here. */
function checkCa(ca: string): void {
  const blocks = ca.match(/-----BEGIN CERTIFICATE-----[^-]+-----END CERTIFICATE-----/g) ?? [];
  if (blocks.length === 0) throw new ClientTlsError('tls.ca', 'holds no PEM certificate');
  for (const block of blocks) attempt('tls.ca', 'holds a certificate Node cannot read', () => new X509Certificate(block));
}

function attempt<T>(field: string, problem: string, make: () => T): T {
  try {
    return make();
  } catch {
    // Not `cause`: OpenSSL's message may quote the input.
    throw new ClientTlsError(field, problem);
  }
}

/**
 * The alerts a TLS server sends when it refuses the handshake over certificates (RFC 8446 §6.2):
 * certificate_required (116, TLS 1.3's "you sent none"), bad_certificate (42),
 * unsupported_certificate (43), certificate_revoked (44), certificate_expired (45),
 * certificate_unknown (46), unknown_ca (48), access_denied (49), handshake_failure (40). OpenSSL names
 * the error after the alert, `ERR_SSL_<version>_ALERT_<NAME>`.
 */
const REFUSAL_ALERTS = /^ERR_SSL_(?:SSLV3|TLSV1|TLSV13)_ALERT_(?:CERTIFICATE_REQUIRED|BAD_CERTIFICATE|UNSUPPORTED_CERTIFICATE|CERTIFICATE_REVOKED|CERTIFICATE_EXPIRED|CERTIFICATE_UNKNOWN|UNKNOWN_CA|ACCESS_DENIED|HANDSHAKE_FAILURE)$/;

/**
 * Whether a connection failed because the server's TLS layer refused the handshake, over our
 * certificate or its absence. Under TLS 1.3 the server checks the client's certificate after the
 * client's side of the handshake has ended, so its refusal arrives after the request was handed
 * over: it was never read (the server's HTTP layer sees a connection only once its handshake
 * completes), so the attempt sent nothing. Only on a fresh connection: a reused one's handshake
 * ended long ago.
 */
export function isTlsRefusal(error: unknown): boolean {
  const code = (error as { code?: unknown } | undefined)?.code;
  return typeof code === 'string' && REFUSAL_ALERTS.test(code);
}
