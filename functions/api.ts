/**
 * The management API's Lambda (docs/contract.md §16), behind API Gateway's HTTP API
 * (infra/delivery/api.ts): the one router every route shares (api/router.ts), run on API Gateway's
 * event as the sandbox runs it on its own. Thin by design, like functions/consumer.ts: wired once
 * per container, then one request per invocation.
 *
 * - The deployment: the Target the environment names (functions/api-target.ts), the resources the
 *   command reaches through `--stack`, and a CommandContext over it, so each route runs the command's
 *   own use case. Clients are built on first use; the seal key is read from Secrets Manager when a
 *   route first seals a message (never from an environment variable).
 * - `Idempotency-Key` answers in the ledger table (api/dynamodb-idempotency.ts).
 * - Portal links signed with a key derived from the seal key (api/portal-link.ts).
 * - The caller: the principal API Gateway's authorizer proved (IAM, or a JWT's subject), read from
 *   the event by the router; never from the request's body.
 * - Logs: one JSON line per request, IDs only (api/router.ts).
 * - The console (docs/contract.md §17) at /console/: its files from `console/` beside this bundle
 *   (the package build and the construct's bundling write them there), sign-in from
 *   `HANDOFF_CONSOLE_SIGN_IN` (none on the portal console's host), portal links pointing at
 *   `HANDOFF_PORTAL_CONSOLE_URL` when set. A bundle without the files still serves /v1, and says at
 *   /console/ what is missing (logged once).
 *
 * A missing or bad variable fails the cold start naming it (ConfigError), before any request.
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { CommandContext, DISCARDED_OUTPUT } from '../cli/context';
import { DynamoDbIdempotencyStore } from '../api/dynamodb-idempotency';
import { portalKeySource } from '../api/portal-link';
import { createApiHandler } from '../api/router';
import { ROUTES } from '../api/routes/index';
import { createLogger, SERVICE_NAME } from '../lib/observability';
import { consoleConfigFromEnvironment, consoleSite, portalConsoleUrlFromEnvironment, readConsoleFiles, withConsole } from '../console/site';
import { targetFromEnvironment } from './api-target';

const target = targetFromEnvironment(process.env);
const context = new CommandContext(target, DISCARDED_OUTPUT, Date.now);
const idempotency = new DynamoDbIdempotencyStore({
  client: DynamoDBDocumentClient.from(new DynamoDBClient({}), { marshallOptions: { removeUndefinedValues: true } }),
  tableName: target.ledgerTable!,
});
const logger = createLogger({ service: SERVICE_NAME, fields: { function: 'api' } });

// Portal links are signed with a key derived from the seal key (api/portal-link.ts), read from
// Secrets Manager at the first link and kept for the container; they point at the portal's console
// when the construct names one, else at the request's own /console/.
const portalConsoleUrl = portalConsoleUrlFromEnvironment(process.env);
const portal = { key: portalKeySource(target.sealKey!), ...(portalConsoleUrl !== undefined ? { consoleBase: portalConsoleUrl } : {}) };

// The console's files, read once for the container. On the portal API's host the page is told of
// no sign-in: that API takes portal tokens only.
const consoleDir = new URL('./console/', import.meta.url);
const consoleFiles = readConsoleFiles(consoleDir);
if (consoleFiles === undefined) logger.warn('console files missing: /console/ answers 404', { dir: consoleDir.pathname });
const site = consoleSite(consoleFiles, consoleConfigFromEnvironment(process.env), {
  missing: "The console's files are not in this function's bundle (console/ beside its code), so it cannot be served here. The API at /v1 works without them.",
  ...(portalConsoleUrl !== undefined ? { portalConsoleUrl } : {}),
});

export const handler = withConsole(createApiHandler(ROUTES, { context, idempotency, now: Date.now, logger, portal }), site);
