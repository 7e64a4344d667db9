/**
 * The secret values an endpoint's fields hold besides its signing secrets (docs/contract.md §18): a
 * header's (`headers.<Name>`), the OAuth2 client secret (`auth.clientSecret`), the client
 * certificate's key (`tls.privateKey`), and a certificate or CA kept in Secrets Manager
 * (`tls.clientCertificate`, `tls.ca`). Each is `{"secretArn": ARN}` or `{"secret": value}` (a
 * ciphertext once the registry stored it), found here by its path, so that every place that must
 * treat them alike does it once: the registry encrypting a plain value, the consumer reading or
 * decrypting each, the construct granting and refusing, the sandbox refusing an ARN, the views
 * hiding them.
 */
import type { EndpointFields, HeaderValue } from './endpoint';
import type { SecretPlace } from './secret-cipher';

export type SecretValue = { readonly secretArn: string } | { readonly secret: string };

/** One secret value of an endpoint, where it is (`headers.X-Api-Key`, `auth.clientSecret`, `tls.privateKey`). */
export interface SecretValuePlace {
  readonly path: string;
  readonly value: SecretValue;
}

type Fields = Pick<Partial<EndpointFields>, 'headers' | 'auth' | 'tls'>;

/** The place a value at `path` is encrypted under (lib/endpoints/secret-cipher.ts): a header by its name, another field by its path. */
export function cipherPlace(path: string): SecretPlace {
  return path.startsWith('headers.') ? path.slice('headers.'.length) : `field:${path}`;
}

/** Whether a field's value is a secret value (not text, nor anything else). */
export function isSecretValueObject(value: unknown): value is SecretValue {
  if (typeof value !== 'object' || value === null) return false;
  return typeof (value as { secretArn?: unknown }).secretArn === 'string' || typeof (value as { secret?: unknown }).secret === 'string';
}

/** Every secret value of `fields` with its path, in a fixed order: headers, auth, tls. */
export function secretValuePlaces(fields: Fields): SecretValuePlace[] {
  const places: SecretValuePlace[] = [];
  for (const [name, value] of Object.entries(fields.headers ?? {})) {
    if (isSecretValueObject(value)) places.push({ path: `headers.${name}`, value });
  }
  // Read with care: the construct's declarations are not parsed yet when their ARNs are looked for.
  const auth = fields.auth as Readonly<Record<string, unknown>> | undefined;
  if (typeof auth === 'object' && auth !== null && isSecretValueObject(auth.clientSecret)) places.push({ path: 'auth.clientSecret', value: auth.clientSecret });
  const tls = fields.tls as Readonly<Record<string, unknown>> | undefined;
  if (typeof tls === 'object' && tls !== null) {
    for (const key of ['clientCertificate', 'privateKey', 'ca'] as const) {
      const value = tls[key];
      if (isSecretValueObject(value)) places.push({ path: `tls.${key}`, value });
    }
  }
  return places;
}

/**
 * `fields` with each secret value replaced by what `map` makes of it (a construct's ARN put back, a
 * stand-in), every other field as it is. Headers keep their order.
 */
export function mapSecretValues<F extends Fields>(fields: F, map: (place: SecretValuePlace) => SecretValue): F {
  return replaced(fields, new Map(secretValuePlaces(fields).map((place) => [place.path, map(place)] as const)));
}

/** The same with a `map` that takes its time (the registry encrypting a plain value), every value mapped at once. */
export async function mapSecretValuesAsync<F extends Fields>(fields: F, map: (place: SecretValuePlace) => Promise<SecretValue>): Promise<F> {
  return replaced(fields, new Map(await Promise.all(secretValuePlaces(fields).map(async (place) => [place.path, await map(place)] as const))));
}

function replaced<F extends Fields>(fields: F, mapped: ReadonlyMap<string, SecretValue>): F {
  if (mapped.size === 0) return fields;
  const out: Record<string, unknown> = { ...fields };
  const paths = [...mapped.keys()];
  if (fields.headers !== undefined && paths.some((path) => path.startsWith('headers.'))) {
    out.headers = Object.fromEntries(Object.entries(fields.headers).map(([name, value]): [string, HeaderValue] => [name, mapped.get(`headers.${name}`) ?? value]));
  }
  if (fields.auth !== undefined && mapped.has('auth.clientSecret')) out.auth = { ...fields.auth, clientSecret: mapped.get('auth.clientSecret') };
  if (fields.tls !== undefined && paths.some((path) => path.startsWith('tls.'))) {
    const tls: Record<string, unknown> = { ...fields.tls };
    for (const key of ['clientCertificate', 'privateKey', 'ca'] as const) if (mapped.has(`tls.${key}`)) tls[key] = mapped.get(`tls.${key}`);
    out.tls = tls;
  }
  return out as F;
}
