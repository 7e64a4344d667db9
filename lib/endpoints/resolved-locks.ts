/**
 * An endpoint's `headers`, `auth` and `tls` as the sender takes them (docs/contract.md §18), from
 * the fields and their secret values as read (by ARN) or decrypted, by path
 * (lib/endpoints/secret-values.ts; lib/routing.ts reads them, once per container).
 *
 * A certificate or key read from Secrets Manager is checked here, as one given inline was when it
 * was written: PEM blocks are taken out of what the secret holds (a secret may keep a certificate and
 * its key together, both fields naming it), and the key must be the certificate's. A problem names
 * the field's path, never the value: the endpoint is then unresolved, as with a secret it cannot read.
 */
import { EndpointError, SecretUnavailableError } from '../errors';
import { HEADER_VALUE, MAX_HEADER_VALUE_CHARS } from '../webhook/custom-headers';
import { ClientTlsError, secureContextFor } from '../webhook/client-tls';
import type { ClientCredentials, ClientTls } from '../webhook/sender';
import type { EndpointFields } from './endpoint';
import { certificateBlocks, certificatesProblem, keyPairProblem, privateKeyBlock, privateKeyProblem } from './pem';

/** The secret values of an endpoint by path, as read or decrypted. */
export type ReadValues = ReadonlyMap<string, string>;

/**
 * Its headers as sent, text as it is and each secret one as read; undefined for none. A value read
 * by ARN must be a header value (one the registry decrypted was checked when it was written).
 * @throws SecretUnavailableError naming the ARN, never the value
 */
export function resolvedHeaders(fields: Pick<EndpointFields, 'headers'>, values: ReadValues): Readonly<Record<string, string>> | undefined {
  const headers = fields.headers;
  if (headers === undefined || Object.keys(headers).length === 0) return undefined;
  return Object.fromEntries(
    Object.entries(headers).map(([name, value]) => {
      if (typeof value === 'string') return [name, value];
      const read = valueAt(values, `headers.${name}`);
      if ('secretArn' in value && (read.length > MAX_HEADER_VALUE_CHARS || !HEADER_VALUE.test(read))) {
        throw new SecretUnavailableError('secret-invalid', `the header secret ${value.secretArn} (headers.${name}) is not a header value: 1–${MAX_HEADER_VALUE_CHARS} visible ASCII characters, spaces within`);
      }
      return [name, read];
    }),
  );
}

/** Its OAuth2 grant with the client secret as read; undefined without one. */
export function resolvedAuth(fields: Pick<EndpointFields, 'auth'>, values: ReadValues): ClientCredentials | undefined {
  const auth = fields.auth;
  if (auth === undefined) return undefined;
  return {
    tokenUrl: auth.tokenUrl,
    clientId: auth.clientId,
    clientSecret: valueAt(values, 'auth.clientSecret'),
    ...(auth.scope !== undefined ? { scope: auth.scope } : {}),
    ...(auth.audience !== undefined ? { audience: auth.audience } : {}),
  };
}

/**
 * Its client certificate, key and CA as read, each checked.
 * @throws EndpointError naming `tls.clientCertificate`, `tls.privateKey` or `tls.ca`
 */
export function resolvedTls(fields: Pick<EndpointFields, 'name' | 'tls'>, values: ReadValues): ClientTls | undefined {
  const tls = fields.tls;
  if (tls === undefined) return undefined;
  const certificates = (key: 'clientCertificate' | 'ca', given: string | object): string => {
    if (typeof given === 'string') return given;
    const read = valueAt(values, `tls.${key}`);
    const pem = certificateBlocks(read).join('\n');
    const problem = pem === '' ? 'names a secret that holds no PEM certificate (the value is not shown)' : certificatesProblem(pem);
    if (problem !== undefined) throw new EndpointError(fields.name, `tls.${key}`, problem);
    return pem;
  };
  const clientCertificate = certificates('clientCertificate', tls.clientCertificate);
  const read = valueAt(values, 'tls.privateKey');
  const privateKey = privateKeyBlock(read) ?? read;
  const problem = privateKeyProblem(privateKey) ?? keyPairProblem(clientCertificate, privateKey);
  if (problem !== undefined) throw new EndpointError(fields.name, 'tls.privateKey', problem);
  const clientTls: ClientTls = { clientCertificate, privateKey, ...(tls.ca !== undefined ? { ca: certificates('ca', tls.ca) } : {}) };
  // The context the sender will use, made here (and kept by client-tls.ts, so the sender takes this
  // one): anything TLS itself refuses (a key type OpenSSL does not take) holds the endpoint, named,
  // rather than failing each delivery's sender.
  try {
    secureContextFor(clientTls);
  } catch (error) {
    if (error instanceof ClientTlsError) throw new EndpointError(fields.name, error.field, error.message.slice(error.field.length + 1));
    throw error;
  }
  return clientTls;
}

function valueAt(values: ReadValues, path: string): string {
  const value = values.get(path);
  // Every path of secretValuePlaces is read before these are called: one missing is a bug here.
  if (value === undefined) throw new Error(`the secret value at ${path} was not read`);
  return value;
}
