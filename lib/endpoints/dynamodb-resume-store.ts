/**
 * The releases' writes on the registry's items (lib/resume.ts `ResumeStore`): each conditional on
 * the release begun at `since` still being the endpoint's, so a newer `enable`, or a `disable`, is
 * never undone. Beginning and ending one mark the item's change (registry-schema.ts `changedAt`): the
 * recovery function's copy learns of them by change (lib/recovery-endpoints.ts `registryEndpoints`); the
 * windows taken in between do not, and that copy reads its releases' items at each run.
 */
import { CHANGE_NAMES, changeValues, END_RESUME, NAMES, RESUME_NAMES, SET_CHANGE, type RegistryTable } from './dynamodb-registry-table';
import type { ResumeStore } from '../resume';
import { quoted } from '../terminal';

export class DynamoDbResumeStore implements ResumeStore {
  readonly #table: RegistryTable;

  constructor(table: RegistryTable) {
    this.#table = table;
  }

  async takeWindow(name: string, since: number, from: number | undefined, to: number): Promise<boolean> {
    return this.#writeResume(name, `take a release window of`, {
      UpdateExpression: 'SET #resumeUntil = :to',
      ConditionExpression: `#resumeSince = :since AND ${from === undefined ? 'attribute_not_exists(#resumeUntil)' : '#resumeUntil = :from'}`,
      ExpressionAttributeValues: { ':since': since, ':to': to, ...(from === undefined ? {} : { ':from': from }) },
    });
  }

  async finishResume(name: string, since: number): Promise<boolean> {
    return this.#writeResume(name, 'end the release of', {
      UpdateExpression: `SET ${SET_CHANGE} ${END_RESUME}`,
      ConditionExpression: '#resumeSince = :since',
      ExpressionAttributeValues: { ':since': since, ...changeValues(Date.now()) },
    });
  }

  async beginResume(name: string, since: number, rate: number): Promise<boolean> {
    return this.#writeResume(name, 'begin a release of', {
      UpdateExpression: `SET #resumeSince = :since, #resumeRate = :rate, ${SET_CHANGE}`,
      ConditionExpression: '#state = :enabled AND attribute_not_exists(#resumeSince)',
      ExpressionAttributeValues: { ':since': since, ':rate': rate, ':enabled': 'enabled', ...changeValues(since) },
    });
  }

  /** A conditional write of the release's attributes alone. False when its condition is refused. */
  async #writeResume(
    name: string,
    what: string,
    update: { UpdateExpression: string; ConditionExpression: string; ExpressionAttributeValues: Record<string, unknown> },
  ): Promise<boolean> {
    const text = `${update.UpdateExpression} ${update.ConditionExpression}`;
    const names = Object.fromEntries(Object.entries({ ...RESUME_NAMES, ...CHANGE_NAMES, '#state': NAMES['#state'] }).filter(([placeholder]) => text.includes(placeholder)));
    const result = await this.#table.write(name, `${what} endpoint ${quoted(name)}`, { update: { ...update, ExpressionAttributeNames: names } });
    return result.written;
  }
}
