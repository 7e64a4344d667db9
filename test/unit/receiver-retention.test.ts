import { describe, expect, it } from 'vitest';
import { DEFAULT_RETRY_POLICY, retryPolicy } from '../../lib/policy';
import { ReceiverRetentionError } from '../../lib/receiver/errors';
import { checkReceiverRetention, retryWindowSeconds } from '../../lib/receiver/retention';
import { DEFAULT_RETENTION_SECONDS } from '../../lib/receiver/store';

describe('Function: retryWindowSeconds', () => {
  it('adds the waits after every failed attempt but the last: 9750 s for the default policy', () => {
    expect(retryWindowSeconds(DEFAULT_RETRY_POLICY)).toBe(30 + 120 + 600 + 1800 + 7200);
  });

  it('repeats the last wait when there are more attempts than waits', () => {
    expect(retryWindowSeconds(retryPolicy(5, [10, 60]))).toBe(10 + 60 + 60 + 60);
  });

  it('is 0 for a single attempt', () => {
    expect(retryWindowSeconds(retryPolicy(1, [30]))).toBe(0);
  });
});

describe('Function: checkReceiverRetention', () => {
  it('accepts a retention longer than the window', () => {
    expect(() => checkReceiverRetention(DEFAULT_RETRY_POLICY, 9751)).not.toThrow();
    expect(() => checkReceiverRetention(DEFAULT_RETRY_POLICY, DEFAULT_RETENTION_SECONDS)).not.toThrow();
  });

  it.each([9750, 3600])('refuses a retention of %i s against the 9750 s window, naming both figures', (retention) => {
    let error: unknown;
    try {
      checkReceiverRetention(DEFAULT_RETRY_POLICY, retention);
    } catch (caught) {
      error = caught;
    }

    expect(error).toBeInstanceOf(ReceiverRetentionError);
    expect(error).toMatchObject({ code: 'receiver-retention', retryWindowSeconds: 9750, receiverRetentionSeconds: retention });
    expect((error as Error).message).toBe(
      `receiverRetentionSeconds ${retention} must exceed the retry policy's window of 9750 s: ` +
        'a retry after the receiver forgot the webhook ID would apply the event again',
    );
  });
});
