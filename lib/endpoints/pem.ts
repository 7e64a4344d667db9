/**
 * PEM as an endpoint's `tls` takes it (docs/contract.md §18): certificates (a chain: one or more
 * CERTIFICATE blocks) and an unencrypted private key, each checked by Node's own parsers, and a key
 * checked to be its certificate's. Every problem is said without the text given: a key is a secret,
 * and a certificate pasted wrong may hold one.
 */
import { createPrivateKey, X509Certificate, type KeyObject } from 'node:crypto';

/** A certificate chain's size bound: a leaf and a few intermediates fit many times over. */
export const MAX_CERTIFICATES_BYTES = 32 * 1024;
/** A private key's: an RSA 8192-bit key in PKCS#8 PEM is under 7 KiB. */
export const MAX_PRIVATE_KEY_BYTES = 16 * 1024;

const CERTIFICATE_BLOCK = /-----BEGIN CERTIFICATE-----\r?\n[A-Za-z0-9+/=\r\n]+?-----END CERTIFICATE-----/g;
const KEY_BLOCK = /-----BEGIN (RSA |EC |ENCRYPTED )?PRIVATE KEY-----\r?\n[A-Za-z0-9+/=\r\n:,-]+?-----END \1PRIVATE KEY-----/g;
/** One or more CERTIFICATE blocks and nothing else but white space between them. */
const CERTIFICATES = /^\s*(-----BEGIN CERTIFICATE-----\r?\n[A-Za-z0-9+/=\r\n]+?-----END CERTIFICATE-----\s*)+$/;

/** The CERTIFICATE blocks of a PEM text that may hold more (a secret holding a certificate and its key), in order. */
export function certificateBlocks(pem: string): string[] {
  return pem.match(CERTIFICATE_BLOCK) ?? [];
}

/** The first private key block of a PEM text that may hold more; undefined for none. */
export function privateKeyBlock(pem: string): string | undefined {
  return pem.match(KEY_BLOCK)?.[0];
}

/** Why `pem` is no certificate chain (PEM CERTIFICATE blocks Node parses, within the bound), or undefined. */
export function certificatesProblem(pem: string): string | undefined {
  if (Buffer.byteLength(pem, 'utf8') > MAX_CERTIFICATES_BYTES) return `must be at most ${MAX_CERTIFICATES_BYTES / 1024} KiB of PEM`;
  if (!CERTIFICATES.test(pem)) return 'must be PEM: one or more -----BEGIN CERTIFICATE----- blocks and nothing else (the text is not shown)';
  for (const block of certificateBlocks(pem)) {
    try {
      new X509Certificate(block);
    } catch {
      return 'holds a CERTIFICATE block that is no X.509 certificate (the text is not shown)';
    }
  }
  return undefined;
}

/** Why `pem` is no private key handoff can use (one unencrypted PEM key Node parses, within the bound), or undefined. */
export function privateKeyProblem(pem: string): string | undefined {
  if (Buffer.byteLength(pem, 'utf8') > MAX_PRIVATE_KEY_BYTES) return `must be at most ${MAX_PRIVATE_KEY_BYTES / 1024} KiB of PEM (the value is not shown)`;
  const block = privateKeyBlock(pem);
  if (block === undefined || pem.trim() !== block) return 'must be PEM: one -----BEGIN PRIVATE KEY----- block (or RSA / EC PRIVATE KEY) and nothing else (the value is not shown)';
  // No passphrase to give: the key is kept secret by where it is stored (Secrets Manager, the registry's key).
  if (block.startsWith('-----BEGIN ENCRYPTED') || /Proc-Type:\s*4,ENCRYPTED/.test(block)) return 'must not be encrypted with a passphrase: handoff has none to give; it is kept secret where it is stored (the value is not shown)';
  try {
    createPrivateKey(block);
  } catch {
    return 'is no private key Node can read (the value is not shown)';
  }
  return undefined;
}

/** Why `key` is not the private key of the first certificate of `certificates` (both checked already), or undefined. */
export function keyPairProblem(certificates: string, key: string): string | undefined {
  const [leaf] = certificateBlocks(certificates);
  if (leaf === undefined) return undefined;
  let privateKey: KeyObject;
  try {
    privateKey = createPrivateKey(privateKeyBlock(key) ?? key);
  } catch {
    return 'is no private key Node can read (the value is not shown)';
  }
  return new X509Certificate(leaf).checkPrivateKey(privateKey) ? undefined : "is not the key of tls.clientCertificate (the first certificate's public key is another's; the value is not shown)";
}

/** A certificate chain's leaf as a view shows it: its subject and when it expires (ISO); undefined when it does not parse. */
export function certificateSummary(certificates: string): { subject: string; notAfter: string } | undefined {
  const [leaf] = certificateBlocks(certificates);
  if (leaf === undefined) return undefined;
  try {
    const x509 = new X509Certificate(leaf);
    return { subject: x509.subject.split('\n').join(', '), notAfter: new Date(x509.validTo).toISOString() };
  } catch {
    return undefined;
  }
}
