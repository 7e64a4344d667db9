/**
 * The sandbox's endpoints file (docs/contract.md §11): `HANDOFF_ENDPOINTS_FILE` names a JSON file
 * `{"endpoints": [ … ]}`, each entry an endpoint's fields as `handoff endpoint add` takes them, with
 * its secret as a `whsec_…` (or ed25519 `whsk_…`) value, and every other secret value (a header's,
 * `auth.clientSecret`, `tls.privateKey`) as `{"secret": …}`. It replaces the single-URL settings (`HANDOFF_WEBHOOK_URL`,
 * `HANDOFF_WEBHOOK_SECRET`): giving both is refused.
 *
 * Read once at start-up and checked whole before anything starts: each entry's shape
 * (`parseEndpointFields`), then its settings against the sandbox's deployment (`resolveEndpoint`),
 * then the secret by building its signer. Errors name the variable, the file, the entry and the
 * field, quote what the file holds inert (`quoted`), and never show a secret.
 */
import { readFileSync, statSync } from 'node:fs';
import { VARIABLE_NAMES, type Settings } from '../lib/config';
import { ConfigError, EndpointError, SigningSecretError } from '../lib/errors';
import {
  parseEndpointFields,
  resolveEndpoint,
  type DeploymentSettings,
  type Endpoint,
  type EndpointFields,
} from '../lib/endpoints/endpoint';
import { SECRET_FIELDS } from '../lib/endpoints/fields';
import { secretValuePlaces } from '../lib/endpoints/secret-values';
import { quoted } from '../lib/terminal';
import { redactUrl } from '../lib/webhook/redact-url';
import { createSigner, ED25519_SECRET_PREFIX, isSecretValue, SECRET_PREFIX } from '../lib/webhook/signing-secret';
export const ENDPOINTS_FILE_ENV = 'HANDOFF_ENDPOINTS_FILE';
/**
 * A file this large is not a list of endpoints: 100,000 endpoints of about 600 bytes each fit
 * (docs/contract.md §20), a file that would take the sandbox minutes to read does not.
 */
const MAX_FILE_BYTES = 64 * 1024 * 1024;

/** One endpoint of the file: its fields as written and as resolved against the deployment. */
export interface FileEndpoint {
  readonly fields: EndpointFields;
  readonly endpoint: Endpoint;
}

/**
 * Refuses the endpoints file together with a single-URL setting, naming both variables.
 * @throws ConfigError
 */
export function refuseSingleUrlSettings(settings: Pick<Settings, 'webhookUrl' | 'webhookSecret'>): void {
  const given = [
    settings.webhookUrl !== undefined ? VARIABLE_NAMES.webhookUrl : undefined,
    settings.webhookSecret !== undefined ? VARIABLE_NAMES.webhookSecret : undefined,
  ].filter((name) => name !== undefined);
  if (given.length > 0) {
    throw new ConfigError(
      ENDPOINTS_FILE_ENV,
      `replaces ${given.join(' and ')}: set one or the other (the single-URL settings are the endpoint "default", subscribed to "*": list it in the file instead)`,
    );
  }
}

/** Reads and checks the endpoints file at `path`. @throws ConfigError naming the file, the endpoint and the field */
export function readEndpointsFile(path: string, deployment: DeploymentSettings): FileEndpoint[] {
  let text: string;
  try {
    const bytes = readFileSync(path);
    if (bytes.length > MAX_FILE_BYTES) throw new ConfigError(ENDPOINTS_FILE_ENV, `${path} is larger than ${MAX_FILE_BYTES} bytes`);
    text = bytes.toString('utf8');
  } catch (error) {
    if (error instanceof ConfigError) throw error;
    const code = (error as NodeJS.ErrnoException).code ?? (error as Error).message;
    throw new ConfigError(ENDPOINTS_FILE_ENV, `${path} cannot be read (${code})`);
  }
  return parseEndpointsFile(path, text, deployment);
}

/**
 * Checks an endpoints file's text: `{"endpoints": [ … ]}` with at least one endpoint, each valid,
 * no name twice. `source` names the file in errors. @throws ConfigError
 */
export function parseEndpointsFile(source: string, text: string, deployment: DeploymentSettings): FileEndpoint[] {
  const fail = (problem: string): never => {
    throw new ConfigError(ENDPOINTS_FILE_ENV, `${source} ${problem}`);
  };
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    // The parser's message may quote the text, which may hold a secret: the position only.
    const message = (error as Error).message;
    const at = /position (\d+)/.exec(message)?.[1];
    if (at !== undefined) {
      const lines = text.slice(0, Number(at)).split('\n');
      return fail(`is not JSON (line ${lines.length}, column ${lines.at(-1)!.length + 1})`);
    }
    return fail(`is not JSON${/end of JSON/.test(message) ? ' (it ends too early)' : ''}`);
  }
  if (typeof json !== 'object' || json === null || Array.isArray(json)) return fail('must hold a JSON object {"endpoints": [ … ]}');
  const extra = Object.keys(json).filter((key) => key !== 'endpoints');
  if (extra.length > 0) fail(`has ${extra.map((key) => quoted(key.slice(0, 64))).join(', ')} beside "endpoints", which is all it may hold`);
  const list = (json as { endpoints?: unknown }).endpoints;
  if (!Array.isArray(list)) return fail('must hold "endpoints", a list of endpoints');
  if (list.length === 0) fail('lists no endpoint: every event would be acknowledged undelivered; list at least one');

  const seen = new Map<string, number>();
  const nowMs = Date.now();
  return list.map((entry: unknown, index): FileEndpoint => {
    const where = `endpoints[${index}]`;
    try {
      const fields = parseEndpointFields(entry);
      const first = seen.get(fields.name);
      if (first !== undefined) throw new EndpointError(fields.name, 'name', `is already used by endpoints[${first}]: names must be unique`);
      seen.set(fields.name, index);
      checkUrl(fields);
      checkSecret(fields);
      checkHeaders(fields);
      const endpoint = resolveEndpoint({ fields, state: 'enabled', createdAt: nowMs, updatedAt: nowMs }, deployment);
      return { fields, endpoint };
    } catch (error) {
      if (error instanceof EndpointError) fail(`${where}: ${error.message}`);
      throw error;
    }
  });
}

/**
 * A warning when the file holds a signing secret and others than its owner may read it (the
 * sandbox starts all the same: it is the user's own machine), or undefined.
 */
export function exposedSecretsWarning(path: string, endpoints: readonly FileEndpoint[]): string | undefined {
  const holdsSecret = ({ fields }: FileEndpoint) => fields.secret !== undefined || secretValuePlaces(fields).length > 0;
  if (!endpoints.some(holdsSecret)) return undefined;
  let mode: number;
  try {
    mode = statSync(path).mode;
  } catch {
    return undefined;
  }
  const readers = [mode & 0o040 ? 'group' : '', mode & 0o004 ? 'others' : ''].filter(Boolean);
  if (readers.length === 0) return undefined;
  const octal = (mode & 0o777).toString(8).padStart(3, '0');
  return `${ENDPOINTS_FILE_ENV} ${path} holds signing secrets and is readable by ${readers.join(' and ')} (mode ${octal}): chmod 600 it`;
}

/** Userinfo would travel in a header no log redacts (the single-URL settings refuse it too). */
function checkUrl(fields: EndpointFields): void {
  let url: URL;
  try {
    url = new URL(fields.url);
  } catch {
    throw new EndpointError(fields.name, 'url', 'must be an absolute http(s) URL (the value is not shown: it may hold a secret)');
  }
  if (url.username || url.password) throw new EndpointError(fields.name, 'url', `must not carry credentials (user:password@), got ${redactUrl(fields.url)}`);
}

/**
 * The sandbox has no Secrets Manager: a secret (and a previous one, in a rotation's overlap) is a
 * `whsec_…` or `whsk_…` value that can sign.
 */
function checkSecret(fields: EndpointFields): void {
  for (const field of SECRET_FIELDS) {
    const secret = fields[field];
    if (secret === undefined) continue;
    if (!isSecretValue(secret)) {
      throw new EndpointError(fields.name, field, `must be a ${SECRET_PREFIX}… value in the sandbox (or an ed25519 ${ED25519_SECRET_PREFIX}… one), which has no Secrets Manager to hold an ARN's`);
    }
    try {
      createSigner(secret);
    } catch (error) {
      if (error instanceof SigningSecretError) {
        throw new EndpointError(fields.name, field, `must be a Standard Webhooks secret (${SECRET_PREFIX}<base64> or ${ED25519_SECRET_PREFIX}<base64>): ${error.message} (the value is not shown)`);
      }
      throw error;
    }
  }
}

/**
 * Nor for its other secret values (a header's, `auth.clientSecret`, `tls.privateKey`): each is the
 * value itself, `{"secret": …}`, and a certificate the PEM itself, never an ARN's.
 */
function checkHeaders(fields: EndpointFields): void {
  for (const { path, value } of secretValuePlaces(fields)) {
    if ('secretArn' in value) {
      const instead = path === 'tls.clientCertificate' || path === 'tls.ca' ? 'give the PEM itself' : 'give the value itself, {"secret": "…"}';
      throw new EndpointError(fields.name, path, `names a Secrets Manager secret, which the sandbox has none of: ${instead}`);
    }
  }
}
