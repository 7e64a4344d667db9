/**
 * What the sandbox runs with besides the user's settings: its resources' names, how long its
 * workers keep their copy of the registry, and the deployment rules its endpoints are checked by.
 */
import { RESOURCE_ENV, type Settings } from '../lib/config';
import { ConfigError } from '../lib/errors';
import type { DeploymentSettings } from '../lib/endpoints/endpoint';
import { SANDBOX_GUARD_OPTIONS } from '../lib/webhook/endpoint-guard';

export const SANDBOX_NAMES = {
  queue: 'handoff-deliveries',
  deadLetterQueue: 'handoff-dead-letters',
  redriveQueue: 'handoff-redrive',
  orderedQueue: 'handoff-ordered.fifo',
  orderedDeadLetterQueue: 'handoff-ordered-dead-letters.fifo',
  ledgerTable: 'handoff-ledger',
  endpointsTable: 'handoff-endpoints',
} as const;

/**
 * The management API's port on 127.0.0.1 (sandbox/api-server.ts). Unset or 0: any free port, which
 * READY's `apiUrl` names; the stack has no such setting (API Gateway gives the API its URL).
 */
export const API_PORT_ENV = 'HANDOFF_API_PORT';

/**
 * How long the sandbox's workers keep their copy of the registry: an `endpoint` command's change
 * reaches the next deliveries within a second (AWS: ENDPOINTS_CACHE_MS).
 */
export const SANDBOX_ENDPOINTS_CACHE_MS = 1000;

/**
 * How long the workers keep their copy of the registry: `endpointsCacheMs`, else the sandbox's own
 * `HANDOFF_ENDPOINTS_CACHE_MS` (0: every batch reads it, so a pause or a disabling one worker
 * writes holds every other worker's next batch; tests of endpoint health use it), else
 * SANDBOX_ENDPOINTS_CACHE_MS. @throws ConfigError naming the variable
 */
export function sandboxEndpointsCacheMs(options: { readonly endpointsCacheMs?: number }, env: NodeJS.ProcessEnv = process.env): number {
  if (options.endpointsCacheMs !== undefined) return options.endpointsCacheMs;
  const raw = env[RESOURCE_ENV.endpointsCacheMs];
  if (raw === undefined || raw === '') return SANDBOX_ENDPOINTS_CACHE_MS;
  if (!/^\d{1,6}$/.test(raw) || Number(raw) > 300_000) {
    throw new ConfigError(RESOURCE_ENV.endpointsCacheMs, `must be whole milliseconds up to 300000, got "${raw.slice(0, 40)}"`);
  }
  return Number(raw);
}

/**
 * The deployment's settings as the sandbox runs them: its receivers are local, so the consumer may
 * reach loopback over plain http. Every endpoint is checked against these, here and by `handoff endpoint`.
 */
export function sandboxDeployment(settings: Settings): DeploymentSettings & Pick<Settings, 'allowPrivateCidrs' | 'allowHttp'> {
  return {
    retryPolicy: settings.retryPolicy,
    attemptTimeoutMs: settings.attemptTimeoutMs,
    retentionDays: settings.retentionDays,
    allowPrivateCidrs: [...new Set([...settings.allowPrivateCidrs, ...(SANDBOX_GUARD_OPTIONS.allowPrivateCidrs ?? [])])],
    allowHttp: true,
  };
}
