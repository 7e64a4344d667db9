/**
 * `handoff endpoint …` end to end (docs/contract.md §11), in two settings:
 *
 * - against the running sandbox, found through its state file as an operator's shell finds it: the
 *   endpoints it seeded listed, and each change the command makes reaching deliveries: an endpoint
 *   added gets its events signed with the secret `add` printed, a disabled one gets none, a secret
 *   rotated with an overlap signs the next beside the old one (each verified on its own by the
 *   `standardwebhooks` library), one rotated with `--overlap 0` alone, a removed endpoint gets
 *   nothing more;
 * - against a registry table on dynalite named explicitly (`--endpoints-table`, with the standard
 *   AWS environment pointing at the emulator), as an operator targets a deployment by its names:
 *   each subcommand's output, exit status, `--json` and refusals.
 *
 * The secrets the command writes are stored encrypted, never as printed: against the names given
 * with the registry's KMS key (`HANDOFF_ENDPOINTS_KEY_ARN`; a loopback KMS answers Encrypt through
 * `AWS_ENDPOINT_URL_KMS`), `encrypted:kms:…` bound to the endpoint; without a key, or with KMS
 * refusing, a secret is not written at all. Against the sandbox, `encrypted:local:…` under the key
 * its state file holds, which its consumer decrypts to sign.
 *
 * The secret is printed by `add` (when generated) and `rotate-secret` only: every other output is
 * checked not to hold it.
 *
 * The commands run in this process through cli/main.ts's `main` once main.ts registers them;
 * until then through `addEndpointCommands` on a program built here the way main.ts builds its own
 * (same runner, same printing, same failure lines and exit statuses).
 *
 * Who disables or enables an endpoint is recorded as the name typed and, in AWS, the STS identity
 * of the credentials (as replay's audit does): a loopback stand-in answers GetCallerIdentity.
 *
 * Within each block the tests share one registry and run in order: later ones use endpoints
 * earlier ones added. Run the file, not a single test.
 */
import type { Server } from 'node:http';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { Command, CommanderError } from 'commander';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addEndpointCommands, type EndpointCommonOptions } from '../../cli/commands/endpoint';
import type { CommandResult } from '../../cli/commands/result';
import { CommandContext } from '../../cli/context';
import { describeFailure, EXIT } from '../../cli/errors';
import { jsonText } from '../../cli/format';
import { buildProgram, main, type Io } from '../../cli/main';
import { resolveTarget, unreachableHint, type Target } from '../../cli/target';
import { readSettings } from '../../lib/config';
import { ConfigError } from '../../lib/errors';
import { DynamoDbEndpointRegistry } from '../../lib/endpoints/dynamodb-registry';
import { LocalSecretCipher, secretContext } from '../../lib/endpoints/secret-cipher';
import { safe } from '../../lib/terminal';
import { createSigner } from '../../lib/webhook/signing-secret';
import { parseEndpointsFile } from '../../sandbox/endpoints-file';
import { createEndpointsTable } from '../../sandbox/endpoints-table';
import { createLedgerTable } from '../../sandbox/ledger-table';
import { emulatorDynamoDbClient, startDynalite, type Dynalite } from '../helpers/dynalite';
import { startKmsStub, type KmsStub } from '../helpers/kms';
import { startTestReceiver, type ReceivedRequest, type TestReceiver } from '../helpers/receiver';
import { startSandboxProcess, type SandboxProcess } from '../helpers/sandbox';
import { eventually, SandboxClients } from '../helpers/sandbox-clients';
import { startCallerIdentity } from '../helpers/sts-stub';

const TABLE = 'handoff-endpoints-cli';
/** The ledger the parked counts are read from. */
const LEDGER_TABLE = 'handoff-ledger-cli';
const CALLER_ARN = 'arn:aws:iam::123456789012:user/ops';
/** The registry's KMS key, as the stack output EndpointsKeyArn names it. */
const KEY_ARN = 'arn:aws:kms:us-east-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab';

interface CliRun {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

let dynalite: Dynalite;
let sts: Server;
let registry: DynamoDbEndpointRegistry;
let client: ReturnType<typeof emulatorDynamoDbClient>;
const savedEnv = { ...process.env };
/** Every secret known, and every output printed: no output but its own add or rotate-secret may hold one. */
const secrets: string[] = [];
/** The secrets the command generated: each printed in exactly one output. */
const generated: string[] = [];
const outputs: { args: readonly string[]; text: string }[] = [];

function collector() {
  let text = '';
  const stream = { write: (chunk: string) => ((text += chunk), true) } as unknown as NodeJS.WriteStream;
  return { stream, text: () => text };
}

/** Whether cli/main.ts registers the endpoint commands itself. */
function mainHasEndpointCommands(): boolean {
  const out = collector();
  const io = { stdin: process.stdin, stdout: out.stream, stderr: out.stream } as Io;
  return buildProgram(io, async () => {}).commands.some((c) => c.name() === 'endpoint');
}

/** main.ts's target options, as its `withTarget` adds them. */
function withTarget(command: Command): Command {
  return command
    .option('--json', 'print JSON for machines')
    .option('--stack <name>', 'a deployed stack: read its CloudFormation outputs')
    .option('--queue-url <url>', 'the delivery queue URL')
    .option('--dlq-url <url>', 'the dead-letter queue URL')
    .option('--table <name>', 'the ledger table name');
}

/** What main.ts does for one command line, with the endpoint commands registered here. */
async function runHere(argv: readonly string[], io: Io): Promise<number> {
  let target: Target | undefined;
  let json = false;
  let exitCode: number = EXIT.ok;
  const program = new Command('handoff')
    .exitOverride()
    .configureOutput({ writeOut: (t) => io.stdout.write(safe(t, { keepNewlines: true })), writeErr: (t) => io.stderr.write(safe(t, { keepNewlines: true })) });
  addEndpointCommands(
    program,
    async (options: EndpointCommonOptions, work: (ctx: CommandContext) => Promise<CommandResult>) => {
      json = options.json === true;
      target = await resolveTarget(options);
      const ctx = new CommandContext(target, { stdout: io.stdout, stderr: io.stderr });
      let result: CommandResult;
      try {
        result = await work(ctx);
      } finally {
        ctx.close();
      }
      io.stdout.write(json ? `${jsonText(result.json)}\n` : `${safe(result.human, { keepNewlines: true })}\n`);
      if (result.failure) {
        io.stderr.write(`handoff: ${safe(result.failure)}\n`);
        exitCode = EXIT.failed;
      }
    },
    withTarget,
  );
  try {
    await program.parseAsync(argv);
    return exitCode;
  } catch (error) {
    if (error instanceof CommanderError) return error.exitCode === 0 ? EXIT.ok : EXIT.usage;
    const failure =
      error instanceof ConfigError
        ? { exitCode: EXIT.usage, code: error.code, message: safe(error.message) }
        : describeFailure(error, (e) => unreachableHint(target, e));
    io.stderr.write(`handoff: ${failure.message}\n`);
    if (json) io.stdout.write(`${jsonText({ error: { code: failure.code, message: failure.message } })}\n`);
    return failure.exitCode;
  }
}

let viaMain = false;

/** The target options every `handoff` call of the block running adds (none: the sandbox's state file). */
let targetArgs: readonly string[] = [];

/** `handoff endpoint <args>` with the block's target, in this process. */
async function handoff(args: readonly string[], options: { target?: readonly string[] } = {}): Promise<CliRun> {
  const stdout = collector();
  const stderr = collector();
  const io = { stdin: process.stdin, stdout: stdout.stream, stderr: stderr.stream } as Io;
  const argv = ['node', 'handoff', 'endpoint', ...args, ...(options.target ?? targetArgs)];
  const code = viaMain ? await main(argv, io) : await runHere(argv, io);
  const run = { code, stdout: stdout.text(), stderr: stderr.text() };
  outputs.push({ args, text: run.stdout + run.stderr });
  return run;
}

/** The message of the ConfigError `refuse` throws. */
function refusalOf(refuse: () => unknown): string {
  try {
    refuse();
  } catch (error) {
    if (error instanceof ConfigError) return error.message;
    throw error;
  }
  throw new Error('not refused');
}

function json<T = Record<string, unknown>>(run: CliRun): T {
  return JSON.parse(run.stdout) as T;
}

/** The secret the command generated, from the one secret line its output holds; kept in `secrets` and `generated`. */
function generatedSecret(run: CliRun): string {
  const match = /signing secret: (whsec_\S+)/.exec(run.stdout);
  if (!match?.[1]) throw new Error(`no secret in: ${run.stdout}`);
  secrets.push(match[1]);
  generated.push(match[1]);
  return match[1];
}

beforeAll(() => {
  viaMain = mainHasEndpointCommands();
  for (const name of Object.keys(process.env)) if (name.startsWith('HANDOFF_') || name.startsWith('AWS_')) delete process.env[name];
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';
});

afterAll(() => {
  process.env = savedEnv;
});

describe('handoff endpoint (against a registry named with --endpoints-table)', () => {
  let acmeSecret: string;
  let kms: KmsStub;

  /** What KMS decrypts a stored secret of `endpoint` to (undefined: not a ciphertext of the key for it). */
  const plaintextOf = (stored: string | undefined, endpoint: string): string | undefined => {
    const match = /^encrypted:kms:(.+)$/.exec(stored ?? '');
    const opened = match ? kms.decrypt(Buffer.from(match[1]!, 'base64'), secretContext(endpoint)) : undefined;
    return opened?.keyId === KEY_ARN ? opened.plaintext : undefined;
  };

  beforeAll(async () => {
    dynalite = await startDynalite();
    const callerIdentity = await startCallerIdentity(CALLER_ARN, '123456789012');
    sts = callerIdentity.server;
    kms = await startKmsStub();
    // The standard AWS environment, pointed at the emulator: how an operator names a deployment;
    // the registry's key named as the stack output EndpointsKeyArn would.
    Object.assign(process.env, {
      AWS_ENDPOINT_URL_DYNAMODB: dynalite.endpoint,
      AWS_ENDPOINT_URL_STS: callerIdentity.url,
      AWS_ENDPOINT_URL_KMS: kms.url,
      AWS_REGION: 'us-east-1',
      AWS_ACCESS_KEY_ID: 'test',
      AWS_SECRET_ACCESS_KEY: 'test',
      HANDOFF_ENDPOINTS_KEY_ARN: KEY_ARN,
    });
    targetArgs = ['--endpoints-table', TABLE, '--table', LEDGER_TABLE];
    client = emulatorDynamoDbClient(dynalite.endpoint);
    await createEndpointsTable(client, TABLE);
    await createLedgerTable(client, LEDGER_TABLE);
    registry = new DynamoDbEndpointRegistry({ client, tableName: TABLE });
  });

  afterAll(async () => {
    for (const name of ['AWS_ENDPOINT_URL_DYNAMODB', 'AWS_ENDPOINT_URL_STS', 'AWS_ENDPOINT_URL_KMS', 'AWS_REGION', 'AWS_ACCESS_KEY_ID', 'AWS_SECRET_ACCESS_KEY', 'HANDOFF_ENDPOINTS_KEY_ARN']) {
      delete process.env[name];
    }
    targetArgs = [];
    client?.destroy();
    await dynalite?.close();
    await kms?.close();
    await new Promise((resolve) => sts?.close(resolve));
  });

  it('lists no endpoints in an empty registry', async () => {
    const human = await handoff(['list']);
    const machine = await handoff(['list', '--json']);

    expect(human).toEqual({ code: 0, stdout: 'no endpoints in the names given\n', stderr: '' });
    expect(json(machine)).toEqual([]);
  });

  it('adds an endpoint with a generated secret, printed once, and stores it', async () => {
    const run = await handoff([
      'add',
      '--name',
      'acme',
      '--url',
      'https://hooks.acme.example/handoff?token=t0k3n',
      '--event-types',
      'shipment.delivered,shipment.exception',
      '--match',
      'data.carrier=acme,zephyr',
      '--match',
      'data.region=eu',
    ]);

    expect(run.code).toBe(0);
    expect(run.stderr).toBe('');
    acmeSecret = generatedSecret(run);
    expect(run.stdout.split(acmeSecret)).toHaveLength(2);
    expect(run.stdout).toContain('shown once');
    expect(run.stdout).toContain('url          https://hooks.acme.example/handoff?token=***');
    expect(run.stdout).not.toContain('t0k3n');
    expect(() => createSigner(acmeSecret)).not.toThrow();
    const stored = await registry.get('acme');
    expect(stored?.fields).toEqual({
      name: 'acme',
      url: 'https://hooks.acme.example/handoff?token=t0k3n',
      eventTypes: ['shipment.delivered', 'shipment.exception'],
      match: { 'data.carrier': ['acme', 'zephyr'], 'data.region': ['eu'] },
      secret: expect.stringMatching(/^encrypted:kms:/),
    });
    expect(stored?.state).toBe('enabled');
    // Stored encrypted with the registry's key for acme alone (the endpoint is the encryption context).
    expect(plaintextOf(stored?.fields.secret, 'acme')).toBe(acmeSecret);
    expect(plaintextOf(stored?.fields.secret, 'zephyr')).toBeUndefined();
    expect(kms.calls).toEqual([`Encrypt ${KEY_ARN} ${JSON.stringify(secretContext('acme'))}`]);
  });

  it('adds one with --json: the generated secret once, as generatedSecret', async () => {
    const run = await handoff(['add', '--name', 'zephyr', '--url', 'https://zephyr.example/hook', '--event-types', '*', '--recovery', 'drop', '--json']);

    expect(run.code).toBe(0);
    const body = json(run);
    expect(body).toMatchObject({ name: 'zephyr', url: 'https://zephyr.example/hook', state: 'enabled', eventTypes: ['*'], secret: 'set', parked: 0 });
    expect(body.generatedSecret).toMatch(/^whsec_/);
    secrets.push(body.generatedSecret as string);
    generated.push(body.generatedSecret as string);
    expect(plaintextOf((await registry.get('zephyr'))?.fields.secret, 'zephyr')).toBe(body.generatedSecret);
  });

  it('adds from a file, with options over its fields, and keeps a secret given without printing it', async () => {
    const { mkdtempSync, writeFileSync, rmSync } = await import('node:fs');
    const { join } = await import('node:path');
    const { tmpdir } = await import('node:os');
    const directory = mkdtempSync(join(tmpdir(), 'handoff-endpoint-cli-'));
    const file = join(directory, 'endpoint.json');
    const given = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
    secrets.push(given);
    writeFileSync(
      file,
      JSON.stringify({ name: 'warehouse', url: 'https://wh.example/in', eventTypes: ['shipment.packed'], match: { 'data.pieces': [1, 2] }, secret: given, maxAttempts: 3 }),
    );
    try {
      const run = await handoff(['add', '--from-file', file, '--max-attempts', '4', '--retry-schedule', '5,50']);

      expect(run.code).toBe(0);
      expect(run.stdout).not.toContain('signing secret:');
      const stored = (await registry.get('warehouse'))?.fields;
      expect(stored).toEqual({
        name: 'warehouse',
        url: 'https://wh.example/in',
        eventTypes: ['shipment.packed'],
        match: { 'data.pieces': [1, 2] },
        secret: expect.stringMatching(/^encrypted:kms:/),
        maxAttempts: 4,
        retrySchedule: [5, 50],
      });
      expect(plaintextOf(stored?.secret, 'warehouse')).toBe(given);
    } finally {
      rmSync(directory, { recursive: true, force: true });
    }
  });

  it('lists every endpoint with name, redacted url, state, event types and parked, never a secret', async () => {
    const human = await handoff(['list']);
    const machine = await handoff(['list', '--json']);

    expect(human.code).toBe(0);
    expect(human.stdout.split('\n')[0]).toMatch(/^name\s+state\s+url\s+event types\s+match\s+parked$/);
    expect(human.stdout).toMatch(/acme\s+enabled\s+https:\/\/hooks\.acme\.example\/handoff\?token=\*\*\*\s+shipment\.delivered,shipment\.exception\s+data\.carrier=acme,zephyr data\.region=eu\s+0/);
    const list = json<Record<string, unknown>[]>(machine);
    expect(list.map((e) => e.name)).toEqual(['acme', 'warehouse', 'zephyr']);
    expect(list[0]).toMatchObject({
      name: 'acme',
      url: 'https://hooks.acme.example/handoff?token=***',
      state: 'enabled',
      eventTypes: ['shipment.delivered', 'shipment.exception'],
      parked: 0,
      secret: 'set',
      settings: {},
    });
    expect(list[1]).toMatchObject({ name: 'warehouse', settings: { maxAttempts: 4, retrySchedule: [5, 50] } });
    expect(machine.stdout).not.toContain('t0k3n');
  });

  it('shows one endpoint, its settings in effect and where their defaults come from, never its secret', async () => {
    const human = await handoff(['show', 'warehouse']);
    const machine = await handoff(['show', 'acme', '--json']);

    expect(human.code).toBe(0);
    expect(human.stdout).toMatch(/^secret\s+set$/m);
    expect(human.stdout).toMatch(/^retry schedule\s+5, 50 s$/m);
    expect(human.stdout).toMatch(/^max attempts\s+4$/m);
    expect(human.stdout).toMatch(/^attempt timeout\s+10000 ms \(default\)$/m);
    expect(human.stdout).toContain('defaults from the default settings (no deployment settings from the names given)');
    expect(json(machine)).toMatchObject({
      name: 'acme',
      secret: 'set',
      effective: { retrySchedule: [30, 120, 600, 1800, 7200], maxAttempts: 6, attemptTimeoutMs: 10_000, recovery: 'review' },
    });
  });

  it('refuses fields that do not pass their checks with exit 2, naming the field, and adds nothing', async () => {
    const type = await handoff(['add', '--name', 'bad', '--url', 'https://x.example', '--event-types', 'shipment.lost']);
    const timeout = await handoff(['add', '--name', 'bad', '--url', 'https://x.example', '--event-types', '*', '--attempt-timeout-ms', '20000', '--json']);
    const http = await handoff(['add', '--name', 'bad', '--url', 'http://x.example', '--event-types', '*']);
    const number = await handoff(['add', '--name', 'bad', '--url', 'https://x.example', '--event-types', '*', '--max-attempts', 'many']);

    expect(type.code).toBe(2);
    expect(type.stderr).toMatch(/^handoff: endpoint "bad": eventTypes holds "shipment.lost": each must be one of /);
    expect(timeout.code).toBe(2);
    expect(json(timeout)).toEqual({
      error: {
        code: 'usage',
        message:
          "endpoint \"bad\": attemptTimeoutMs must be at most the deployment's attemptTimeoutMs (10000), which the consumer's timeout is built on; got 20000 (checked against the default settings (no deployment settings from the names given))",
      },
    });
    expect(http.code).toBe(2);
    expect(http.stderr).toContain('endpoint "bad": url is refused');
    expect(number.stderr).toContain('endpoint "bad": maxAttempts must be a whole number from 1 to 100, got "many"');
    expect(await registry.get('bad')).toBeUndefined();
  });

  it.each(['__proto__', 'constructor', 'prototype'])('refuses --match %s=acme with exit 2 in the words the endpoints file is refused in, and adds nothing', async (key) => {
    // Prepare: the sandbox's endpoints file with the same endpoint, refused by the one check of endpoints.
    const file = `{"endpoints": [{"name": "bad", "url": "https://x.example", "eventTypes": ["*"], "match": {"${key}": ["acme"]}}]}`;
    const fileRefusal = refusalOf(() => parseEndpointsFile('endpoints.json', file, readSettings({})));

    // Act
    const run = await handoff(['add', '--name', 'bad', '--url', 'https://x.example', '--event-types', '*', '--match', `${key}=acme`]);

    // Assess
    expect(fileRefusal).toBe(
      `HANDOFF_ENDPOINTS_FILE endpoints.json endpoints[0]: endpoint "bad": match.${key} is not a field to match: use shipmentId, status or data.<field>[.<field>…]`,
    );
    expect(run).toEqual({
      code: 2,
      stdout: '',
      stderr: `handoff: ${fileRefusal.slice('HANDOFF_ENDPOINTS_FILE endpoints.json endpoints[0]: '.length)} (checked against the default settings (no deployment settings from the names given))\n`,
    });
    expect(await registry.get('bad')).toBeUndefined();
  });

  it('refuses a name that is taken with exit 1', async () => {
    const run = await handoff(['add', '--name', 'acme', '--url', 'https://x.example', '--event-types', '*', '--json']);

    expect(run.code).toBe(1);
    expect(run.stderr).toBe('handoff: endpoint "acme" already exists: change it with endpoint update, or remove it first\n');
    expect(json(run)).toMatchObject({ error: { code: 'endpoint-conflict' } });
  });

  it('refuses an add without its required fields with exit 2', async () => {
    const run = await handoff(['add', '--name', 'half', '--url', 'https://x.example']);

    expect(run.code).toBe(2);
    expect(run.stderr).toContain("endpoint add needs its event types: --event-types a,b or '*'");
  });

  it('updates only the fields given, keeps the secret, and says what changed', async () => {
    const run = await handoff(['update', 'acme', '--event-types', '*', '--max-attempts', '3', '--json']);

    expect(run.code).toBe(0);
    expect(json(run)).toMatchObject({ name: 'acme', eventTypes: ['*'], changed: ['eventTypes', 'maxAttempts'] });
    const stored = await registry.get('acme');
    expect(stored?.fields).toMatchObject({ eventTypes: ['*'], maxAttempts: 3, match: { 'data.carrier': ['acme', 'zephyr'] } });
    expect(plaintextOf(stored?.fields.secret, 'acme')).toBe(acmeSecret);
  });

  it('clears an optional field with --clear, so the default applies again', async () => {
    const run = await handoff(['update', 'acme', '--clear', 'match', '--clear', 'maxAttempts']);

    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/^updated endpoint acme: match, maxAttempts/);
    const stored = await registry.get('acme');
    expect(stored?.fields).not.toHaveProperty('match');
    expect(stored?.fields).not.toHaveProperty('maxAttempts');
  });

  it('refuses an update of a missing endpoint (exit 1), one with nothing to change or a rename (exit 2)', async () => {
    const missing = await handoff(['update', 'ghost', '--event-types', '*']);
    const nothing = await handoff(['update', 'acme']);
    const rename = await handoff(['update', 'acme', '--name', 'acme-2']);

    expect(missing.code).toBe(1);
    expect(missing.stderr).toBe('handoff: no endpoint named "ghost" in the names given\n');
    expect(nothing.code).toBe(2);
    expect(nothing.stderr).toContain('nothing to change');
    expect(rename.code).toBe(2);
    expect(rename.stderr).toContain('an endpoint cannot be renamed');
  });

  it('disables with a reason and an operator (and the caller AWS says), shown by list and show; enables again', async () => {
    const disabled = await handoff(['disable', 'zephyr', '--reason', 'receiver down (INC-77)', '--operator', 'alice', '--json']);
    const listed = json<Record<string, unknown>[]>(await handoff(['list', '--json']));
    const shown = await handoff(['show', 'zephyr']);
    const enabled = await handoff(['enable', 'zephyr', '--operator', 'bob']);

    expect(disabled.code).toBe(0);
    expect(json(disabled)).toMatchObject({
      name: 'zephyr',
      state: 'disabled',
      stateChange: { by: `alice (${CALLER_ARN})`, reason: 'receiver down (INC-77)' },
    });
    expect(listed.find((e) => e.name === 'zephyr')).toMatchObject({ state: 'disabled' });
    expect(shown.stdout).toMatch(/^state\s+disabled by alice \(arn:aws:iam::123456789012:user\/ops\) at \S+Z \(.*\): receiver down \(INC-77\)$/m);
    expect(json(disabled)).toMatchObject({ parked: 0 });
    expect(enabled).toMatchObject({
      code: 0,
      stdout: [
        `endpoint zephyr enabled by bob (${CALLER_ARN}): enabled by an operator`,
        'no parked deliveries now; any a consumer still parks before it sees zephyr enabled are released',
        'follow it: handoff endpoint show zephyr',
        '',
      ].join('\n'),
    });
    expect((await registry.get('zephyr'))?.state).toBe('enabled');
  });

  it('enable --rate begins a release at that rate, shown by show; a bad --rate is refused by name (exit 2), writing nothing', async () => {
    const before = await registry.get('zephyr');
    const zero = await handoff(['enable', 'zephyr', '--rate', '0']);
    const fraction = await handoff(['enable', 'zephyr', '--rate', '2.5']);
    const unchanged = await registry.get('zephyr');
    const enabled = await handoff(['enable', 'zephyr', '--rate', '5', '--operator', 'bob', '--json']);
    const shown = await handoff(['show', 'zephyr', '--json']);
    const shownText = await handoff(['show', 'zephyr']);

    expect(zero.code).toBe(2);
    expect(zero.stderr).toBe('handoff: --rate "0": give the most parked deliveries released per second, a whole number from 1 to 1000\n');
    expect(fraction.code).toBe(2);
    expect(fraction.stderr).toContain('--rate "2.5"');
    expect(unchanged).toEqual(before);
    expect(enabled.code).toBe(0);
    expect(json(enabled)).toMatchObject({ state: 'enabled', parked: 0, release: { rate: 5, rateNow: 1, scheduledUntil: null } });
    expect(json(shown)).toMatchObject({ parked: 0, release: { rate: 5, since: (json(enabled).release as { since: string }).since } });
    expect(shownText.stdout).toMatch(/^release\s+since \S+Z \(.*\), oldest first at 1\/s now, up to 5\/s \(no run yet\)$/m);
  });

  it('says parked is n/a (JSON null) when the target names no ledger table', async () => {
    const human = await handoff(['list'], { target: ['--endpoints-table', TABLE] });
    const machine = await handoff(['list', '--json'], { target: ['--endpoints-table', TABLE] });

    expect(human.code).toBe(0);
    expect(human.stdout).toContain('parked: n/a, no ledger table in the names given (--table NAME)');
    expect(json<Record<string, unknown>[]>(machine).every((e) => e.parked === null)).toBe(true);
  });

  it('refuses a disable without a reason (exit 2), and one of a missing endpoint (exit 1)', async () => {
    const noReason = await handoff(['disable', 'zephyr']);
    const missing = await handoff(['disable', 'ghost', '--reason', 'x']);

    expect(noReason.code).toBe(2);
    expect(noReason.stderr).toContain("required option '--reason <text>' not specified");
    expect(missing.code).toBe(1);
    expect(missing.stderr).toBe('handoff: no endpoint named "ghost" in the names given\n');
  });

  it('rotates the secret: a new one, printed once, in place of the old, which keeps signing for 24 h by default', async () => {
    const before = { at: Date.now(), fields: (await registry.get('acme'))!.fields };
    const run = await handoff(['rotate-secret', 'acme']);

    expect(run.code).toBe(0);
    const fresh = generatedSecret(run);
    expect(fresh).not.toBe(acmeSecret);
    expect(run.stdout).not.toContain(acmeSecret);
    expect(run.stdout).toMatch(/^rotated the signing secret of endpoint acme: until \S+Z \(in 1 d\) each request is signed with both the new and the old secret, then with the new one only$/m);
    const stored = await registry.get('acme');
    // The new secret encrypted; the old one kept as it was stored (encrypted already: not asked again).
    expect(plaintextOf(stored?.fields.secret, 'acme')).toBe(fresh);
    expect(plaintextOf(stored?.fields.previousSecret, 'acme')).toBe(acmeSecret);
    expect(stored?.fields.previousSecret).toBe(before.fields.secret);
    expect(stored?.fields.previousSecretUntil).toBeGreaterThanOrEqual(before.at + 24 * 3_600_000);
    expect(stored?.fields.previousSecretUntil).toBeLessThanOrEqual(Date.now() + 24 * 3_600_000);
    acmeSecret = fresh;
  });

  it('shows until when the previous secret is accepted, never a secret; ends the overlap with update --clear previousSecret', async () => {
    const shown = await handoff(['show', 'acme']);
    const listed = await handoff(['list', '--json']);
    const cleared = await handoff(['update', 'acme', '--clear', 'previousSecret', '--json']);
    const after = await handoff(['show', 'acme', '--json']);

    expect(shown.stdout).toMatch(/^secret\s+set \(previous secret accepted until \S+Z \(in [^)]+\)\)$/m);
    expect(json<Record<string, unknown>[]>(listed).find((e) => e.name === 'acme')?.previousSecretUntil).toMatch(/^\d{4}-\d\d-\d\dT.*Z$/);
    expect(json(cleared)).toMatchObject({ changed: ['previousSecret', 'previousSecretUntil'], previousSecretUntil: null });
    expect(json(after)).toMatchObject({ secret: 'set', previousSecretUntil: null });
    expect((await registry.get('acme'))?.fields).not.toHaveProperty('previousSecret');
  });

  it('refuses an overlap over 7d or without a unit with exit 2, changing nothing', async () => {
    const before = await registry.get('acme');
    const long = await handoff(['rotate-secret', 'acme', '--overlap', '8d']);
    const bare = await handoff(['rotate-secret', 'acme', '--overlap', '12']);

    expect(long.code).toBe(2);
    expect(long.stderr).toBe('handoff: --overlap "8d": at most 7d, got 8 d\n');
    expect(bare.code).toBe(2);
    expect(bare.stderr).toContain('give a unit, s, m, h or d');
    expect(await registry.get('acme')).toEqual(before);
  });

  it("says in rotate-secret's help how the overlap works, in list's what parked counts, in enable's how the release goes", async () => {
    const rotate = await handoff(['rotate-secret', '--help']);
    const list = await handoff(['list', '--help']);
    const enable = await handoff(['enable', '--help']);
    const disable = await handoff(['disable', '--help']);

    expect(rotate.code).toBe(0);
    expect(rotate.stdout).toContain('--overlap <duration>');
    expect(rotate.stdout).toContain('During the overlap every request carries two signatures in webhook-signature');
    expect(list.stdout).toContain('parked: deliveries held for a disabled endpoint');
    expect(list.stdout).toContain('parked (a count; null when the target names no ledger table)');
    expect(enable.stdout).toContain('--rate <n>');
    expect(enable.stdout).toContain('released oldest admission first by the recovery runs');
    expect(disable.stdout).toContain('Its deliveries are parked from then on');
    for (const help of [list, enable, disable]) {
      expect(help.stdout).not.toMatch(/until parking lands|not in this release|always 0/);
    }
  });

  it('removes an endpoint; a second remove and a show of it fail with exit 1', async () => {
    const removed = await handoff(['remove', 'warehouse', '--json']);
    const again = await handoff(['remove', 'warehouse']);
    const shown = await handoff(['show', 'warehouse']);

    expect(removed.code).toBe(0);
    expect(json(removed)).toEqual({ name: 'warehouse', removed: true });
    expect(again.code).toBe(1);
    expect(shown.code).toBe(1);
    expect(shown.stderr).toBe('handoff: no endpoint named "warehouse" in the names given\n');
    expect(await registry.get('warehouse')).toBeUndefined();
  });

  it('lists the endpoints it can use and names an item it cannot (exit 1), which remove takes away', async () => {
    const { PutItemCommand } = await import('@aws-sdk/client-dynamodb');
    const handmadeSecret = 'whsec_/uCW0n0KPpd7EnSxkS82xgxojTF+Q5yIYx5I0pyVR/s=';
    secrets.push(handmadeSecret);
    await client.send(
      new PutItemCommand({
        TableName: TABLE,
        Item: {
          name: { S: 'handmade' },
          fields: { M: { name: { S: 'handmade' }, url: { S: 'https://x.example' }, eventTypes: { L: [{ S: 'shipment.lost' }] }, secret: { S: handmadeSecret } } },
          state: { S: 'enabled' },
          createdAt: { N: '1' },
          updatedAt: { N: '1' },
        },
      }),
    );

    const listed = await handoff(['list', '--json']);
    const removed = await handoff(['remove', 'handmade']);
    const after = await handoff(['list']);

    expect(listed.code).toBe(1);
    expect(json<Record<string, unknown>[]>(listed).map((e) => e.name)).toEqual(['acme', 'zephyr']);
    expect(listed.stderr).toMatch(/^handoff: the registry holds 1 item\(s\) that cannot be used \(endpoint remove NAME, then add it again\): .*the item of endpoint "handmade" cannot be used: .*eventTypes holds "shipment\.lost"/);
    expect(removed.code).toBe(0);
    expect(after.code).toBe(0);
  });

  it('writes no secret without the registry key (exit 1), saying where the key comes from; other changes still go through', async () => {
    delete process.env.HANDOFF_ENDPOINTS_KEY_ARN;
    try {
      const added = await handoff(['add', '--name', 'keyless', '--url', 'https://keyless.example/hook', '--event-types', '*', '--json']);
      const rotated = await handoff(['rotate-secret', 'acme']);
      const before = await registry.get('acme');
      const updated = await handoff(['update', 'acme', '--max-attempts', '5']);
      const unsigned = await handoff(['add', '--name', 'keyless', '--url', 'https://keyless.example/hook', '--event-types', '*', '--unsigned']);

      expect(added.code).toBe(1);
      expect(json(added)).toEqual({
        error: {
          code: 'no-secrets-key',
          message:
            "cannot encrypt a signing secret for the names given, which names no key for them: set HANDOFF_ENDPOINTS_KEY_ARN to the ARN of the registry's KMS key (the stack output EndpointsKeyArn); nothing written",
        },
      });
      expect(added.stdout).not.toContain('whsec_');
      expect(rotated.code).toBe(1);
      expect(rotated.stderr).toMatch(/^handoff: cannot encrypt a signing secret for the names given/);
      expect(rotated.stdout).toBe('');
      // The encrypted secret goes through an update untouched: no key is needed for it.
      expect(updated.code).toBe(0);
      expect((await registry.get('acme'))?.fields).toMatchObject({ maxAttempts: 5, secret: before?.fields.secret });
      expect(unsigned.code).toBe(0);
      expect((await registry.get('keyless'))?.fields).not.toHaveProperty('secret');
    } finally {
      process.env.HANDOFF_ENDPOINTS_KEY_ARN = KEY_ARN;
      await handoff(['remove', 'keyless']);
    }
  });

  it('writes nothing when KMS refuses to encrypt (exit 1), naming the key and the permission', async () => {
    kms.deny = true;
    try {
      const before = await registry.get('acme');
      const added = await handoff(['add', '--name', 'denied', '--url', 'https://denied.example/hook', '--event-types', '*']);
      const rotated = await handoff(['rotate-secret', 'acme']);

      expect(added.code).toBe(1);
      expect(added.stderr).toBe(
        `handoff: KMS could not encrypt the secret of endpoint denied with ${KEY_ARN}: AccessDeniedException; nothing written (the caller needs kms:Encrypt on the registry's key: grantEndpointAdmin grants it)\n`,
      );
      expect(added.stdout).toBe('');
      expect(rotated.code).toBe(1);
      expect(await registry.get('denied')).toBeUndefined();
      expect(await registry.get('acme')).toEqual(before);
    } finally {
      kms.deny = false;
    }
  });

  it('says which option names the registry when the target has none (exit 2)', async () => {
    const run = await handoff(['list'], { target: ['--table', 'ledger'] });

    expect(run.code).toBe(2);
    expect(run.stderr).toBe('handoff: the names given names no endpoint registry table: pass --endpoints-table\n');
  });
});

/** Seeded from the sandbox's endpoints file: takes delivered events, whatever the carrier. */
const OPS_SECRET = 'whsec_T7ojJeNsUogA3D9W+2rOXCHVIoj2XRbaCCjTarhNdhk=';
/** How long the consumer may take to deliver or settle; below the test's own timeout. */
const SETTLE_MS = 60_000;

describe('handoff endpoint (against the running sandbox)', { timeout: 120_000 }, () => {
  let sandbox: SandboxProcess;
  let clients: SandboxClients;
  let ops: TestReceiver;
  let acme: TestReceiver;
  let acmeSecret: string;
  /** Secrets acme had before the current one. */
  const oldSecrets: string[] = [];

  beforeAll(async () => {
    ops = await startTestReceiver();
    acme = await startTestReceiver();
    sandbox = await startSandboxProcess({
      endpoints: [{ name: 'ops', url: ops.url, eventTypes: ['shipment.delivered'], secret: OPS_SECRET }],
      env: { HANDOFF_RETRY_SCHEDULE: '1', HANDOFF_MAX_ATTEMPTS: '3', HANDOFF_ATTEMPT_TIMEOUT_MS: '2000', HANDOFF_MAX_CONCURRENCY: '2' },
      // Each batch reads the registry, so an event sent after a change meets it (no waiting out the cache).
      endpointsCacheMs: 0,
    });
    clients = new SandboxClients(sandbox.ready);
    secrets.push(OPS_SECRET);
    // No target options: the command finds the sandbox through its state file.
    targetArgs = [];
    process.env.HANDOFF_SANDBOX_FILE = sandbox.stateFile;
  }, 120_000);

  afterAll(async () => {
    delete process.env.HANDOFF_SANDBOX_FILE;
    clients?.close();
    await sandbox?.stop('SIGKILL');
    await ops?.close();
    await acme?.close();
  });

  function shipment(id: string, status: string, carrier: string): string {
    return JSON.stringify({ id, shipmentId: `shp_${id}`, status, occurredAt: '2026-12-03T04:00:00Z', data: { carrier } });
  }

  /** The sandbox's key for endpoint secrets, from its READY. */
  const sandboxCipher = () => new LocalSecretCipher(sandbox.ready.secretsKey);

  /** An endpoint's fields as its registry item holds them, read past the command and the adapter (GetItem). */
  async function storedFields(name: string): Promise<{ secret?: string; previousSecret?: string } | undefined> {
    const { Item } = await clients.documents.send(new GetCommand({ TableName: sandbox.ready.endpointsTable, Key: { name }, ConsistentRead: true }));
    return Item?.fields as { secret?: string; previousSecret?: string } | undefined;
  }

  /** The one request a receiver got for an event, once it has come. */
  function requestFor(receiver: TestReceiver, eventId: string): Promise<ReceivedRequest> {
    return eventually(`a request for ${eventId}`, async () => receiver.requestsFor(eventId)[0], {
      timeoutMs: SETTLE_MS,
      describe: () => `requests so far: ${receiver.requests.map((r) => r.eventId).join(', ') || 'none'}`,
    });
  }

  /** Sends an in-transit event of carrier acme's and answers the request acme received for it. */
  async function acmeRequestFor(eventId: string): Promise<ReceivedRequest> {
    await clients.send(shipment(eventId, 'in_transit', 'acme'));
    return requestFor(acme, eventId);
  }

  async function queueDrains(): Promise<void> {
    await eventually('the delivery queue to drain', async () => (await clients.queueDepth()) === 0, {
      timeoutMs: SETTLE_MS,
      describe: async () => `${await clients.queueDepth()} message(s)`,
    });
  }

  it('lists the endpoints the sandbox seeded, and shows one with the sandbox\'s settings', async () => {
    const listed = await handoff(['list', '--json']);
    const shown = await handoff(['show', 'ops', '--json']);

    expect(listed.code).toBe(0);
    expect(json<unknown[]>(listed)).toEqual([
      expect.objectContaining({ name: 'ops', url: ops.url, state: 'enabled', eventTypes: ['shipment.delivered'], parked: 0, secret: 'set' }),
    ]);
    expect(json(shown)).toMatchObject({
      name: 'ops',
      effective: { retrySchedule: [1], maxAttempts: 3, attemptTimeoutMs: 2000 },
      settingsFrom: 'the settings of the sandbox',
    });
  });

  it("checks an endpoint against the sandbox's settings: an attempt timeout above its own is refused", async () => {
    const run = await handoff(['add', '--name', 'slow', '--url', acme.url, '--event-types', '*', '--attempt-timeout-ms', '5000']);

    expect(run.code).toBe(2);
    expect(run.stderr).toContain("attemptTimeoutMs must be at most the deployment's attemptTimeoutMs (2000)");
    expect(run.stderr).toContain('(checked against the settings of the sandbox)');
  });

  it('adds an endpoint whose events then arrive signed with the secret add printed, and only its events', async () => {
    const added = await handoff(['add', '--name', 'acme', '--url', acme.url, '--event-types', '*', '--match', 'data.carrier=acme']);
    expect(added.code).toBe(0);
    acmeSecret = generatedSecret(added);

    await clients.sendAll([shipment('evt_cli_ep_zephyr', 'in_transit', 'zephyr'), shipment('evt_cli_ep_acme', 'in_transit', 'acme')]);
    const request = await requestFor(acme, 'evt_cli_ep_acme');
    await queueDrains();

    expect(acme.verify(request, acmeSecret)).toBe(true);
    expect(acme.requests.map((r) => r.eventId)).toEqual(['evt_cli_ep_acme']);
    expect(ops.requests).toEqual([]);
    // Stored encrypted under the sandbox's key, bound to acme; the endpoints file's secret stays as the file has it.
    const stored = (await storedFields('acme'))?.secret;
    expect(stored).toMatch(/^encrypted:local:/);
    expect(stored).not.toContain(acmeSecret.slice(6));
    expect(await sandboxCipher().decrypt(stored!, 'acme')).toBe(acmeSecret);
    expect((await storedFields('ops'))?.secret).toBe(OPS_SECRET);
  });

  it('disables it: the next event goes to the other endpoint, its delivery to it parked and counted', async () => {
    const disabled = await handoff(['disable', 'acme', '--reason', 'receiver migration', '--operator', 'alice']);
    expect(disabled.code).toBe(0);
    expect(disabled.stdout).toMatch(/^endpoint acme disabled by alice: receiver migration\nits deliveries are parked from now on/);

    await clients.send(shipment('evt_cli_ep_disabled', 'delivered', 'acme'));
    await requestFor(ops, 'evt_cli_ep_disabled');
    await queueDrains();

    expect(acme.requestsFor('evt_cli_ep_disabled')).toEqual([]);
    const parked = await clients.ledger.get({ eventId: 'evt_cli_ep_disabled', endpoint: 'acme' });
    expect(parked).toMatchObject({ state: 'pending', attempts: 0 });
    expect(parked?.parkedAt).toEqual(expect.any(Number));
    expect(json<Record<string, unknown>[]>(await handoff(['list', '--json'])).find((e) => e.name === 'acme')).toMatchObject({
      state: 'disabled',
      stateChange: { by: 'alice', reason: 'receiver migration' },
      parked: 1,
    });
    expect((await handoff(['show', 'acme'])).stdout).toMatch(/^parked\s+1 \(held until endpoint enable acme releases them\)$/m);
  });

  it('enables it again: its parked delivery is released to it once, and the next event reaches it', async () => {
    const enabled = await handoff(['enable', 'acme', '--operator', 'alice']);
    expect(enabled.code).toBe(0);
    expect(enabled.stdout.split('\n')[1]).toMatch(/^1 parked delivery: released oldest admission first, at 2\.5\/s at first, doubling every minute up to 20\/s, by the recovery runs/);

    await clients.send(shipment('evt_cli_ep_enabled', 'delivered', 'acme'));

    expect(acme.verify(await requestFor(acme, 'evt_cli_ep_enabled'), acmeSecret)).toBe(true);
    await requestFor(ops, 'evt_cli_ep_enabled');
    expect(acme.verify(await requestFor(acme, 'evt_cli_ep_disabled'), acmeSecret)).toBe(true);
    await queueDrains();
    expect(acme.requestsFor('evt_cli_ep_disabled')).toHaveLength(1);
    expect(await clients.ledger.get({ eventId: 'evt_cli_ep_disabled', endpoint: 'acme' })).toMatchObject({ state: 'delivered' });
  });

  it('rotates its secret with --overlap 1h: the next event is signed with both, each verifying on its own', async () => {
    const rotated = await handoff(['rotate-secret', 'acme', '--overlap', '1h']);
    expect(rotated.code).toBe(0);
    const fresh = generatedSecret(rotated);
    const request = await acmeRequestFor('evt_cli_ep_overlap');

    expect(String(request.headers['webhook-signature']).split(' ')).toHaveLength(2);
    expect(acme.verify(request, fresh)).toBe(true);
    expect(acme.verify(request, acmeSecret)).toBe(true);
    const stored = await storedFields('acme');
    expect(stored?.secret).toMatch(/^encrypted:local:/);
    expect(stored?.previousSecret).toMatch(/^encrypted:local:/);
    expect(await sandboxCipher().decrypt(stored!.secret!, 'acme')).toBe(fresh);
    expect(await sandboxCipher().decrypt(stored!.previousSecret!, 'acme')).toBe(acmeSecret);
    oldSecrets.push(acmeSecret);
    acmeSecret = fresh;
  });

  it('rotates again with --overlap 0: the next event is signed with the newest secret only', async () => {
    const rotated = await handoff(['rotate-secret', 'acme', '--overlap', '0']);
    expect(rotated.code).toBe(0);
    expect(rotated.stdout).toMatch(/^rotated the signing secret of endpoint acme: the old one no longer signs$/m);
    const newest = generatedSecret(rotated);
    const request = await acmeRequestFor('evt_cli_ep_rotated');

    expect(String(request.headers['webhook-signature']).split(' ')).toHaveLength(1);
    expect(acme.verify(request, newest)).toBe(true);
    expect(acme.verify(request, acmeSecret)).toBe(false);
    for (const old of oldSecrets) expect(acme.verify(request, old)).toBe(false);
  });

  it('removes it: the next event for it reaches nobody, and the list no longer has it', async () => {
    const removed = await handoff(['remove', 'acme']);
    expect(removed).toMatchObject({ code: 0, stdout: 'removed endpoint acme\n' });
    const before = acme.requests.length;

    await clients.send(shipment('evt_cli_ep_removed', 'delivered', 'acme'));
    await requestFor(ops, 'evt_cli_ep_removed');
    await queueDrains();

    expect(acme.requests).toHaveLength(before);
    expect(json<Record<string, unknown>[]>(await handoff(['list', '--json'])).map((e) => e.name)).toEqual(['ops']);
  });

  it("pages an owner's endpoints with --owner, --limit and --cursor, and refuses a cursor it did not issue", async () => {
    for (const name of ['m7-a', 'm7-b', 'm7-c']) {
      expect((await handoff(['add', '--name', name, '--url', acme.url, '--event-types', '*', '--owner', 'merchant-7', '--unsigned'])).code).toBe(0);
    }
    expect((await handoff(['add', '--name', 'm8-a', '--url', acme.url, '--event-types', '*', '--owner', 'merchant-8', '--unsigned'])).code).toBe(0);

    const first = json<{ items: { name: string; owner: string }[]; next: string | null }>(await handoff(['list', '--owner', 'merchant-7', '--limit', '2', '--json']));
    const second = json<{ items: { name: string }[]; next: string | null }>(await handoff(['list', '--owner', 'merchant-7', '--limit', '2', '--cursor', first.next!, '--json']));
    const human = await handoff(['list', '--owner', 'merchant-7', '--limit', '2']);
    const refused = await handoff(['list', '--owner', 'merchant-8', '--limit', '2', '--cursor', first.next!]);

    expect(first.items.map((e) => [e.name, e.owner])).toEqual([
      ['m7-a', 'merchant-7'],
      ['m7-b', 'merchant-7'],
    ]);
    expect(second).toEqual({ items: [expect.objectContaining({ name: 'm7-c' })], next: null });
    expect(human.stdout).toContain(`more: handoff endpoint list --limit 2 --cursor ${first.next} --owner merchant-7`);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('--cursor: cursor is not one this listing issued with these --owner and --state filters');
  });
});

describe('secrets in the output', () => {
  it('printed each secret only where it was made', () => {
    const leaks = outputs.flatMap(({ args, text }) =>
      secrets.filter((secret) => text.includes(secret) && !(args[0] === 'add' || args[0] === 'rotate-secret')).map(() => args.join(' ')),
    );

    expect(generated.length).toBeGreaterThanOrEqual(6);
    expect(leaks).toEqual([]);
    for (const secret of generated) expect(outputs.filter(({ text }) => text.includes(secret))).toHaveLength(1);
  });
});
