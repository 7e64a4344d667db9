/** One invocation as bench/worker.ts measured it, written as a line on the worker's stderr. */
export interface Measurement {
  readonly records: number;
  /** User + system CPU of the invocation, microseconds. */
  readonly cpuMicros: number;
  readonly wallMs: number;
  readonly pid: number;
}

export const MEASUREMENT_PREFIX = '@@bench ';

export function parseMeasurement(line: string): Measurement | undefined {
  if (!line.startsWith(MEASUREMENT_PREFIX)) return undefined;
  return JSON.parse(line.slice(MEASUREMENT_PREFIX.length)) as Measurement;
}
