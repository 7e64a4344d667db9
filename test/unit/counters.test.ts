import { describe, expect, it } from 'vitest';
import { formatCounts } from '../../sandbox/counters';

describe('Function: formatCounts', () => {
  it('prints delivered, queued, dead and the dead-letter queue', () => {
    const line = formatCounts({ delivered: 12, queued: 1_500, dead: 1, deadLetters: 2 });

    expect(line).toBe('delivered 12 · queued 1500 · dead 1 · dead-letter queue 2');
  });
});
