import { describe, expect, it } from 'vitest';
import { CommandFailedError, describeFailure, networkErrorCode, UsageError } from '../../cli/errors';
import { ReplayRefusedError } from '../../lib/ledger/errors';
import type { DeliveryRecord } from '../../lib/ledger/ledger';
import { DEFAULT_RETRY_POLICY } from '../../lib/policy';
import { ReplayEnqueueError, ReplayInputError } from '../../lib/errors';

const pending: DeliveryRecord = {
  eventId: 'evt_9',
  endpoint: 'default',
  state: 'pending',
  attempts: 0,
  maxAttempts: 6,
  policy: DEFAULT_RETRY_POLICY,
  history: [],
  replays: 1,
  audit: [],
  createdAt: 0,
  stateSince: 0,
  expiresAt: 0,
};

describe('Function: describeFailure', () => {
  it('gives exit 2 for a usage error and exit 1 for a failure', () => {
    expect(describeFailure(new UsageError('pass --table'))).toEqual({ exitCode: 2, code: 'usage', message: 'pass --table' });
    expect(describeFailure(new CommandFailedError('no record', 'not-found'))).toEqual({
      exitCode: 1,
      code: 'not-found',
      message: 'no record',
    });
  });

  it('names the refusal of a replay as its code', () => {
    const failure = describeFailure(new ReplayRefusedError('not-dead', 'evt_9', pending));

    expect(failure).toEqual({
      exitCode: 1,
      code: 'not-dead',
      message: 'event evt_9 is pending, not dead: only dead records can be replayed',
    });
  });

  it('tells the operator how to enqueue a replayed event whose enqueue failed', () => {
    const failure = describeFailure(new ReplayEnqueueError(pending, { cause: new Error('socket hang up') }));

    expect(failure.exitCode).toBe(1);
    expect(failure.message).toBe(
      'event evt_9 is pending again (replay 1 recorded) but could not be enqueued: socket hang up; ' +
        'put it on the queue with: handoff status evt_9 --body | handoff send',
    );
  });

  it('gives exit 2 for an operator or reason the audit entry cannot keep', () => {
    const failure = describeFailure(new ReplayInputError('reason', 'is 513 characters, over the 512-character limit'));

    expect(failure).toEqual({
      exitCode: 2,
      code: 'invalid-replay-input',
      message: 'reason is 513 characters, over the 512-character limit',
    });
  });

  it('folds any multi-line message into one line', () => {
    const failure = describeFailure(new Error('first\n  second\nthird'));

    expect(failure).toEqual({ exitCode: 1, code: 'Error', message: 'Error: first second third' });
  });

  it('prefers the hint for an error the hint recognises', () => {
    const failure = describeFailure(new Error('connect ECONNREFUSED'), () => 'the sandbox is not answering');

    expect(failure).toEqual({ exitCode: 1, code: 'unreachable', message: 'the sandbox is not answering' });
  });
});

describe('Function: networkErrorCode', () => {
  it('finds the code on the error, in its cause chain, or among aggregated errors', () => {
    const refused = Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });

    expect(networkErrorCode(refused)).toBe('ECONNREFUSED');
    expect(networkErrorCode(new Error('wrapped', { cause: refused }))).toBe('ECONNREFUSED');
    expect(networkErrorCode(new AggregateError([refused], 'all failed'))).toBe('ECONNREFUSED');
    expect(networkErrorCode(new Error('plain'))).toBeUndefined();
  });
});
