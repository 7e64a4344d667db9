/**
 * Receivers behind locks, end to end against the running sandbox (docs/contract.md §18): its real
 * consumer, in its worker processes, delivers to loopback receivers that verify every request with
 * the receiver kit holding only what an operator would give them: the public key `handoff endpoint
 * show` or `GET /v1/endpoints/{name}` shows (a request it cannot verify is answered 401, which kills
 * the delivery, so a delivered event is a verified one). Each signature is also checked with
 * node:crypto's own ed25519 `verify`, not through handoff's code.
 *
 * - `endpoint add --signature ed25519 --headers …`: a key pair, its public key shown, requests
 *   signed `v1a` with the custom header on them; a refused header name is refused naming its path,
 *   by the command (exit 2) and by the API (400, `errors[].path`);
 * - `POST /v1/endpoints` with `signature: "ed25519"` and a secret header (`{"secret": …}`, stored
 *   encrypted, shown as `{"secret": true}`, sent as given), then a rotation through the API: during
 *   the overlap a receiver holding either public key verifies;
 * - an HMAC endpoint from the endpoints file moved to ed25519 by `rotate-secret --signature
 *   ed25519`: `v1a` and `v1` together, the old secret and the new public key each verifying;
 * - an ed25519 endpoint with a secret header from the endpoints file, seeded as it is;
 * - `auth` and `tls` through the API: each secret stored encrypted, shown as `{"secret": true}`, kept
 *   by an update; a plain client secret, a certificate that is no PEM and a mismatched key refused
 *   naming their paths; both cleared by `update --clear`.
 *
 * Tests run in order and share the sandbox. Run the file, not a single test.
 */
import { createServer, type IncomingHttpHeaders } from 'node:http';
import { createPublicKey, verify } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { main, type Io } from '../../cli/main';
import { generateSecret } from '../../lib/endpoints/secret';
import { MemoryIdempotencyStore } from '../../lib/receiver/memory-store';
import { createReceiver } from '../../lib/receiver/receiver';
import { publicKeyOf } from '../../lib/webhook/signing-secret';
import { listenOnLoopback, type Listening } from '../helpers/loopback';
import { OpenApiValidator } from '../helpers/openapi-validator';
import { startSandboxProcess, type SandboxProcess } from '../helpers/sandbox';
import { eventually, SandboxClients } from '../helpers/sandbox-clients';

const SETTLE_MS = 60_000;
const LEGACY_SECRET = 'whsec_T7ojJeNsUogA3D9W+2rOXCHVIoj2XRbaCCjTarhNdhk=';
const FILE_KEY = generateSecret('ed25519');
const tlsFixture = (name: string) => readFileSync(new URL(`../fixtures/tls/${name}`, import.meta.url), 'utf8');
const TLS_CERT = tlsFixture('client.pem');
const TLS_KEY = tlsFixture('client.key.pem');
const TLS_OTHER_KEY = tlsFixture('other-client.key.pem');
const TLS_KEY_MATERIAL = TLS_KEY.split('\n')[1]!;

interface Delivered {
  readonly headers: IncomingHttpHeaders;
  readonly body: string;
  /** What the receiver kit answered: 200 verified, 401 not. */
  readonly status: number;
}

/**
 * A receiver that verifies with the receiver kit, holding `keys` (set by the test once it has them:
 * a public key, a secret, or both during a rotation), and records every request with its answer.
 */
interface VerifyingReceiver {
  readonly url: string;
  keys: readonly string[];
  readonly requests: Delivered[];
  forEvent(eventId: string): Promise<Delivered>;
  close(): Promise<void>;
}

async function startVerifyingReceiver(): Promise<VerifyingReceiver> {
  const store = new MemoryIdempotencyStore();
  const requests: Delivered[] = [];
  let listening: Listening | undefined;
  const receiver: VerifyingReceiver = {
    url: '',
    keys: [],
    requests,
    forEvent: (eventId) =>
      eventually(`a request for ${eventId}`, async () => requests.find((r) => r.headers['webhook-id'] === eventId), {
        timeoutMs: SETTLE_MS,
        describe: () => `requests so far: ${requests.map((r) => `${String(r.headers['webhook-id'])} (${r.status})`).join(', ') || 'none'}`,
      }),
    close: () => listening?.close() ?? Promise.resolve(),
  };
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      // The keys as they are now: a receiver switches keys during a rotation's overlap.
      const receive = createReceiver({ secrets: receiver.keys.length > 0 ? receiver.keys : ['whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw'], store, action: () => ({ status: 200, body: 'ok' }) });
      void receive({ method: req.method ?? 'POST', headers: req.headers, body }).then((answer) => {
        requests.push({ headers: req.headers, body, status: answer.status });
        res.writeHead(answer.status, answer.headers).end(answer.body);
      });
    });
  });
  listening = await listenOnLoopback(server);
  return Object.assign(receiver, { url: listening.url });
}

/** Whether node:crypto, given only the public key, verifies a `v1a,` entry of the request. */
function nodeVerifies(delivered: Delivered, whpk: string): boolean {
  const key = createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: Buffer.from(whpk.slice('whpk_'.length), 'base64').toString('base64url') }, format: 'jwk' });
  const signed = Buffer.from(`${String(delivered.headers['webhook-id'])}.${String(delivered.headers['webhook-timestamp'])}.${delivered.body}`);
  return String(delivered.headers['webhook-signature'])
    .split(' ')
    .filter((entry) => entry.startsWith('v1a,'))
    .some((entry) => verify(null, signed, key, Buffer.from(entry.slice(4), 'base64')));
}

/** The schemes of a request's signature entries, in order. */
function schemes(delivered: Delivered): string[] {
  return String(delivered.headers['webhook-signature'])
    .split(' ')
    .map((entry) => entry.slice(0, entry.indexOf(',')));
}

let sandbox: SandboxProcess;
let clients: SandboxClients;
let validator: OpenApiValidator;
const receivers: VerifyingReceiver[] = [];
const savedEnv = { ...process.env };

/** `handoff endpoint <args>` against the sandbox (found through its state file), in this process. */
async function handoff(args: readonly string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const io = {
    stdin: process.stdin,
    stdout: { write: (chunk: string) => ((stdout += chunk), true) },
    stderr: { write: (chunk: string) => ((stderr += chunk), true) },
  } as unknown as Io;
  const code = await main(['node', 'handoff', 'endpoint', ...args], io);
  return { code, stdout, stderr };
}

/** One call to the sandbox's API, its answer checked against the API's own OpenAPI document. */
async function api(method: string, path: string, body?: unknown): Promise<{ status: number; json: any }> {
  const headers: Record<string, string> = { authorization: `Bearer ${sandbox.ready.apiToken}` };
  if (body !== undefined) headers['content-type'] = 'application/json';
  const response = await fetch(`${sandbox.ready.apiUrl}${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await response.text();
  const check = validator.check({ method, url: path, status: response.status, contentType: response.headers.get('content-type') ?? undefined, body: text });
  expect(check.errors, `${method} ${path} answered ${response.status}: ${text.slice(0, 300)}`).toEqual([]);
  return { status: response.status, json: text === '' ? undefined : JSON.parse(text) };
}

function event(id: string, carrier: string): string {
  return JSON.stringify({ id, shipmentId: `shp_${id}`, status: 'delivered', occurredAt: '2026-12-04T10:15:00Z', data: { carrier } });
}

/** An endpoint's fields as its registry item holds them, read past the command and the adapter. */
async function storedFields(name: string): Promise<Record<string, unknown> | undefined> {
  const { Item } = await clients.documents.send(new GetCommand({ TableName: sandbox.ready.endpointsTable, Key: { name }, ConsistentRead: true }));
  return Item?.fields as Record<string, unknown> | undefined;
}

describe('receivers behind locks, against the running sandbox', { timeout: 180_000 }, () => {
  let erp: VerifyingReceiver;
  let crm: VerifyingReceiver;
  let legacy: VerifyingReceiver;
  let fromFile: VerifyingReceiver;

  beforeAll(async () => {
    for (const name of Object.keys(process.env)) if (name.startsWith('HANDOFF_') || name.startsWith('AWS_')) delete process.env[name];
    process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';
    [erp, crm, legacy, fromFile] = await Promise.all([startVerifyingReceiver(), startVerifyingReceiver(), startVerifyingReceiver(), startVerifyingReceiver()]);
    receivers.push(erp, crm, legacy, fromFile);
    sandbox = await startSandboxProcess({
      endpoints: [
        { name: 'legacy', url: legacy.url, eventTypes: ['*'], match: { 'data.carrier': ['legacy'] }, secret: LEGACY_SECRET },
        {
          name: 'file-erp',
          url: fromFile.url,
          eventTypes: ['*'],
          match: { 'data.carrier': ['file-erp'] },
          signature: 'ed25519',
          secret: FILE_KEY,
          headers: { 'X-From-File': 'yes', Authorization: { secret: 'Bearer file-t0k3n' } },
        },
      ],
      env: { HANDOFF_RETRY_SCHEDULE: '1', HANDOFF_MAX_ATTEMPTS: '2', HANDOFF_ATTEMPT_TIMEOUT_MS: '2000', HANDOFF_MAX_CONCURRENCY: '2' },
      // Each batch reads the registry, so an event sent after a change meets it.
      endpointsCacheMs: 0,
    });
    clients = new SandboxClients(sandbox.ready);
    process.env.HANDOFF_SANDBOX_FILE = sandbox.stateFile;
    const document = (await (await fetch(`${sandbox.ready.apiUrl}/v1/openapi.json`, { headers: { authorization: `Bearer ${sandbox.ready.apiToken}` } })).json()) as object;
    validator = await OpenApiValidator.of(document as never);
  }, 180_000);

  afterAll(async () => {
    process.env = savedEnv;
    clients?.close();
    await sandbox?.stop('SIGKILL');
    await Promise.all(receivers.map((r) => r.close()));
  });

  it('adds an ed25519 endpoint with a header: a key pair, its public key shown, the secret key printed once', async () => {
    const options = ['--name', 'erp', '--url', erp.url, '--event-types', '*', '--match', 'data.carrier=erp'];
    const added = await handoff(['add', ...options, '--signature', 'ed25519', '--headers', 'X-Tenant: acme-eu', '--json']);
    const shown = await handoff(['show', 'erp', '--json']);

    expect(added.code, added.stderr).toBe(0);
    const body = JSON.parse(added.stdout) as Record<string, unknown>;
    expect(body.generatedSecret).toMatch(/^whsk_[A-Za-z0-9+/]{86}==$/);
    expect(body.publicKey).toBe(publicKeyOf(body.generatedSecret as string));
    expect(JSON.parse(shown.stdout)).toMatchObject({
      name: 'erp',
      secret: 'set',
      publicKey: body.publicKey,
      headers: { 'X-Tenant': 'acme-eu' },
      settings: { signature: 'ed25519' },
      effective: { signature: 'ed25519' },
    });
    expect(shown.stdout).not.toContain((body.generatedSecret as string).slice(5));
    // Stored encrypted under the sandbox's key, its public key beside it in the clear.
    expect(await storedFields('erp')).toMatchObject({ secret: expect.stringMatching(/^encrypted:local:/), publicKey: body.publicKey, signature: 'ed25519' });
    erp.keys = [body.publicKey as string];
  });

  it('delivers to it signed v1a, which the receiver verifies with the public key alone, the header on the request', async () => {
    await clients.send(event('evt_erp_1', 'erp'));

    const delivered = await erp.forEvent('evt_erp_1');

    expect(delivered.status).toBe(200);
    expect(schemes(delivered)).toEqual(['v1a']);
    expect(nodeVerifies(delivered, erp.keys[0]!)).toBe(true);
    expect(delivered.headers['x-tenant']).toBe('acme-eu');
    expect(delivered.headers['content-type']).toBe('application/json');
    await eventually('the delivery to be recorded delivered', async () => (await clients.row('evt_erp_1', 'erp'))?.state === 'delivered', { timeoutMs: SETTLE_MS });
  });

  it('refuses a header the request keeps for itself at endpoint add and at the API, naming its path, adding nothing', async () => {
    const refused = await handoff(['add', '--name', 'bad', '--url', erp.url, '--event-types', '*', '--headers', 'Webhook-Id: forged']);
    const byApi = await api('POST', '/v1/endpoints', { name: 'bad', url: erp.url, eventTypes: ['*'], headers: { 'Content-Type': 'text/plain', 'X-Ok': 'fine' } });

    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/^handoff: endpoint "bad": headers\.Webhook-Id is refused: every webhook-… header is the request's own/);
    expect(byApi.status).toBe(400);
    expect(byApi.json.errors).toEqual([{ path: 'headers.Content-Type', message: expect.stringContaining('is refused: the request sets content-type itself') }]);
    expect((await handoff(['show', 'bad'])).code).toBe(1);
  });

  it('creates one through the API with a secret header: shown as {"secret": true}, stored encrypted, sent as given', async () => {
    const created = await api('POST', '/v1/endpoints', {
      name: 'crm',
      url: crm.url,
      eventTypes: ['*'],
      match: { 'data.carrier': ['crm'] },
      signature: 'ed25519',
      headers: { 'X-Tenant': 'crm', Authorization: { secret: 'Bearer api-t0k3n' } },
    });
    const read = await api('GET', '/v1/endpoints/crm');

    expect(created.status).toBe(201);
    expect(created.json.secret).toMatch(/^whsk_/);
    expect(created.json.publicKey).toBe(publicKeyOf(created.json.secret as string));
    expect(read.json).toMatchObject({ publicKey: created.json.publicKey, headers: { 'X-Tenant': 'crm', Authorization: { secret: true } } });
    expect(JSON.stringify(read.json)).not.toContain('api-t0k3n');
    expect(((await storedFields('crm'))?.headers as Record<string, unknown>).Authorization).toEqual({ secret: expect.stringMatching(/^encrypted:local:/) });
    crm.keys = [created.json.publicKey as string];

    await clients.send(event('evt_crm_1', 'crm'));
    const delivered = await crm.forEvent('evt_crm_1');

    expect(delivered.status).toBe(200);
    expect(delivered.headers.authorization).toBe('Bearer api-t0k3n');
    expect(delivered.headers['x-tenant']).toBe('crm');
    expect(nodeVerifies(delivered, crm.keys[0]!)).toBe(true);
  });

  it('keeps a secret header that an update sends back as {"secret": true}', async () => {
    const changed = await api('PATCH', '/v1/endpoints/crm', { headers: { 'X-Tenant': 'crm-2', Authorization: { secret: true } } });

    expect(changed.status).toBe(200);
    expect(changed.json.changed).toEqual(['headers']);
    await clients.send(event('evt_crm_2', 'crm'));
    const delivered = await crm.forEvent('evt_crm_2');
    expect(delivered.headers).toMatchObject({ authorization: 'Bearer api-t0k3n', 'x-tenant': 'crm-2' });
  });

  it('rotates it through the API: during the overlap a receiver holding either public key verifies', async () => {
    const oldKey = crm.keys[0]!;
    const rotated = await api('POST', '/v1/endpoints/crm/rotate-secret', { overlapSeconds: 3600 });

    expect(rotated.status).toBe(200);
    const newKey = rotated.json.publicKey as string;
    expect(newKey).toBe(publicKeyOf(rotated.json.secret as string));
    expect(newKey).not.toBe(oldKey);
    expect((await api('GET', '/v1/endpoints/crm')).json.publicKey).toBe(newKey);

    // A receiver that still has the old key only.
    await clients.send(event('evt_crm_3', 'crm'));
    const withOld = await crm.forEvent('evt_crm_3');
    // One that has switched to the new key.
    crm.keys = [newKey];
    await clients.send(event('evt_crm_4', 'crm'));
    const withNew = await crm.forEvent('evt_crm_4');

    for (const delivered of [withOld, withNew]) {
      expect(delivered.status).toBe(200);
      expect(schemes(delivered)).toEqual(['v1a', 'v1a']);
      expect(nodeVerifies(delivered, oldKey)).toBe(true);
      expect(nodeVerifies(delivered, newKey)).toBe(true);
    }
  });

  it('moves an HMAC endpoint to ed25519 with rotate-secret --signature: v1a and v1 through the overlap, either key verifying', async () => {
    legacy.keys = [LEGACY_SECRET];
    await clients.send(event('evt_legacy_1', 'legacy'));
    expect(schemes(await legacy.forEvent('evt_legacy_1'))).toEqual(['v1']);

    const rotated = await handoff(['rotate-secret', 'legacy', '--signature', 'ed25519', '--overlap', '1h']);

    expect(rotated.code, rotated.stderr).toBe(0);
    const publicKey = /^public key: (whpk_\S+)$/m.exec(rotated.stdout)?.[1];
    expect(publicKey).toBeDefined();
    expect(rotated.stdout).toMatch(/^signing secret: whsk_\S+$/m);
    const shown = JSON.parse((await handoff(['show', 'legacy', '--json'])).stdout) as Record<string, unknown>;
    expect(shown).toMatchObject({ publicKey, settings: { signature: 'ed25519' }, previousSecretUntil: expect.any(String) });

    // Still on the old secret: verified by its v1 entry.
    await clients.send(event('evt_legacy_2', 'legacy'));
    const withSecret = await legacy.forEvent('evt_legacy_2');
    // Switched to the public key: verified by the v1a entry.
    legacy.keys = [publicKey!];
    await clients.send(event('evt_legacy_3', 'legacy'));
    const withKey = await legacy.forEvent('evt_legacy_3');

    for (const delivered of [withSecret, withKey]) {
      expect(delivered.status).toBe(200);
      expect(schemes(delivered)).toEqual(['v1a', 'v1']);
      expect(nodeVerifies(delivered, publicKey!)).toBe(true);
    }
  });

  it('delivers to the endpoints file’s ed25519 endpoint with its secret header, its public key shown', async () => {
    const shown = JSON.parse((await handoff(['show', 'file-erp', '--json'])).stdout) as Record<string, unknown>;

    expect(shown).toMatchObject({ publicKey: publicKeyOf(FILE_KEY), headers: { 'X-From-File': 'yes', Authorization: { secret: true } } });
    fromFile.keys = [shown.publicKey as string];
    await clients.send(event('evt_file_1', 'file-erp'));
    const delivered = await fromFile.forEvent('evt_file_1');

    expect(delivered.status).toBe(200);
    expect(delivered.headers).toMatchObject({ authorization: 'Bearer file-t0k3n', 'x-from-file': 'yes' });
    expect(nodeVerifies(delivered, publicKeyOf(FILE_KEY))).toBe(true);
  });

  it("changes an endpoint's scheme through the API's rotation, and refuses a scheme it does not know, naming signature", async () => {
    const unknown = await api('POST', '/v1/endpoints/crm/rotate-secret', { signature: 'rsa' });
    const back = await api('POST', '/v1/endpoints/crm/rotate-secret', { signature: 'hmac-sha256', overlapSeconds: 0 });

    expect(unknown.status).toBe(400);
    expect(unknown.json.errors).toEqual([{ path: 'signature', message: 'must be one of hmac-sha256, ed25519' }]);
    expect(back.status).toBe(200);
    expect(back.json).toMatchObject({ secret: expect.stringMatching(/^whsec_/), publicKey: null, settings: { signature: 'hmac-sha256' }, previousSecretUntil: null });
  });

  it('creates one with auth and tls through the API: each secret stored encrypted under its path, shown as {"secret": true}, kept by an update that sends that back', async () => {
    const auth = { type: 'oauth2-client-credentials', tokenUrl: 'https://idp.example/oauth2/token', clientId: 'handoff-locked', clientSecret: { secret: 'cl13nt-s3cret' } };
    const tls = { clientCertificate: TLS_CERT, privateKey: { secret: TLS_KEY } };
    // https: a client certificate needs one (no event is delivered to it here).
    const created = await api('POST', '/v1/endpoints', { name: 'locked', url: 'https://locked.example/in', eventTypes: ['*'], match: { 'data.carrier': ['locked'] }, auth, tls });
    const stored = await storedFields('locked');

    expect(created.status).toBe(201);
    expect(created.json).toMatchObject({ auth: { ...auth, clientSecret: { secret: true } }, tls: { clientCertificate: TLS_CERT, privateKey: { secret: true } } });
    expect(JSON.stringify(created.json)).not.toContain('cl13nt-s3cret');
    expect(JSON.stringify(created.json)).not.toContain(TLS_KEY_MATERIAL);
    expect(stored).toMatchObject({ auth: { clientSecret: { secret: expect.stringMatching(/^encrypted:local:/) } }, tls: { privateKey: { secret: expect.stringMatching(/^encrypted:local:/) } } });
    const shown = await handoff(['show', 'locked']);
    expect(shown.stdout).toMatch(/^auth\s+oauth2-client-credentials at https:\/\/idp\.example\/oauth2\/token; client handoff-locked; client secret set$/m);
    expect(shown.stdout).toMatch(/^tls\s+certificate CN=handoff-test-client, O=handoff tests, expires .*; key set$/m);
    expect(shown.stdout).not.toContain(TLS_KEY_MATERIAL);

    const changed = await api('PATCH', '/v1/endpoints/locked', { auth: { ...auth, clientSecret: { secret: true }, scope: 'shipments' }, tls: created.json.tls });

    expect(changed.status).toBe(200);
    expect(changed.json.changed).toEqual(['auth']);
    const after = await storedFields('locked');
    expect(after).toMatchObject({ auth: { scope: 'shipments', clientSecret: (stored!.auth as Record<string, unknown>).clientSecret }, tls: stored!.tls });
  });

  it('refuses a plain client secret, a certificate that is no PEM and a key that is not the certificate’s, naming each path, never the key', async () => {
    const auth = { type: 'oauth2-client-credentials', tokenUrl: 'https://idp.example/token', clientId: 'c', clientSecret: 'plain-s3cret' };
    const plain = await api('POST', '/v1/endpoints', { name: 'bad-auth', url: erp.url, eventTypes: ['*'], auth });
    const noPem = await api('POST', '/v1/endpoints', { name: 'bad-tls', url: erp.url, eventTypes: ['*'], tls: { clientCertificate: 'not pem', privateKey: { secret: TLS_KEY } } });
    const file = join(mkdtempSync(join(tmpdir(), 'handoff-locks-')), 'endpoint.json');
    writeFileSync(file, JSON.stringify({ name: 'bad-pair', url: erp.url, eventTypes: ['*'], tls: { clientCertificate: TLS_CERT, privateKey: { secret: TLS_OTHER_KEY } } }), { mode: 0o600 });
    const mismatched = await handoff(['add', '--from-file', file]);

    expect(plain.status).toBe(400);
    expect(plain.json.errors).toEqual([{ path: 'auth.clientSecret', message: expect.stringContaining('never the value as plain text') }]);
    expect(JSON.stringify(plain.json)).not.toContain('plain-s3cret');
    expect(noPem.status).toBe(400);
    expect(noPem.json.errors).toEqual([{ path: 'tls.clientCertificate', message: expect.stringMatching(/^must be PEM/) }]);
    expect(mismatched.code).toBe(2);
    expect(mismatched.stderr).toMatch(/^handoff: endpoint "bad-pair": tls\.privateKey is not the key of tls\.clientCertificate/);
    expect(mismatched.stderr).not.toContain(TLS_OTHER_KEY.split('\n')[1]);
    for (const name of ['bad-auth', 'bad-tls', 'bad-pair']) expect((await handoff(['show', name])).code).toBe(1);
  });

  it('clears auth and tls with update --clear', async () => {
    const cleared = await handoff(['update', 'locked', '--clear', 'auth', '--clear', 'tls', '--json']);

    expect(cleared.code, cleared.stderr).toBe(0);
    expect(JSON.parse(cleared.stdout)).toMatchObject({ auth: null, tls: null, changed: ['auth', 'tls'] });
    expect(await storedFields('locked')).not.toHaveProperty('auth');
  });

  it('never verified a request the receivers were not meant to: every request answered 200', () => {
    for (const receiver of receivers) expect(receiver.requests.map((r) => r.status).filter((status) => status !== 200)).toEqual([]);
  });
});
