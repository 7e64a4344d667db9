/**
 * The deployment settings an endpoint is resolved against in the unit tests: the defaults'
 * retries, attempt timeout and retention, https only and no private CIDRs allowed.
 */
import { DEFAULT_SETTINGS } from '../../lib/config';
import type { DeploymentSettings } from '../../lib/endpoints/endpoint';

export const DEFAULT_DEPLOYMENT: DeploymentSettings = {
  retryPolicy: DEFAULT_SETTINGS.retryPolicy,
  attemptTimeoutMs: DEFAULT_SETTINGS.attemptTimeoutMs,
  retentionDays: DEFAULT_SETTINGS.retentionDays,
  allowPrivateCidrs: [],
  allowHttp: false,
};
