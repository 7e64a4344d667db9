/**
 * The consumer function's memory size, as the stack sets it by default: the cost follows the stack.
 */
import { CONSUMER_MEMORY_MB } from '../../infra/webhook-delivery';

export interface MemorySize {
  readonly memoryMb: number;
  /** Where the figure comes from, for the report. */
  readonly source: string;
}

export function consumerMemorySize(): MemorySize {
  return { memoryMb: CONSUMER_MEMORY_MB, source: "infra/webhook-delivery.ts, CONSUMER_MEMORY_MB (the consumer's memorySize default)" };
}
