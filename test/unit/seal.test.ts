import { describe, expect, it } from 'vitest';
import { ConfigError, SealKeyError } from '../../lib/errors';
import {
  CONTROL_ATTRIBUTES,
  MessageSeal,
  SEAL_ATTRIBUTE,
  SEAL_KEY_MAX_AGE_MS,
  SEAL_KEY_RETRY_AFTER_MS,
  sealedAttributes,
  sealFromEnvironment,
  sealSource,
  type ControlValues,
} from '../../lib/queue/seal';
const KEY = Buffer.alloc(32, 1).toString('base64');
const seal = new MessageSeal(KEY);
const BODY = '{"id":"evt_1","shipmentId":"shp_1","status":"delivered","occurredAt":"2026-12-04T10:00:00Z"}';

/** Reads attributes as the consumer does: by name, string values. */
function reader(attributes: Record<string, { StringValue?: string }>) {
  return (name: string) => attributes[name]?.StringValue;
}

describe('Class: MessageSeal', () => {
  describe('Method: controlOf', () => {
    it('gives every control value of a message sealed with the same key', () => {
      const control: ControlValues = { endpoint: 'acme', sequence: '3', inTurn: 'true', notBefore: '1800000000000', notBeforeRate: '2', recoveries: '1' };

      expect(seal.controlOf(BODY, reader(sealedAttributes(seal, BODY, control)))).toStrictEqual(control);
    });

    it('gives none for a message without a seal, whatever control attributes it carries', () => {
      const attributes = { endpoint: { StringValue: 'acme' }, sequence: { StringValue: '1' }, inTurn: { StringValue: 'true' } };

      expect(seal.controlOf(BODY, reader(attributes))).toStrictEqual({});
    });

    it.each([
      ['another body', (a: Record<string, { StringValue?: string }>) => ({ body: BODY.replace('evt_1', 'evt_2'), attributes: a })],
      ['another endpoint', (a: Record<string, { StringValue?: string }>) => ({ body: BODY, attributes: { ...a, endpoint: { StringValue: 'zephyr' } } })],
      ['a control attribute added', (a: Record<string, { StringValue?: string }>) => ({ body: BODY, attributes: { ...a, inTurn: { StringValue: 'true' } } })],
      ['a control attribute removed', (a: Record<string, { StringValue?: string }>) => ({ body: BODY, attributes: { ...a, sequence: {} } })],
      ['a forged seal', (a: Record<string, { StringValue?: string }>) => ({ body: BODY, attributes: { ...a, [SEAL_ATTRIBUTE]: { StringValue: 'x'.repeat(43) } } })],
      ['an empty seal', (a: Record<string, { StringValue?: string }>) => ({ body: BODY, attributes: { ...a, [SEAL_ATTRIBUTE]: { StringValue: '' } } })],
    ])('gives none for a sealed message with %s', (_, tamper) => {
      const { body, attributes } = tamper(sealedAttributes(seal, BODY, { endpoint: 'acme', sequence: '2' }));

      expect(seal.controlOf(body, reader(attributes))).toStrictEqual({});
    });

    it('gives none for a message sealed with another key', () => {
      const other = new MessageSeal(MessageSeal.generateKey());

      expect(seal.controlOf(BODY, reader(sealedAttributes(other, BODY, { endpoint: 'acme' })))).toStrictEqual({});
    });

    it('keeps values apart from names and the body: a value cannot pass for the next attribute', () => {
      // The same characters split differently between the endpoint, the sequence and the body.
      const a = seal.seal(BODY, { endpoint: 'acme', sequence: '1' });
      const b = seal.seal(BODY, { endpoint: 'acme\nsequence=1:1', sequence: undefined });
      const c = seal.seal(`1\n${BODY}`, { endpoint: 'acme' });

      expect(new Set([a, b, c]).size).toBe(3);
    });

    it('ignores attributes that steer nothing: a producer may add its own', () => {
      const attributes = { ...sealedAttributes(seal, BODY, { endpoint: 'acme' }), origin: { StringValue: 'warehouse-7' } };

      expect(seal.controlOf(BODY, reader(attributes))).toStrictEqual({ endpoint: 'acme' });
    });
  });

  describe('Function: sealedAttributes', () => {
    it('writes the control values given, numbers as Number, and the seal, nothing else', () => {
      const attributes = sealedAttributes(seal, BODY, { endpoint: 'acme', sequence: '4', inTurn: 'true' });

      expect(attributes).toStrictEqual({
        endpoint: { DataType: 'String', StringValue: 'acme' },
        sequence: { DataType: 'Number', StringValue: '4' },
        inTurn: { DataType: 'String', StringValue: 'true' },
        seal: { DataType: 'String', StringValue: seal.seal(BODY, { endpoint: 'acme', sequence: '4', inTurn: 'true' }) },
      });
      expect(CONTROL_ATTRIBUTES).toStrictEqual(['endpoint', 'sequence', 'inTurn', 'notBefore', 'notBeforeRate', 'recoveries']);
    });
  });

  it('lets what a replaced key sealed steer after a rotation, and seals with the new key', () => {
    const rotated = new MessageSeal(MessageSeal.generateKey(), [KEY]);
    const sealedBefore = sealedAttributes(seal, BODY, { endpoint: 'acme' });

    expect(rotated.controlOf(BODY, reader(sealedBefore))).toStrictEqual({ endpoint: 'acme' });
    expect(rotated.seal(BODY, { endpoint: 'acme' })).not.toBe(seal.seal(BODY, { endpoint: 'acme' }));
    expect(seal.controlOf(BODY, reader(sealedAttributes(rotated, BODY, { endpoint: 'acme' })))).toStrictEqual({});
  });

  it('refuses a key shorter than 32 bytes', () => {
    expect(() => new MessageSeal(Buffer.alloc(16).toString('base64'))).toThrow(new SealKeyError('a seal key must be base64 of at least 32 bytes, got 16'));
  });
});

describe('Function: sealFromEnvironment', () => {
  it('takes HANDOFF_SEAL_KEY where no ARN is given', async () => {
    const fromEnv = await sealFromEnvironment({ HANDOFF_SEAL_KEY: KEY });

    expect(fromEnv.seal(BODY, { endpoint: 'acme' })).toBe(seal.seal(BODY, { endpoint: 'acme' }));
  });

  it('fails naming the variable when there is no key, or one that cannot seal', async () => {
    await expect(sealFromEnvironment({})).rejects.toThrow(new ConfigError('HANDOFF_SEAL_KEY', 'must be set'));
    await expect(sealFromEnvironment({ HANDOFF_SEAL_KEY: 'c2hvcnQ=' })).rejects.toThrow(
      new ConfigError('HANDOFF_SEAL_KEY', 'cannot seal: a seal key must be base64 of at least 32 bytes, got 5'),
    );
  });
});

describe('Function: sealFromEnvironment, in AWS', () => {
  const ARN = 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:handoff-seal-AbCdEf';

  it('reads AWSCURRENT to seal and AWSPREVIOUS to keep what it sealed steering', async () => {
    const previous = MessageSeal.generateKey();
    const asked: (string | undefined)[] = [];
    const get = async (input: { SecretId: string; VersionStage?: string }) => {
      asked.push(input.VersionStage);
      return { SecretString: input.VersionStage === 'AWSPREVIOUS' ? previous : KEY };
    };

    const read = await sealFromEnvironment({ HANDOFF_SEAL_KEY_ARN: ARN }, get);

    expect(asked).toStrictEqual([undefined, 'AWSPREVIOUS']);
    expect(read.seal(BODY, { endpoint: 'acme' })).toBe(seal.seal(BODY, { endpoint: 'acme' }));
    const old = new MessageSeal(previous);
    expect(read.controlOf(BODY, reader(sealedAttributes(old, BODY, { endpoint: 'acme' })))).toStrictEqual({ endpoint: 'acme' });
  });

  it('takes a secret never rotated (no AWSPREVIOUS), and fails as the read fails otherwise', async () => {
    const notFound = Object.assign(new Error('no such version'), { name: 'ResourceNotFoundException' });
    const throttled = Object.assign(new Error('slow down'), { name: 'ThrottlingException' });
    const once = (failure: Error) => async (input: { VersionStage?: string }) => {
      if (input.VersionStage === 'AWSPREVIOUS') throw failure;
      return { SecretString: KEY };
    };

    const read = await sealFromEnvironment({ HANDOFF_SEAL_KEY_ARN: ARN }, once(notFound));

    expect(read.seal(BODY, {})).toBe(seal.seal(BODY, {}));
    await expect(sealFromEnvironment({ HANDOFF_SEAL_KEY_ARN: ARN }, once(throttled))).rejects.toThrow('slow down');
  });
});

describe('Function: sealSource', () => {
  it('reads the key again once it is SEAL_KEY_MAX_AGE_MS old, sealing with the one at hand meanwhile; a failed read keeps it', async () => {
    let clock = 0;
    const rotated = new MessageSeal(MessageSeal.generateKey());
    const answers: (MessageSeal | Error)[] = [seal, new Error('throttled'), rotated];
    let loads = 0;
    const source = sealSource(
      async () => {
        const answer = answers[loads++]!;
        if (answer instanceof Error) throw answer;
        return answer;
      },
      { now: () => clock },
    );

    expect(await source()).toBe(seal);
    clock = SEAL_KEY_MAX_AGE_MS - 1;
    expect(await source()).toBe(seal);
    expect(loads).toBe(1);
    clock = SEAL_KEY_MAX_AGE_MS;
    expect(await source()).toBe(seal); // the read starts; the key at hand seals
    await Promise.resolve();
    expect(loads).toBe(2);
    expect(await source()).toBe(seal); // the read failed: the key at hand goes on, no read before the retry
    expect(loads).toBe(2);
    clock += SEAL_KEY_RETRY_AFTER_MS;
    await source();
    await new Promise((resolve) => setImmediate(resolve));
    expect(loads).toBe(3);
    expect(await source()).toBe(rotated);
  });

  it('loads once, and again after a failed load', async () => {
    let loads = 0;
    const source = sealSource(async () => {
      loads += 1;
      if (loads === 1) throw new Error('throttled');
      return seal;
    });

    await expect(source()).rejects.toThrow('throttled');
    const [first, second] = await Promise.all([source(), source()]);

    expect(first).toBe(seal);
    expect(second).toBe(seal);
    expect(loads).toBe(2);
  });
});
