/**
 * The endpoint registry's table for the sandbox and the tests, from the same definition the CDK
 * construct deploys (`REGISTRY_TABLE_DEFINITION`), and the endpoints the sandbox puts in it at start.
 */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { EndpointFields, EndpointRecord } from '../lib/endpoints/endpoint';
import { type EndpointRegistry } from '../lib/endpoints/registry';
import { EndpointConflictError } from '../lib/errors';
import { REGISTRY_TABLE_DEFINITION } from '../lib/endpoints/registry-schema';
import { createTable } from './create-table';

/** Creates the table on demand (an existing one is kept) and waits until it is active. */
export async function createEndpointsTable(client: DynamoDBClient, tableName: string): Promise<void> {
  await createTable(client, tableName, REGISTRY_TABLE_DEFINITION);
}

/** Endpoints written at once while seeding: a 10,000-endpoint file is seeded in seconds, not one write after another. */
const SEED_CONCURRENCY = 16;

/**
 * Puts each endpoint into the registry, enabled: the sandbox's endpoints file, or the single-URL
 * settings' `default`. An endpoint already there (a table kept from an earlier start) gets the fields
 * given, keeping its state: the file is the sandbox's truth for fields, the operator's commands for
 * state. Returns the records as stored, in the order given.
 */
export async function seedEndpoints(
  registry: EndpointRegistry,
  fieldsList: readonly EndpointFields[],
  nowMs: number,
): Promise<EndpointRecord[]> {
  const seeded: EndpointRecord[] = new Array(fieldsList.length);
  let next = 0;
  const seedOne = async (fields: EndpointFields): Promise<EndpointRecord> => {
    try {
      return await registry.add(fields, nowMs);
    } catch (error) {
      if (!(error instanceof EndpointConflictError)) throw error;
      const current = await registry.get(fields.name);
      return current === undefined ? registry.add(fields, nowMs) : registry.update(fields, current.updatedAt, nowMs);
    }
  };
  const worker = async () => {
    while (next < fieldsList.length) {
      const index = next++;
      seeded[index] = await seedOne(fieldsList[index]!);
    }
  };
  await Promise.all(Array.from({ length: Math.min(SEED_CONCURRENCY, fieldsList.length) }, worker));
  return seeded;
}
