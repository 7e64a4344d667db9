/**
 * The sandbox state file is trusted only when nobody but the user could have written it, and
 * only for loopback endpoints. Ownership is pure logic over a stat (the tests run as one uid);
 * modes, symbolic links and the writer are checked on real files.
 */
import { chmodSync, mkdirSync, mkdtempSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CommandFailedError, describeFailure } from '../../cli/errors';
import { sandboxTarget } from '../../cli/target';
import { deploymentFromJson, deploymentToJson } from '../../lib/endpoints/endpoint';
import { retryPolicy } from '../../lib/policy';
import {
  isLoopbackUrl,
  parseSandboxState,
  readSandboxState,
  sandboxStateDirectory,
  sandboxStateFile,
  SandboxStateError,
  untrustedBecause,
  writeSandboxState,
  type Ownership,
  type SandboxState,
} from '../../sandbox/state-file';

const ME = 1000;

const STATE: SandboxState = {
  sqsEndpoint: 'http://127.0.0.1:9324',
  dynamodbEndpoint: 'http://127.0.0.1:8000',
  queueUrl: 'http://sqs.us-east-1.localhost:9324/000000000000/handoff-deliveries',
  deadLetterQueueUrl: 'http://sqs.us-east-1.localhost:9324/000000000000/handoff-dead-letters',
  ledgerTable: 'handoff-ledger',
  receiverUrl: 'http://127.0.0.1:4000/hooks',
  payloadLimitBytes: 4096,
};

/** What a sandbox with the endpoint registry adds to its state. */
const DEPLOYMENT = deploymentToJson({
  retryPolicy: retryPolicy(3, [1, 2]),
  attemptTimeoutMs: 2000,
  retentionDays: 30,
  allowPrivateCidrs: ['127.0.0.0/8'],
  allowHttp: true,
});
const STATE_WITH_ENDPOINTS: SandboxState = { ...STATE, endpointsTable: 'handoff-endpoints', deployment: DEPLOYMENT };

function stat(kind: 'file' | 'directory', uid: number, mode: number): Ownership {
  return { uid, mode, isFile: () => kind === 'file', isDirectory: () => kind === 'directory' };
}

describe('Function: untrustedBecause', () => {
  it("trusts the user's own 0600 file in their own 0700 directory", () => {
    expect(untrustedBecause('file', stat('file', ME, 0o100600), ME)).toBeUndefined();
    expect(untrustedBecause('directory', stat('directory', ME, 0o040700), ME)).toBeUndefined();
  });

  it('refuses a file or directory another user owns', () => {
    expect(untrustedBecause('file', stat('file', 1001, 0o100600), ME)).toBe('is refused: it is owned by uid 1001, not by you (uid 1000)');
    expect(untrustedBecause('directory', stat('directory', 0, 0o040755), ME)).toBe(
      'is refused: its directory is owned by uid 0, not by you (uid 1000)',
    );
  });

  it('refuses a file or directory that group or others may write', () => {
    expect(untrustedBecause('file', stat('file', ME, 0o100620), ME)).toBe('is refused: it is writable by group (mode 620; want 600)');
    expect(untrustedBecause('file', stat('file', ME, 0o100666), ME)).toBe(
      'is refused: it is writable by group and others (mode 666; want 600)',
    );
    expect(untrustedBecause('directory', stat('directory', ME, 0o041777), ME)).toBe(
      'is refused: its directory is writable by group and others (mode 777; want 700)',
    );
  });

  it('refuses something that is not a regular file', () => {
    expect(untrustedBecause('file', stat('directory', ME, 0o040700), ME)).toBe('is not a regular file');
  });
});

describe('Function: isLoopbackUrl', () => {
  const loopback = [
    'http://127.0.0.1:9324',
    'http://127.8.9.10:1/x',
    'http://127.1:80',
    'http://[::1]:8000',
    'http://localhost:8000',
    'http://sqs.us-east-1.localhost:9324/000000000000/q',
  ];
  const other = [
    'http://10.0.0.5:9324',
    'http://128.0.0.1:9324',
    'https://sqs.us-east-1.amazonaws.com/123456789012/q',
    'http://localhost.evil.example:80',
    'http://[::ffff:10.0.0.1]:80',
    'not a url',
  ];

  it.each([...loopback.map((url) => ['accepts', url, true] as const), ...other.map((url) => ['refuses', url, false] as const)])(
    '%s %s',
    (_verdict, url, accepted) => {
      expect(isLoopbackUrl(url)).toBe(accepted);
    },
  );
});

describe('Function: parseSandboxState', () => {
  it('reads a state with every field and loopback endpoints', () => {
    expect(parseSandboxState('/s.json', JSON.stringify(STATE))).toEqual(STATE);
  });

  it.each(['sqsEndpoint', 'dynamodbEndpoint', 'queueUrl', 'deadLetterQueueUrl'] as const)(
    'refuses a %s that is not on loopback',
    (field) => {
      const act = () => parseSandboxState('/s.json', JSON.stringify({ ...STATE, [field]: 'http://203.0.113.7:9324/000000000000/q' }));

      expect(act).toThrow(SandboxStateError);
      expect(act).toThrow(
        `the sandbox state file /s.json is refused: its ${field} is not on loopback (127.0.0.0/8, ::1, localhost), where the sandbox listens`,
      );
    },
  );

  it('refuses a state without a payload limit, naming the field', () => {
    const { payloadLimitBytes: _limit, ...old } = STATE;

    expect(() => parseSandboxState('/s.json', JSON.stringify(old))).toThrow(
      'the sandbox state file /s.json has no payloadLimitBytes (a whole number of bytes)',
    );
  });

  it('refuses text that is not JSON', () => {
    expect(() => parseSandboxState('/s.json', '{')).toThrow('the sandbox state file /s.json is not JSON');
  });

  it("reads the endpoint registry's table and the deployment's settings", () => {
    const state = parseSandboxState('/s.json', JSON.stringify(STATE_WITH_ENDPOINTS));

    expect(state).toEqual(STATE_WITH_ENDPOINTS);
  });

  it('reads the state of a sandbox started before the registry, without them', () => {
    const state = parseSandboxState('/s.json', JSON.stringify(STATE));

    expect(state).not.toHaveProperty('endpointsTable');
    expect(state).not.toHaveProperty('deployment');
  });

  it('refuses an endpointsTable that is no table name', () => {
    for (const endpointsTable of ['', 7]) {
      expect(() => parseSandboxState('/s.json', JSON.stringify({ ...STATE, endpointsTable }))).toThrow(
        'the sandbox state file /s.json has an endpointsTable that is not a table name',
      );
    }
  });

  it('reads the key of the endpoint secrets, and refuses one that is not 32 bytes of base64, never showing it', () => {
    const secretsKey = Buffer.alloc(32, 5).toString('base64');
    const short = Buffer.alloc(16, 5).toString('base64');

    expect(parseSandboxState('/s.json', JSON.stringify({ ...STATE, secretsKey }))).toEqual({ ...STATE, secretsKey });
    expect(parseSandboxState('/s.json', JSON.stringify(STATE))).not.toHaveProperty('secretsKey');
    for (const bad of [short, '', 7]) {
      const act = () => parseSandboxState('/s.json', JSON.stringify({ ...STATE, secretsKey: bad }));
      expect(act).toThrow(SandboxStateError);
      expect(act).toThrow('the sandbox state file /s.json has a secretsKey that is not a key (32 bytes, base64)');
    }
  });

  it('refuses a deployment that is not the settings the sandbox writes', () => {
    const act = () => parseSandboxState('/s.json', JSON.stringify({ ...STATE, deployment: { ...DEPLOYMENT, retentionDays: 'thirty' } }));

    expect(act).toThrow(SandboxStateError);
    expect(act).toThrow("the sandbox state file /s.json has a deployment that does not hold the deployment's endpoint defaults");
  });
});

describe('Function: sandboxStateFile', () => {
  it('defaults to a directory of the user\'s own: under XDG_RUNTIME_DIR, else handoff-<uid> in the temp directory', () => {
    expect(sandboxStateFile({ XDG_RUNTIME_DIR: '/run/user/1000' })).toBe('/run/user/1000/handoff/sandbox.json');
    expect(sandboxStateDirectory({}, 1000)).toBe(join(tmpdir(), 'handoff-1000'));
    expect(sandboxStateFile({ HANDOFF_SANDBOX_FILE: '/srv/s.json', XDG_RUNTIME_DIR: '/run/user/1000' })).toBe('/srv/s.json');
  });
});

describe('Real files', () => {
  let root: string;
  beforeEach(() => {
    root = mkdtempSync(join(tmpdir(), 'handoff-state-test-'));
  });
  afterEach(() => {
    rmSync(root, { recursive: true, force: true });
  });

  it('writes the file 0600 in a directory it creates 0700, and reads it back', () => {
    // Prepare
    const path = join(root, 'handoff', 'sandbox.json');

    // Act
    writeSandboxState(path, STATE);

    // Assess
    expect(statSync(join(root, 'handoff')).mode & 0o777).toBe(0o700);
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(readSandboxState(path)).toEqual(STATE);
  });

  it("gives the CLI's target the registry's table and the deployment's settings, or neither for an older sandbox", () => {
    const path = join(root, 'sandbox.json');
    const older = join(root, 'older.json');
    writeSandboxState(path, STATE_WITH_ENDPOINTS);
    writeSandboxState(older, STATE);

    const target = sandboxTarget(path);
    const olderTarget = sandboxTarget(older);

    expect(target).toMatchObject({ endpointsTable: 'handoff-endpoints', ledgerTable: 'handoff-ledger' });
    expect(target?.deployment).toEqual(deploymentFromJson(DEPLOYMENT, 'test'));
    expect(olderTarget).not.toHaveProperty('endpointsTable');
    expect(olderTarget).not.toHaveProperty('deployment');
  });

  it('reads no sandbox when there is no file', () => {
    expect(readSandboxState(join(root, 'none.json'))).toBeUndefined();
  });

  it('refuses a file others may write', () => {
    // Prepare
    const path = join(root, 'sandbox.json');
    writeSandboxState(path, STATE);
    chmodSync(path, 0o666);

    // Act
    const act = () => readSandboxState(path);

    // Assess
    expect(act).toThrow(`the sandbox state file ${path} is refused: it is writable by group and others (mode 666; want 600)`);
  });

  it('refuses a file in a directory others may write', () => {
    const shared = join(root, 'shared');
    mkdirSync(shared);
    writeFileSync(join(shared, 'sandbox.json'), JSON.stringify(STATE), { mode: 0o600 });
    chmodSync(shared, 0o777);

    expect(() => readSandboxState(join(shared, 'sandbox.json'))).toThrow('is refused: its directory is writable by group and others (mode 777; want 700)');
  });

  it('refuses to write into a directory others may write', () => {
    const shared = join(root, 'shared');
    mkdirSync(shared);
    chmodSync(shared, 0o777);

    expect(() => writeSandboxState(join(shared, 'sandbox.json'), STATE)).toThrow(SandboxStateError);
  });

  it('refuses a symbolic link to a state file', () => {
    const real = join(root, 'real.json');
    writeSandboxState(real, STATE);
    symlinkSync(real, join(root, 'link.json'));

    expect(() => readSandboxState(join(root, 'link.json'))).toThrow(
      `the sandbox state file ${join(root, 'link.json')} is refused: it is a symbolic link`,
    );
  });

  it('makes the CLI fail with exit 1 and one line for a refused file', () => {
    // Prepare
    const path = join(root, 'sandbox.json');
    writeSandboxState(path, { ...STATE, sqsEndpoint: 'http://203.0.113.7:9324' });

    // Act
    let thrown: unknown;
    try {
      sandboxTarget(path);
    } catch (error) {
      thrown = error;
    }

    // Assess
    expect(thrown).toBeInstanceOf(CommandFailedError);
    expect(describeFailure(thrown)).toEqual({
      exitCode: 1,
      code: 'sandbox-state-untrusted',
      message:
        `the sandbox state file ${path} is refused: its sqsEndpoint is not on loopback (127.0.0.0/8, ::1, localhost), ` +
        'where the sandbox listens: remove it and start your own sandbox (npm start)',
    });
  });
});
