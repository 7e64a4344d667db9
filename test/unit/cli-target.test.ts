/**
 * What the target tells the commands beyond its resource names: who the caller is (for the replay
 * audit) and what payload limit the deployment enforces. The STS lookup itself is exercised only
 * against AWS; here the wiring runs with an injected lookup.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { payloadLimitFor } from '../../cli/commands/send-events';
import { CommandContext } from '../../cli/context';
import { CommandFailedError, describeFailure } from '../../cli/errors';
import {
  callerIdentity,
  namesFromOutputs,
  requireName,
  requireOrderedQueue,
  resolveTarget,
  sandboxTarget,
  type Target,
} from '../../cli/target';
import { writeSandboxState, type SandboxState } from '../../sandbox/state-file';
import { deploymentFromJson, deploymentToJson } from '../../lib/endpoints/endpoint';
import { retryPolicy } from '../../lib/policy';
import { ConfigError } from '../../lib/errors';
import { STACK_OUTPUTS } from '../../lib/stack-outputs';
import { LocalSecretCipher } from '../../lib/endpoints/secret-cipher';

const ARN = 'arn:aws:sts::123456789012:assumed-role/ops/alice';

const aws: Target = { description: 'stack Handoff', connection: { kind: 'aws' }, queueUrl: 'https://sqs.example/q' };
const sandbox: Target = {
  description: 'the sandbox',
  payloadLimitBytes: 300,
  connection: { kind: 'sandbox', sqsEndpoint: 'http://127.0.0.1:1', dynamodbEndpoint: 'http://127.0.0.1:2', stateFile: '/s.json' },
};

describe('Function: callerIdentity', () => {
  it("gives the caller's ARN against AWS", async () => {
    const asked: string[] = [];

    const caller = await callerIdentity(aws, async () => (asked.push('sts'), ARN));

    expect(caller).toBe(ARN);
    expect(asked).toEqual(['sts']);
  });

  it('gives no caller against the sandbox, without asking', async () => {
    const asked: string[] = [];

    const caller = await callerIdentity(sandbox, async () => (asked.push('sts'), ARN));

    expect(caller).toBeUndefined();
    expect(asked).toEqual([]);
  });

  it('refuses with one line when AWS cannot say who is calling', async () => {
    // Act
    const lookup = callerIdentity(aws, async () => {
      throw new Error('outer', { cause: new Error('The security token included in the request is invalid.') });
    });

    // Assess
    await expect(lookup).rejects.toBeInstanceOf(CommandFailedError);
    const failure = describeFailure(await lookup.catch((error: unknown) => error));
    expect(failure).toEqual({
      exitCode: 1,
      code: 'caller-unknown',
      message:
        "cannot tell who is calling (STS GetCallerIdentity: The security token included in the request is invalid.); the audit entry needs the caller's identity",
    });
  });
});

describe('Function: namesFromOutputs', () => {
  const outputs = (extra: Record<string, string> = {}) =>
    new Map<string, string>([
      [STACK_OUTPUTS.queueUrl, 'https://sqs.eu-west-1.amazonaws.com/1/q'],
      [STACK_OUTPUTS.deadLetterQueueUrl, 'https://sqs.eu-west-1.amazonaws.com/1/dlq'],
      [STACK_OUTPUTS.ledgerTableName, 'ledger'],
      ...Object.entries(extra),
    ]);

  it("reads the names and the stack's payload limit", () => {
    expect(namesFromOutputs('Handoff', outputs({ PayloadLimitBytes: '131072' }))).toEqual({
      queueUrl: 'https://sqs.eu-west-1.amazonaws.com/1/q',
      deadLetterQueueUrl: 'https://sqs.eu-west-1.amazonaws.com/1/dlq',
      ledgerTable: 'ledger',
      payloadLimitBytes: 131_072,
    });
  });

  it('reads no limit from a stack that does not publish one', () => {
    expect(namesFromOutputs('Handoff', outputs())).not.toHaveProperty('payloadLimitBytes');
  });

  it('refuses a limit that is not a whole number, naming the output', () => {
    expect(() => namesFromOutputs('Handoff', outputs({ PayloadLimitBytes: '64k' }))).toThrow(
      `stack Handoff's output PayloadLimitBytes is "64k", not a whole number of bytes`,
    );
  });
});

describe('Function: namesFromOutputs, the endpoint registry', () => {
  const base = new Map<string, string>([[STACK_OUTPUTS.queueUrl, 'https://sqs.eu-west-1.amazonaws.com/1/q']]);
  const defaults = deploymentToJson({
    retryPolicy: retryPolicy(4, [10, 60]),
    attemptTimeoutMs: 5000,
    retentionDays: 30,
    allowPrivateCidrs: [],
    allowHttp: false,
  });

  it("reads the registry's table and the deployment's endpoint defaults", () => {
    const names = namesFromOutputs(
      'Handoff',
      new Map([...base, [STACK_OUTPUTS.endpointsTableName, 'handoff-endpoints'], [STACK_OUTPUTS.endpointDefaults, JSON.stringify(defaults)]]),
    );

    expect(names.endpointsTable).toBe('handoff-endpoints');
    expect(names.deployment).toEqual(deploymentFromJson(defaults, 'test'));
  });

  it('reads neither from a stack deployed before the registry', () => {
    const names = namesFromOutputs('Handoff', base);

    expect(names).not.toHaveProperty('endpointsTable');
    expect(names).not.toHaveProperty('deployment');
  });

  it('refuses endpoint defaults that are not the JSON a stack publishes, naming the output', () => {
    for (const value of ['{', JSON.stringify({ ...defaults, maxAttempts: 'six' })]) {
      const act = () => namesFromOutputs('Handoff', new Map([...base, [STACK_OUTPUTS.endpointDefaults, value]]));

      expect(act).toThrow(CommandFailedError);
      expect(act).toThrow(/^stack Handoff's output EndpointDefaults is .*, not the deployment's endpoint defaults as JSON$/);
    }
  });
});

describe('Function: resolveTarget, --endpoints-table', () => {
  it('makes the names given the target, with only the registry named', async () => {
    const target = await resolveTarget({ endpointsTable: ' handoff-endpoints ' }, {});

    expect(target).toMatchObject({ description: 'the names given', connection: { kind: 'aws' }, endpointsTable: 'handoff-endpoints' });
    expect(requireName(target, 'endpointsTable')).toBe('handoff-endpoints');
  });

  it('says which option names the registry when a target has none', async () => {
    const target = await resolveTarget({ table: 'ledger' }, {});

    expect(() => requireName(target, 'endpointsTable')).toThrow('the names given names no endpoint registry table: pass --endpoints-table');
  });
});

describe('Function: payloadLimitFor', () => {
  it("takes the target's limit over the operator's environment", () => {
    expect(payloadLimitFor(sandbox, { HANDOFF_PAYLOAD_LIMIT_BYTES: '100000' })).toEqual({
      bytes: 300,
      source: 'the sandbox',
      fromTarget: true,
    });
  });

  it('falls back to HANDOFF_PAYLOAD_LIMIT_BYTES, then the default, and says which', () => {
    expect(payloadLimitFor(aws, { HANDOFF_PAYLOAD_LIMIT_BYTES: '1024' })).toEqual({
      bytes: 1024,
      source: 'HANDOFF_PAYLOAD_LIMIT_BYTES',
      fromTarget: false,
    });
    expect(payloadLimitFor(aws, {})).toEqual({ bytes: 65_536, source: 'the default', fromTarget: false });
  });

  it('reads only the payload limit from the environment, and refuses a bad one by name', () => {
    expect(payloadLimitFor(aws, { HANDOFF_WEBHOOK_URL: 'not a url' }).bytes).toBe(65_536);
    expect(() => payloadLimitFor(aws, { HANDOFF_PAYLOAD_LIMIT_BYTES: 'lots' })).toThrow(ConfigError);
  });
});

/** A stack's outputs and a sandbox's state file with the least they hold, for the optional queues below. */
const base = new Map<string, string>([[STACK_OUTPUTS.queueUrl, 'https://sqs.eu-west-1.amazonaws.com/1/q']]);
const state: SandboxState = {
  sqsEndpoint: 'http://127.0.0.1:9324',
  dynamodbEndpoint: 'http://127.0.0.1:8000',
  queueUrl: 'http://sqs.us-east-1.localhost:9324/000000000000/handoff-deliveries',
  deadLetterQueueUrl: 'http://sqs.us-east-1.localhost:9324/000000000000/handoff-dead-letters',
  ledgerTable: 'handoff-ledger',
  receiverUrl: 'http://127.0.0.1:3000/hooks',
  payloadLimitBytes: 65_536,
};
/** A state file in a private directory of its own; removed after `use`. */
const withStateFile = <T>(fields: object, use: (path: string) => T): T => {
  const directory = mkdtempSync(join(tmpdir(), 'handoff-target-'));
  try {
    const path = join(directory, 'sandbox.json');
    writeSandboxState(path, fields as unknown as SandboxState);
    return use(path);
  } finally {
    rmSync(directory, { recursive: true, force: true });
  }
};

describe('The ordered intake (docs/contract.md §13) in a target', () => {
  const fifoUrl = 'https://sqs.eu-west-1.amazonaws.com/1/Handoff-OrderedQueue-abc.fifo';

  it("reads the stack's OrderedQueueUrl output, and none from a stack deployed before it", () => {
    expect(namesFromOutputs('Handoff', new Map([...base, [STACK_OUTPUTS.orderedQueueUrl, fifoUrl]])).orderedQueueUrl).toBe(fifoUrl);
    expect(namesFromOutputs('Handoff', base)).not.toHaveProperty('orderedQueueUrl');
  });

  it("reads the sandbox's orderedQueueUrl from its state file", () => {
    const url = 'http://sqs.us-east-1.localhost:9324/000000000000/handoff-ordered.fifo';

    const target = withStateFile({ ...state, orderedQueueUrl: url }, (path) => sandboxTarget(path));

    expect(target?.orderedQueueUrl).toBe(url);
    expect(requireOrderedQueue(target!)).toBe(url);
  });

  it('refuses a state file whose orderedQueueUrl is off loopback, naming the field', () => {
    const act = () => withStateFile({ ...state, orderedQueueUrl: 'https://sqs.eu-west-1.amazonaws.com/1/x.fifo' }, (path) => sandboxTarget(path));

    expect(act).toThrow(CommandFailedError);
    expect(act).toThrow(/its orderedQueueUrl is not on loopback/);
  });

  it('takes --ordered-queue-url as a name given, alone or beside the others', async () => {
    const target = await resolveTarget({ orderedQueueUrl: ` ${fifoUrl} ` }, {});

    expect(target).toMatchObject({ description: 'the names given', connection: { kind: 'aws' }, orderedQueueUrl: fifoUrl });
    expect(requireName(target, 'orderedQueueUrl')).toBe(fifoUrl);
  });

  it('refuses with one line (exit 1) when the target has no ordered intake, saying what to do for each kind', async () => {
    const sandboxWithout = withStateFile(state, (path) => ({ target: sandboxTarget(path)!, path }));
    const stack: Target = { description: 'stack Handoff', connection: { kind: 'aws' }, queueUrl: 'https://sqs.example/q' };
    const given = await resolveTarget({ queueUrl: 'https://sqs.example/q' }, {});
    const failureOf = (target: Target) => {
      try {
        requireOrderedQueue(target);
      } catch (error) {
        return describeFailure(error);
      }
      throw new Error('no refusal');
    };

    expect(failureOf(sandboxWithout.target)).toEqual({
      exitCode: 1,
      code: 'no-ordered-queue',
      message: `the sandbox has no ordered intake (its state file ${sandboxWithout.path} names no orderedQueueUrl: it was started before the ordered intake): restart it (npm start)`,
    });
    expect(failureOf(stack)).toEqual({
      exitCode: 1,
      code: 'no-ordered-queue',
      message:
        'stack Handoff has no ordered intake (no OrderedQueueUrl output: deployed before the ordered intake?): deploy the current version, or pass --ordered-queue-url',
    });
    expect(failureOf(given).message).toBe("the names given name no ordered intake: pass --ordered-queue-url (the FIFO queue's URL)");
    expect(() => requireName(given, 'orderedQueueUrl')).toThrow(CommandFailedError);
  });
});

describe('The redrive queue in a target', () => {
  const redriveUrl = 'https://sqs.eu-west-1.amazonaws.com/1/Handoff-RedriveQueue-abc';

  it("reads the stack's RedriveQueueUrl output, and none from a stack deployed before it", () => {
    expect(namesFromOutputs('Handoff', new Map([...base, [STACK_OUTPUTS.redriveQueueUrl, redriveUrl]])).redriveQueueUrl).toBe(redriveUrl);
    expect(namesFromOutputs('Handoff', base)).not.toHaveProperty('redriveQueueUrl');
  });

  it("reads the sandbox's redriveQueueUrl from its state file, and none from a sandbox started before it", () => {
    const url = 'http://sqs.us-east-1.localhost:9324/000000000000/handoff-redrive';

    expect(withStateFile({ ...state, redriveQueueUrl: url }, sandboxTarget)?.redriveQueueUrl).toBe(url);
    expect(withStateFile(state, sandboxTarget)).not.toHaveProperty('redriveQueueUrl');
  });

  it('takes --redrive-queue-url as a name given, alone or beside the others', async () => {
    const alone = await resolveTarget({ redriveQueueUrl: ` ${redriveUrl} ` }, {});
    const beside = await resolveTarget({ queueUrl: 'https://sqs.example/q', redriveQueueUrl: redriveUrl }, {});

    expect(alone).toMatchObject({ description: 'the names given', connection: { kind: 'aws' }, redriveQueueUrl: redriveUrl });
    expect(beside).toMatchObject({ queueUrl: 'https://sqs.example/q', redriveQueueUrl: redriveUrl });
    expect(requireName(alone, 'redriveQueueUrl')).toBe(redriveUrl);
  });

  it('says which option names the redrive queue when a target has none', async () => {
    const target = await resolveTarget({ queueUrl: 'https://sqs.example/q' }, {});

    expect(target.redriveQueueUrl).toBeUndefined();
    expect(() => requireName(target, 'redriveQueueUrl')).toThrow('the names given names no redrive queue: pass --redrive-queue-url');
  });
});

describe('The key of the endpoint secrets the command writes, in a target', () => {
  const keyArn = 'arn:aws:kms:eu-west-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab';
  const base = new Map<string, string>([
    [STACK_OUTPUTS.queueUrl, 'https://sqs.eu-west-1.amazonaws.com/1/q'],
    [STACK_OUTPUTS.deadLetterQueueUrl, 'https://sqs.eu-west-1.amazonaws.com/1/dlq'],
    [STACK_OUTPUTS.ledgerTableName, 'ledger'],
  ]);
  const output = { stdout: process.stdout, stderr: process.stderr };
  const refusal = (target: Target) =>
    new CommandContext(target, output).encryptSecret('whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', 'acme').then(
      () => undefined,
      (error: unknown) => error,
    );

  it("reads the stack's EndpointsKeyArn output, and none from a stack deployed before it", () => {
    expect(namesFromOutputs('Handoff', new Map([...base, [STACK_OUTPUTS.endpointsKeyArn, keyArn]])).endpointSecretsKey).toEqual({ keyArn });
    expect(namesFromOutputs('Handoff', base)).not.toHaveProperty('endpointSecretsKey');
  });

  it("reads the sandbox's secretsKey from its state file, and encrypts with it for the endpoint alone", async () => {
    const key = LocalSecretCipher.generateKey();
    const target = withStateFile({ ...state, secretsKey: key }, sandboxTarget)!;

    const stored = await new CommandContext(target, output).encryptSecret('whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', 'acme');

    expect(target.endpointSecretsKey).toEqual({ key });
    expect(stored).toMatch(/^encrypted:local:/);
    expect(await new LocalSecretCipher(key).decrypt(stored, 'acme')).toBe('whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw');
    expect(withStateFile(state, sandboxTarget)).not.toHaveProperty('endpointSecretsKey');
  });

  it('refuses to write a secret without a key (exit 1), saying for each kind of target where the key comes from', async () => {
    const saved = process.env.HANDOFF_ENDPOINTS_KEY_ARN;
    delete process.env.HANDOFF_ENDPOINTS_KEY_ARN;
    try {
      const older = withStateFile(state, sandboxTarget)!;
      const oldStack: Target = { description: 'stack Handoff', connection: { kind: 'aws' } };
      const given: Target = { description: 'the names given', connection: { kind: 'aws' }, endpointsTable: 'endpoints' };

      const failures = await Promise.all([older, oldStack, given].map(refusal));

      expect(failures.map((error) => describeFailure(error, () => undefined))).toEqual([
        {
          exitCode: 1,
          code: 'no-secrets-key',
          message: `cannot encrypt a signing secret for the sandbox, which names no key for them: its state file ${older.connection.kind === 'sandbox' ? older.connection.stateFile : ''} names no secretsKey (the sandbox was started before endpoint secrets were encrypted): restart it (npm start); nothing written`,
        },
        {
          exitCode: 1,
          code: 'no-secrets-key',
          message:
            "cannot encrypt a signing secret for stack Handoff, which names no key for them: no EndpointsKeyArn output (deployed before endpoint secrets were encrypted?): deploy the current version, or set HANDOFF_ENDPOINTS_KEY_ARN to the ARN of the registry's KMS key; nothing written",
        },
        {
          exitCode: 1,
          code: 'no-secrets-key',
          message:
            "cannot encrypt a signing secret for the names given, which names no key for them: set HANDOFF_ENDPOINTS_KEY_ARN to the ARN of the registry's KMS key (the stack output EndpointsKeyArn); nothing written",
        },
      ]);
    } finally {
      if (saved !== undefined) process.env.HANDOFF_ENDPOINTS_KEY_ARN = saved;
    }
  });
});
