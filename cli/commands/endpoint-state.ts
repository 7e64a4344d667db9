/**
 * `handoff endpoint disable` and `enable` (docs/contract.md §12): who, why and when are kept with
 * the endpoint (the name typed and, in AWS, the caller's identity). Disabling parks its deliveries;
 * enabling begins their release (`--rate`), which the recovery runs carry out (lib/resume.ts).
 */
import { userInfo } from 'node:os';
import type { EndpointRecord } from '../../lib/endpoints/endpoint';
import { DEFAULT_RESUME_RATE, rampRate, type Resume } from '../../lib/resume';
import { quoted } from '../../lib/terminal';
import type { CommandContext } from '../context';
import { checkAuditText, UsageError } from '../errors';
import { callerIdentity } from '../target';
import { checkName, parkedAfterWrite, parkedCount, registryCall } from './endpoint-common';
import { endpointJson, releaseJson } from './endpoint-view';
import type { CommandResult } from './result';

export interface StateOptions {
  readonly reason?: string;
  readonly operator?: string;
  /** `enable --rate`: the most parked deliveries released per second, as given (checked by `parseResumeRate`). */
  readonly rate?: string;
}

export const ENABLE_REASON = 'enabled by an operator';
/** The most `enable --rate` allows: releases per second. */
export const MAX_RESUME_RATE = 1000;

export async function endpointSetStateCommand(
  ctx: CommandContext,
  name: string,
  state: EndpointRecord['state'],
  options: StateOptions,
): Promise<CommandResult> {
  checkName(name);
  if (state !== 'enabled' && options.rate !== undefined) throw new UsageError('--rate is for endpoint enable: how fast its parked deliveries are released');
  const rate = state === 'enabled' ? parseResumeRate(options.rate ?? String(DEFAULT_RESUME_RATE)) : undefined;
  const reason = (options.reason ?? (state === 'enabled' ? ENABLE_REASON : '')).trim();
  const operator = (options.operator ?? localUser()).trim();
  if (!reason) throw new UsageError(`endpoint ${state === 'enabled' ? 'enable' : 'disable'} needs a reason: --reason "why"`);
  checkAuditText(operator, reason);
  const caller = await callerIdentity(ctx.target);
  const by = caller === undefined ? operator : `${operator} (${caller})`;
  const nowMs = ctx.now();
  const { record, parked } = await setEndpointState(ctx, name, state, { by, reason, ...(rate !== undefined ? { rate } : {}) }, nowMs);
  const done = `endpoint ${name} ${state} by ${by}: ${reason}`;
  const count = parked === null ? 'its parked deliveries (not counted: no ledger table in the target)' : plural(parked, 'parked delivery', 'parked deliveries');
  if (rate === undefined) {
    return {
      json: endpointJson(record, nowMs, parked),
      human: [
        done,
        `its deliveries are parked from now on (once the consumers' copies of the registry have it, 15 s at most in AWS): neither attempted nor dead; endpoint enable ${name} releases them`,
        ...(parked === null || parked === 0 ? [] : [`${count} already`]),
      ].join('\n'),
    };
  }
  // The release the registry began with this write (lib/resume.ts): the ramp counts from its time.
  const release: Resume = { since: nowMs, rate };
  const how =
    parked === 0
      ? `no parked deliveries now; any a consumer still parks before it sees ${name} enabled are released`
      : `${count}: released oldest admission first, at ${rampRate(release, nowMs)}/s at first, doubling every minute up to ${rate}/s, by the recovery runs (the sandbox: its recovery timer; AWS: the scheduled recovery function)`;
  return {
    json: { ...endpointJson(record, nowMs, parked), release: releaseJson(release, nowMs) },
    human: [done, how, `follow it: handoff endpoint show ${name}`].join('\n'),
  };
}

/**
 * Disables or enables an endpoint (`endpoint disable|enable`, `POST /v1/endpoints/{name}/disable|enable`),
 * recording who (`by`: the name typed and the caller AWS says, or the API's authenticated caller),
 * why and when. Enabling (`rate` given) begins the release of its parked deliveries at up to `rate`
 * per second and counts them first, since a recovery run may begin releasing them as soon as the
 * write is made; disabling counts them after.
 * @throws CommandFailedError (endpoint-not-found)
 */
export async function setEndpointState(
  ctx: CommandContext,
  name: string,
  state: EndpointRecord['state'],
  change: { readonly by: string; readonly reason: string; readonly rate?: number },
  nowMs: number,
): Promise<{ record: EndpointRecord; parked: number | null }> {
  const { rate } = change;
  const stateChange = { by: change.by, reason: change.reason, at: nowMs };
  const parkedBefore = rate === undefined ? undefined : await parkedCount(ctx, name);
  const record = await registryCall(ctx, (registry) =>
    rate === undefined ? registry.setState(name, state, stateChange) : registry.setState(name, state, stateChange, rate),
  );
  return { record, parked: parkedBefore ?? (await parkedAfterWrite(ctx, name)) };
}

/**
 * `enable --rate`: the most releases per second, a whole number from 1 to MAX_RESUME_RATE.
 * @throws UsageError naming --rate and what it takes
 */
export function parseResumeRate(text: string): number {
  const trimmed = text.trim();
  const value = /^\d{1,7}$/.test(trimmed) ? Number(trimmed) : NaN;
  if (!(value >= 1 && value <= MAX_RESUME_RATE)) {
    throw new UsageError(`--rate ${quoted(text.slice(0, 40))}: give the most parked deliveries released per second, a whole number from 1 to ${MAX_RESUME_RATE}`);
  }
  return value;
}

function plural(n: number, one: string, many: string): string {
  return `${n} ${n === 1 ? one : many}`;
}

function localUser(): string {
  try {
    return userInfo().username;
  } catch {
    return 'unknown';
  }
}
