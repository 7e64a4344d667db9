/**
 * AWS Signature Version 4 written out from the specification (docs.aws.amazon.com, "Create a signed
 * AWS API request"), with node:crypto alone: the tests check the client's signatures against it, so
 * the signer is never checked against itself.
 */
import { createHash, createHmac } from 'node:crypto';

/**
 * A SigV4 Authorization header computed from the specification, step by step: the canonical request
 * (each path segment URI-encoded again, as every service but S3 does; the query sorted by name;
 * headers lower-cased, trimmed, sorted; the body's SHA-256), the string to sign, the signing key
 * derived by HMAC from the date, region and service, and the signature.
 */
export function specificationSignature(input: {
  method: string;
  url: URL;
  headers: Record<string, string>;
  body: string;
  accessKeyId: string;
  secretAccessKey: string;
  region: string;
  service: string;
  amzDate: string;
}): string {
  const sha256 = (data: string) => createHash('sha256').update(data, 'utf8').digest('hex');
  const hmac = (key: string | Buffer, data: string) => createHmac('sha256', key).update(data, 'utf8').digest();
  const canonicalUri = input.url.pathname
    .split('/')
    .map((segment) => uriEncode(segment))
    .join('/');
  const canonicalQuery = [...input.url.searchParams]
    .map(([name, value]) => [uriEncode(name), uriEncode(value)] as const)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([name, value]) => `${name}=${value}`)
    .join('&');
  const names = Object.keys(input.headers)
    .map((name) => name.toLowerCase())
    .sort();
  const canonicalHeaders = names.map((name) => `${name}:${input.headers[name]!.trim().replace(/\s+/g, ' ')}\n`).join('');
  const signedNames = names.join(';');
  const canonicalRequest = [input.method, canonicalUri, canonicalQuery, canonicalHeaders, signedNames, sha256(input.body)].join('\n');
  const day = input.amzDate.slice(0, 8);
  const scope = `${day}/${input.region}/${input.service}/aws4_request`;
  const stringToSign = ['AWS4-HMAC-SHA256', input.amzDate, scope, sha256(canonicalRequest)].join('\n');
  const key = hmac(hmac(hmac(hmac(`AWS4${input.secretAccessKey}`, day), input.region), input.service), 'aws4_request');
  const signature = createHmac('sha256', key).update(stringToSign, 'utf8').digest('hex');
  return `AWS4-HMAC-SHA256 Credential=${input.accessKeyId}/${scope}, SignedHeaders=${signedNames}, Signature=${signature}`;
}

/** The specification's UriEncode: every UTF-8 byte but A–Z a–z 0–9 - . _ ~ as %XX, upper-case hex. */
function uriEncode(text: string): string {
  return [...Buffer.from(text, 'utf8')]
    .map((byte) => (/[A-Za-z0-9\-._~]/.test(String.fromCharCode(byte)) ? String.fromCharCode(byte) : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`))
    .join('');
}
