import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ENDPOINT_FIELDS } from '../../lib/endpoints/fields';

/** The backticked names in the first column of §11's field table in docs/contract.md. */
function contractFieldNames(): string[] {
  const contract = readFileSync(new URL('../../docs/contract.md', import.meta.url), 'utf8');
  const section = contract.slice(contract.indexOf('## 11. Endpoints and fan-out'), contract.indexOf('## 12.'));
  const rows = section.split('\n').filter((line) => line.startsWith('| `'));
  return rows.flatMap((row) => [...(row.split('|')[1] ?? '').matchAll(/`([^`]+)`/g)].map((match) => match[1] ?? ''));
}

describe('the contract names every endpoint field', () => {
  it("§11's table has a row for each field of lib/endpoints/fields.ts, and no other", () => {
    const names = contractFieldNames();

    expect(new Set(names).size).toBe(names.length);
    expect([...names].sort()).toStrictEqual(Object.keys(ENDPOINT_FIELDS).sort());
  });
});
