/**
 * The portal API's Lambda authorizer (api/portal-authorizer.ts), in front of every /v1 route of the
 * API portal links open (infra/delivery/api.ts): a portal token as the bearer proves the caller
 * `portal:<owner>`, and nothing else passes.
 *
 * Tokens are checked with the key derived from the seal key (api/portal-link.ts), read from Secrets
 * Manager by its ARN at the first request and kept for the container, as the API's function keeps
 * the key it signs links with. Its role may read that one secret and write its log group, nothing
 * else. A missing variable fails the cold start naming it (ConfigError).
 */
import { createPortalAuthorizer } from '../api/portal-authorizer';
import { portalKeySource } from '../api/portal-link';
import { RESOURCE_ENV } from '../lib/config';
import { ConfigError } from '../lib/errors';
import { createLogger, SERVICE_NAME } from '../lib/observability';

const sealKeyArn = process.env[RESOURCE_ENV.sealKeyArn]?.trim();
if (!sealKeyArn) throw new ConfigError(RESOURCE_ENV.sealKeyArn, 'must be set');

export const handler = createPortalAuthorizer({
  key: portalKeySource({ secretArn: sealKeyArn }),
  now: Date.now,
  logger: createLogger({ service: SERVICE_NAME, fields: { function: 'portal-authorizer' } }),
});
