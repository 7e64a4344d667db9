/**
 * The consumer function's memory size, as the stack sets it: read from the construct's source, so
 * the cost follows the stack. Refuses to guess when the construct no longer says it plainly.
 */
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';

export const CONSTRUCT_PATH = fileURLToPath(new URL('../../infra/webhook-delivery.ts', import.meta.url));

export interface MemorySize {
  readonly memoryMb: number;
  /** Where the figure was read, for the report. */
  readonly source: string;
}

export async function consumerMemorySize(): Promise<MemorySize> {
  return memorySizeFrom(await readFile(CONSTRUCT_PATH, 'utf8'));
}

/**
 * The default `memorySize` of the construct's function: `memorySize: props.x ?? 256`,
 * `memorySize: 256`, or `memorySize: props.x ?? NAME` / `memorySize: NAME` with `NAME = 256` in
 * the same file.
 */
export function memorySizeFrom(source: string): MemorySize {
  const setting = /memorySize:\s*(?:[\w.]+\s*\?\?\s*)?([A-Za-z_]\w*|\d+)\s*[,\n]/.exec(source);
  const value = setting?.[1];
  if (value === undefined) throw new Error('infra/webhook-delivery.ts sets no memorySize the cost model can read');
  if (/^\d+$/.test(value)) return { memoryMb: Number(value), source: 'infra/webhook-delivery.ts, the consumer\'s memorySize default' };
  const constant = new RegExp(`\\b${value}\\s*=\\s*(\\d+)`).exec(source)?.[1];
  if (constant === undefined) throw new Error(`infra/webhook-delivery.ts sets memorySize from ${value}, whose value the cost model cannot read`);
  return { memoryMb: Number(constant), source: `infra/webhook-delivery.ts, ${value}` };
}
