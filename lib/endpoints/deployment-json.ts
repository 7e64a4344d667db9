/**
 * The deployment's endpoint defaults as JSON: what the sandbox's state file and the stack's
 * `EndpointDefaults` output carry, and the commands read back (lib/endpoints/endpoint.ts re-exports them).
 */
import { MAX_WAIT_SECONDS, retryPolicy } from '../policy';
import type { DeploymentSettings } from './endpoint';

/** The deployment's settings as the sandbox's state file and the stack's `EndpointDefaults` output carry them. */
export interface DeploymentSettingsJson {
  readonly retrySchedule: readonly number[];
  readonly maxAttempts: number;
  readonly attemptTimeoutMs: number;
  readonly retentionDays: number;
  readonly allowPrivateCidrs: readonly string[];
  readonly allowHttp: boolean;
}

export function deploymentToJson(settings: DeploymentSettings): DeploymentSettingsJson {
  return {
    retrySchedule: settings.retryPolicy.waitsSeconds,
    maxAttempts: settings.retryPolicy.maxAttempts,
    attemptTimeoutMs: settings.attemptTimeoutMs,
    retentionDays: settings.retentionDays,
    allowPrivateCidrs: settings.allowPrivateCidrs,
    allowHttp: settings.allowHttp,
  };
}

/** @throws RangeError naming `source` when the JSON is not what `deploymentToJson` writes */
export function deploymentFromJson(json: unknown, source: string): DeploymentSettings {
  const j = json as Partial<DeploymentSettingsJson> | null;
  const ok =
    typeof j === 'object' &&
    j !== null &&
    Array.isArray(j.retrySchedule) &&
    j.retrySchedule.every((w) => isWhole(w, 0, MAX_WAIT_SECONDS)) &&
    isWhole(j.maxAttempts, 1, 100) &&
    isWhole(j.attemptTimeoutMs, 100, 880_000) &&
    isWhole(j.retentionDays, 1, 3650) &&
    Array.isArray(j.allowPrivateCidrs) &&
    j.allowPrivateCidrs.every((c) => typeof c === 'string') &&
    typeof j.allowHttp === 'boolean';
  if (!ok) throw new RangeError(`${source} does not hold the deployment's endpoint defaults`);
  return {
    retryPolicy: retryPolicy(j.maxAttempts!, j.retrySchedule!),
    attemptTimeoutMs: j.attemptTimeoutMs!,
    retentionDays: j.retentionDays!,
    allowPrivateCidrs: j.allowPrivateCidrs!,
    allowHttp: j.allowHttp!,
  };
}

function isWhole(value: unknown, min: number, max: number): value is number {
  return typeof value === 'number' && Number.isInteger(value) && value >= min && value <= max;
}
