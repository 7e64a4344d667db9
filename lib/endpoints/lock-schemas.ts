/**
 * The valibot schemas of an endpoint's `auth` and `tls` (docs/contract.md §18), as fields.ts takes
 * them: a receiver behind an OAuth2 token endpoint, or one that asks for a client certificate.
 *
 * A secret in them (the client secret, the private key; a certificate kept beside its key) is a
 * secret value as a header's is: `{"secretArn": ARN}` (AWS: Secrets Manager, read by the consumer
 * alone) or `{"secret": value}` (the sandbox: stored encrypted by the registry, each under a context
 * naming its path, lib/endpoints/secret-cipher.ts), never plain text, and never shown after it is
 * written. Its refusals name the path (`tls.privateKey`) and never quote the value.
 */
import * as v from 'valibot';
import { ENCRYPTED_SECRET } from './secret-cipher';
import { SECRET_ARN, url } from './field-schemas';
import { certificatesProblem, keyPairProblem, privateKeyProblem } from './pem';

export const AUTH_TYPES = ['oauth2-client-credentials'] as const;

const SECRET_VALUE_PROBLEM = 'must be {"secretArn": "<Secrets Manager secret ARN>"} (AWS) or {"secret": "<value>"} (the sandbox), never the value as plain text (the value is not shown)';
const arnValue = v.strictObject({ secretArn: v.pipe(v.string(SECRET_VALUE_PROBLEM), v.regex(SECRET_ARN, SECRET_VALUE_PROBLEM)) }, SECRET_VALUE_PROBLEM);

/**
 * A secret value: by ARN, or the value itself (`text`: its shape, checked only while it is plain;
 * a ciphertext the registry made of one was checked when it was written).
 */
function secretValue(text: v.GenericSchema<string, string>) {
  return v.union(
    [arnValue, v.strictObject({ secret: v.union([v.pipe(v.string(SECRET_VALUE_PROBLEM), v.regex(ENCRYPTED_SECRET, SECRET_VALUE_PROBLEM)), text], SECRET_VALUE_PROBLEM) }, SECRET_VALUE_PROBLEM)],
    SECRET_VALUE_PROBLEM,
  );
}

const CLIENT_SECRET_PROBLEM = 'must be 1–1024 visible ASCII characters (the value is not shown)';
const clientSecretText = v.pipe(v.string(CLIENT_SECRET_PROBLEM), v.maxLength(1024, CLIENT_SECRET_PROBLEM), v.regex(/^[\x21-\x7e]+$/, CLIENT_SECRET_PROBLEM));

/** Text of the grant's request: visible ASCII, spaces within (a scope is a space-separated list). */
function grantText(max: number, what: string) {
  const problem = `must be ${what}: 1–${max} visible ASCII characters, spaces within`;
  return v.pipe(v.string(problem), v.maxLength(max, problem), v.regex(/^[\x21-\x7e]([\x20-\x7e]*[\x21-\x7e])?$/, problem));
}

const AUTH_PROBLEM =
  'must be {"type": "oauth2-client-credentials", "tokenUrl": "https://…", "clientId": "…", "clientSecret": {"secretArn": …} or {"secret": …}, "scope"?: "…", "audience"?: "…"}';
/**
 * An OAuth2 client-credentials grant: the consumer asks `tokenUrl` for a token with the client's ID
 * and secret and sends it as `Authorization: Bearer …` (lib/webhook/**). `tokenUrl` passes the same
 * checks as `url` (the endpoint guard: resolveEndpoint).
 */
export const auth = v.pipe(
  v.strictObject(
    {
      type: v.picklist(AUTH_TYPES, `must be one of ${AUTH_TYPES.join(', ')}`),
      tokenUrl: url,
      clientId: grantText(256, 'a client ID'),
      clientSecret: secretValue(clientSecretText),
      scope: v.optional(grantText(1024, 'a space-separated list of scopes')),
      audience: v.optional(grantText(1024, 'an audience')),
    },
    AUTH_PROBLEM,
  ),
  v.readonly(),
);
export type AuthField = v.InferOutput<typeof auth>;

const PEM_PROBLEM = 'must be PEM text (the text is not shown)';
const pemText = v.string(PEM_PROBLEM);
/** A certificate chain given inline: PEM the check below reads. */
const certificates = v.pipe(pemText, v.minLength(1, PEM_PROBLEM));
const CERTIFICATE_PROBLEM = 'must be PEM text (-----BEGIN CERTIFICATE-----…) or {"secretArn": "<Secrets Manager secret ARN>"} for one kept there (the text is not shown)';
/** No secret, so inline as it is; or kept in Secrets Manager, as people keep a certificate with its key. */
const publicPem = v.union([certificates, arnValue], CERTIFICATE_PROBLEM);

const TLS_PROBLEM = 'must be {"clientCertificate": PEM or {"secretArn": …}, "privateKey": {"secretArn": …} or {"secret": PEM}, "ca"?: PEM or {"secretArn": …}}';
/**
 * A client certificate the consumer presents to a receiver that asks for one, its private key, and
 * a CA to trust for this endpoint alone. What is at hand is checked here: the PEM of an inline
 * certificate or CA, a key given as a plain value, and the key against the certificate when both are.
 * A value read by ARN is checked when the consumer reads it (lib/routing.ts).
 */
export const tls = v.pipe(
  v.strictObject(
    {
      clientCertificate: publicPem,
      privateKey: secretValue(v.pipe(pemText, v.minLength(1, PEM_PROBLEM))),
      ca: v.optional(publicPem),
    },
    TLS_PROBLEM,
  ),
  v.rawCheck(({ dataset, addIssue }) => {
    if (!dataset.typed) return;
    const input = dataset.value;
    const refuse = (key: 'clientCertificate' | 'privateKey' | 'ca', message: string) =>
      addIssue({ message, path: [{ type: 'object', origin: 'value', input, key, value: input[key] }] });
    const { clientCertificate, privateKey, ca } = input;
    const certificate = typeof clientCertificate === 'string' ? clientCertificate : undefined;
    const certificateProblem = certificate === undefined ? undefined : certificatesProblem(certificate);
    if (certificateProblem !== undefined) return refuse('clientCertificate', certificateProblem);
    const key = 'secret' in privateKey && !ENCRYPTED_SECRET.test(privateKey.secret) ? privateKey.secret : undefined;
    const keyProblem = key === undefined ? undefined : privateKeyProblem(key);
    if (keyProblem !== undefined) return refuse('privateKey', keyProblem);
    const caProblem = typeof ca === 'string' ? certificatesProblem(ca) : undefined;
    if (caProblem !== undefined) return refuse('ca', caProblem);
    const pairProblem = certificate !== undefined && key !== undefined ? keyPairProblem(certificate, key) : undefined;
    if (pairProblem !== undefined) refuse('privateKey', pairProblem);
  }),
  v.readonly(),
);
export type TlsField = v.InferOutput<typeof tls>;
