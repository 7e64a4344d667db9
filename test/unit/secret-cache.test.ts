/**
 * Signing secrets read from where they are kept (lib/endpoints/secret.ts): a copy is used for 5
 * minutes, then read again; a failed re-read keeps the copy until it is an hour old, then fails; a
 * failed read is tried again 5 s later, not by every caller; and a secret rotated in Secrets Manager
 * signs with its previous version until the new one is 24 h old.
 */
import { describe, expect, it } from 'vitest';
import {
  SECRET_MAX_AGE_MS,
  SECRET_REREAD_AFTER_MS,
  SECRET_RETRY_AFTER_MS,
  SECRET_ROTATION_OVERLAP_MS,
  SecretCache,
  secretsManagerVersions,
  type GetSecretValue,
} from '../../lib/endpoints/secret';
import { SecretUnavailableError } from '../../lib/errors';

const ARN = 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:handoff/acme-AbCdEf';
const NEW = `whsec_${Buffer.alloc(32, 7).toString('base64')}`;
const OLD = `whsec_${Buffer.alloc(32, 9).toString('base64')}`;
const T0 = Date.parse('2026-12-03T04:00:00Z');

/** A SecretCache over a read the test scripts (each call takes the next answer), on a clock the test sets. */
function cacheOver(answers: (string | Error)[]) {
  let nowMs = T0;
  const reads: number[] = [];
  const warnings: string[] = [];
  const logger = { info: () => {}, error: () => {}, warn: (message: string) => void warnings.push(message), child: () => logger };
  const cache = new SecretCache<string>(
    async () => {
      reads.push(nowMs);
      const answer = answers.shift();
      if (answer === undefined) throw new Error('no more answers');
      if (answer instanceof Error) throw answer;
      return answer;
    },
    { now: () => nowMs, logger },
  );
  return { cache, reads, warnings, at: (ms: number) => (nowMs = ms) };
}

describe('Class: SecretCache', () => {
  it('reads a secret once while its copy is younger than 5 minutes, then again', async () => {
    const c = cacheOver([NEW, OLD]);

    const first = await c.cache.get(ARN);
    c.at(T0 + SECRET_REREAD_AFTER_MS - 1);
    const stillCopy = await c.cache.get(ARN);
    c.at(T0 + SECRET_REREAD_AFTER_MS);
    const reread = await c.cache.get(ARN);

    expect([first, stillCopy, reread]).toEqual([NEW, NEW, OLD]);
    expect(c.reads).toEqual([T0, T0 + SECRET_REREAD_AFTER_MS]);
    expect(c.cache.dueAt(ARN)).toBe(T0 + 2 * SECRET_REREAD_AFTER_MS);
  });

  it('shares one read among concurrent callers', async () => {
    const c = cacheOver([NEW]);

    const values = await Promise.all([c.cache.get(ARN), c.cache.get(ARN), c.cache.get(ARN)]);

    expect(values).toEqual([NEW, NEW, NEW]);
    expect(c.reads).toHaveLength(1);
  });

  it('keeps signing with the copy while re-reads fail, until it is an hour old, then fails', async () => {
    const throttled = Object.assign(new Error('Rate exceeded'), { name: 'ThrottlingException' });
    const c = cacheOver([NEW, throttled, throttled]);
    await c.cache.get(ARN);

    c.at(T0 + SECRET_REREAD_AFTER_MS);
    const duringOutage = await c.cache.get(ARN);
    c.at(T0 + SECRET_MAX_AGE_MS);
    const expired = await c.cache.get(ARN).catch((error: unknown) => error);

    expect(duringOutage).toBe(NEW);
    expect(c.warnings).toEqual(['secret re-read failed: signing with the copy read before']);
    expect(expired).toBeInstanceOf(SecretUnavailableError);
    expect(expired).toMatchObject({ code: 'secret-expired', cause: throttled });
    expect(String((expired as Error).message)).toContain(ARN);
  });

  it('fails a first read, and tries again no sooner than 5 s later, whoever asks', async () => {
    const denied = Object.assign(new Error('Access to KMS is not allowed'), { name: 'AccessDeniedException' });
    const c = cacheOver([denied, NEW]);

    const first = await c.cache.get(ARN).catch((error: unknown) => error);
    c.at(T0 + SECRET_RETRY_AFTER_MS - 1);
    const soon = await c.cache.get(ARN).catch((error: unknown) => error);
    const due = c.cache.dueAt(ARN);
    c.at(T0 + SECRET_RETRY_AFTER_MS);
    const later = await c.cache.get(ARN);

    expect(first).toBe(denied);
    expect(soon).toBe(denied);
    expect(due).toBe(T0 + SECRET_RETRY_AFTER_MS);
    expect(later).toBe(NEW);
    expect(c.reads).toEqual([T0, T0 + SECRET_RETRY_AFTER_MS]);
  });
});

/** A GetSecretValue stub: AWSCURRENT put at `rotatedAt`, AWSPREVIOUS as given (an Error is thrown). */
function secretsManager(options: { current?: string; rotatedAt?: number; previous?: string | Error }) {
  const calls: string[] = [];
  const get: GetSecretValue = async ({ SecretId, VersionStage }) => {
    calls.push(`${SecretId} ${VersionStage ?? 'AWSCURRENT'}`);
    if (VersionStage === 'AWSPREVIOUS') {
      if (options.previous instanceof Error) throw options.previous;
      if (options.previous === undefined) throw Object.assign(new Error("Secrets Manager can't find the specified secret value for staging label: AWSPREVIOUS"), { name: 'ResourceNotFoundException' });
      return { SecretString: options.previous };
    }
    return { SecretString: options.current ?? NEW, ...(options.rotatedAt !== undefined ? { CreatedDate: new Date(options.rotatedAt) } : {}) };
  };
  return { get, calls };
}

describe('Function: secretsManagerVersions', () => {
  it('signs with AWSPREVIOUS too until the current version is 24 h old', async () => {
    const sm = secretsManager({ rotatedAt: T0 - 1000, previous: OLD });

    const versions = await secretsManagerVersions(sm.get, { now: () => T0 })(ARN);

    expect(versions).toEqual({ current: NEW, previous: { secret: OLD, untilMs: T0 - 1000 + SECRET_ROTATION_OVERLAP_MS } });
    expect(sm.calls).toEqual([`${ARN} AWSCURRENT`, `${ARN} AWSPREVIOUS`]);
  });

  it('reads AWSCURRENT alone once the current version is older than the overlap', async () => {
    const sm = secretsManager({ rotatedAt: T0 - SECRET_ROTATION_OVERLAP_MS, previous: OLD });

    const versions = await secretsManagerVersions(sm.get, { now: () => T0 })(ARN);

    expect(versions).toEqual({ current: NEW });
    expect(sm.calls).toEqual([`${ARN} AWSCURRENT`]);
  });

  it('signs with the current version alone when the secret has no previous one', async () => {
    const sm = secretsManager({ rotatedAt: T0 - 1000 });

    expect(await secretsManagerVersions(sm.get, { now: () => T0 })(ARN)).toEqual({ current: NEW });
  });

  it('fails the read when AWSPREVIOUS cannot be read during the overlap (the receiver may hold only the old secret)', async () => {
    const sm = secretsManager({ rotatedAt: T0 - 1000, previous: Object.assign(new Error('Rate exceeded'), { name: 'ThrottlingException' }) });

    const error = await secretsManagerVersions(sm.get, { now: () => T0 })(ARN).catch((e: unknown) => e);

    expect(error).toMatchObject({ name: 'SecretUnavailableError', code: 'secret-unreadable', message: `Secrets Manager could not read AWSPREVIOUS of ${ARN}: ThrottlingException` });
  });

  it('refuses a current value that cannot sign, naming the ARN and not the value', async () => {
    const sm = secretsManager({ current: 'whsec_AAAA' });

    const error = await secretsManagerVersions(sm.get)(ARN).catch((e: unknown) => e);

    expect(error).toMatchObject({ name: 'SecretUnavailableError', code: 'secret-invalid' });
    expect((error as Error).message).toBe(`the secret ${ARN} cannot sign: its key decodes to a 3-byte key; at least 24 bytes are needed (the value must be whsec_<base64> or bare base64)`);
  });

  it('signs with the current version alone when the previous one cannot sign', async () => {
    const sm = secretsManager({ rotatedAt: T0 - 1000, previous: 'not a key' });

    expect(await secretsManagerVersions(sm.get, { now: () => T0 })(ARN)).toEqual({ current: NEW });
  });
});
