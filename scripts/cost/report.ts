/** Plain-text tables and the target lines `npm run cost` prints. */
import type { TableShape } from './billing';
import type { DynamoDbUsage } from './metering-proxy';

export function formatTable(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = header.map((title, column) => Math.max(title.length, ...rows.map((row) => row[column]?.length ?? 0)));
  const line = (cells: readonly string[]) => cells.map((cell, column) => cell.padEnd(widths[column] ?? 0)).join('  ').trimEnd();
  return [line(header), line(widths.map((width) => '-'.repeat(width))), ...rows.map(line)].join('\n');
}

export function describeShape(shape: TableShape): string {
  const key = (k: { partitionKey: string; sortKey?: string }) => (k.sortKey === undefined ? k.partitionKey : `${k.partitionKey}, ${k.sortKey}`);
  const indexes = shape.indexes.map((index) => {
    const projects = index.projects === 'all' ? 'ALL' : index.projects.length === 0 ? 'KEYS_ONLY' : `INCLUDE ${index.projects.join(', ')}`;
    return `${index.name} (${key(index)}; ${projects})`;
  });
  return `${shape.name}: key (${key(shape)}); indexes: ${indexes.length === 0 ? 'none' : indexes.join('; ')}`;
}

/** Index units with their puts, deletes and updates: `byState 3 (2 put, 1 delete)`. */
export function describeIndexWrites(usage: DynamoDbUsage, per = 1): string {
  const parts = Object.entries(usage.indexWriteUnits).map(([index, units]) => {
    const counts = usage.indexWriteCounts[index] ?? { put: 0, delete: 0, update: 0 };
    const ops = (['put', 'delete', 'update'] as const)
      .filter((kind) => counts[kind] > 0)
      .map((kind) => `${fixed(counts[kind] / per)} ${kind}`);
    return `${index} ${fixed(units / per)} (${ops.join(', ')})`;
  });
  return parts.length === 0 ? '0' : parts.join('; ');
}

/** Up to 2 decimals, without trailing zeros. */
export function fixed(n: number, digits = 2): string {
  return String(Number(n.toFixed(digits)));
}

export function dollars(n: number): string {
  return `$${n.toFixed(3)}`;
}

export function percent(share: number): string {
  return `${(share * 100).toFixed(2)}%`;
}

export interface Target {
  readonly name: string;
  readonly goal: string;
  readonly measured: string;
  readonly met: boolean;
  /** A missed target that fails the script (exit 1). */
  readonly failsRun?: boolean;
}

export function formatTargets(targets: readonly Target[]): string {
  return formatTable(
    ['target', 'goal', 'measured', 'result'],
    targets.map((t) => [t.name, t.goal, t.measured, t.met ? 'MET' : t.failsRun ? 'MISSED (fails the run)' : 'MISSED']),
  );
}
