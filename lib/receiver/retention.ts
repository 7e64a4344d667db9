/**
 * The retention rule: a receiver must remember a webhook ID for longer than the sender may
 * still retry it, or a late retry finds no record and the action runs a second time.
 */
import { nextWaitSeconds, type RetryPolicy } from '../policy';
import { ReceiverRetentionError } from './errors';

/**
 * Seconds from the first attempt to the start of the last one, on the policy's schedule: the
 * waits after each failed attempt but the last. Each attempt's own duration (up to its timeout),
 * queue delays and a receiver's `Retry-After` (each wait up to 12 h) come on top.
 */
export function retryWindowSeconds(policy: Pick<RetryPolicy, 'maxAttempts' | 'waitsSeconds'>): number {
  let total = 0;
  for (let failed = 1; failed < policy.maxAttempts; failed++) {
    total += nextWaitSeconds({ version: '', ...policy }, failed);
  }
  return total;
}

/**
 * Refuses a receiver retention that does not exceed the policy's retry window, naming both.
 * @throws ReceiverRetentionError
 */
export function checkReceiverRetention(
  policy: Pick<RetryPolicy, 'maxAttempts' | 'waitsSeconds'>,
  receiverRetentionSeconds: number,
): void {
  const windowSeconds = retryWindowSeconds(policy);
  if (!(receiverRetentionSeconds > windowSeconds)) throw new ReceiverRetentionError(windowSeconds, receiverRetentionSeconds);
}
