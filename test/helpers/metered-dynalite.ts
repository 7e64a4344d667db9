/**
 * dynalite with the cost meter in front of it (scripts/cost/meter.ts), for the tests of what
 * `npm run cost` measures: `direct` reaches dynalite unmetered (seeding, reading images), `metered`
 * goes through the meter, as the code measured does.
 */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { startMeter, type Meter } from '../../scripts/cost/meter';
import { emulatorDynamoDbClient, startDynalite } from './dynalite';

export interface MeteredDynalite {
  readonly direct: DynamoDBClient;
  readonly metered: DynamoDBClient;
  readonly meter: Meter;
  close(): Promise<void>;
}

export async function startMeteredDynalite(): Promise<MeteredDynalite> {
  const dynalite = await startDynalite();
  const direct = emulatorDynamoDbClient(dynalite.endpoint);
  const meter = await startMeter(dynalite.endpoint, direct);
  const metered = emulatorDynamoDbClient(meter.endpoint);
  return {
    direct,
    metered,
    meter,
    async close() {
      metered.destroy();
      await meter.close();
      direct.destroy();
      await dynalite.close();
    },
  };
}
