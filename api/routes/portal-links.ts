/**
 * POST /v1/portal-links (docs/contract.md §16): a link to the console scoped to one owner's
 * endpoints, valid at most 24 h (api/portal-link.ts says how it is signed and what it reaches). The
 * link and its token are credentials shown once: an `Idempotency-Key` repeat gets `urlShown` and
 * `tokenShown` in their place, and they are kept nowhere. Nothing is written: a link is valid by its
 * signature alone, so it cannot be revoked before it expires except by rotating the seal key.
 */
import { OWNER } from '../../lib/endpoints/field-schemas';
import type { JsonSchema } from '../../lib/endpoints/json-schema';
import { ApiProblem, invalid, type FieldProblem } from '../problem';
import {
  mintPortalToken,
  PORTAL_LINK_DEFAULT_TTL_SECONDS,
  PORTAL_LINK_MAX_TTL_SECONDS,
  portalUrl,
} from '../portal-link';
import type { ApiRequest } from '../http';
import type { Route, RouteCall } from '../route';

const OWNER_MESSAGE = 'must be 1–128 characters of A-Z a-z 0-9 . _ : @ + = -';

const REQUEST_SCHEMA: JsonSchema = {
  type: 'object',
  required: ['owner'],
  properties: {
    owner: { type: 'string', pattern: OWNER.source, description: 'Whose endpoints the link reaches (an endpoint\'s `owner`).' },
    ttlSeconds: {
      type: 'integer',
      minimum: 1,
      maximum: PORTAL_LINK_MAX_TTL_SECONDS,
      default: PORTAL_LINK_DEFAULT_TTL_SECONDS,
      description: 'How long the link is valid, in seconds.',
    },
  },
  additionalProperties: false,
};

const SHOWN_ONCE = ['url', 'token'] as const;

const LINK_SCHEMA: JsonSchema = {
  type: 'object',
  required: ['owner', 'expiresAt'],
  properties: {
    owner: { type: 'string' },
    expiresAt: { type: 'string', format: 'date-time' },
    url: { type: 'string', format: 'uri', description: 'The console link, `<console>#portal=<token>`: shown only in this answer.' },
    token: { type: 'string', description: 'The signed token the link carries: shown only in this answer.' },
    urlShown: { const: true, description: 'In place of `url` in an Idempotency-Key repeat.' },
    tokenShown: { const: true, description: 'In place of `token` in an Idempotency-Key repeat.' },
  },
  oneOf: [{ required: ['url', 'token'] }, { required: ['urlShown', 'tokenShown'] }],
  additionalProperties: false,
};

export const PORTAL_LINK_ROUTES: readonly Route[] = [
  {
    method: 'POST',
    path: '/v1/portal-links',
    operationId: 'createPortalLink',
    summary: "A console link scoped to one owner's endpoints",
    description:
      `Signs a token for one owner, valid \`ttlSeconds\` (default ${PORTAL_LINK_DEFAULT_TTL_SECONDS}, at most ${PORTAL_LINK_MAX_TTL_SECONDS}), ` +
      "and answers the console link that carries it. Whoever holds the link may call only the operations open to portal links, and only for that owner's endpoints. " +
      'The link and the token appear in this answer only.',
    tag: 'portal-links',
    body: { schema: REQUEST_SCHEMA, required: true },
    responses: { 201: { description: 'The link, its token and when it expires', schema: LINK_SCHEMA } },
    problems: [503],
    shownOnce: SHOWN_ONCE,
    handle: createPortalLink,
  },
];

async function createPortalLink(call: RouteCall) {
  const { owner, ttlSeconds } = parseLinkRequest(call.body);
  const portal = call.deps.portal;
  if (portal === undefined) throw new ApiProblem(503, 'portal-links-unavailable', 'this deployment signs no portal links (no seal key was given to the API)');
  const nowMs = call.deps.now();
  const { token, expiresAtMs } = mintPortalToken(owner, await portal.key(), nowMs, ttlSeconds);
  const consoleBase = portal.consoleBase ?? `${originOf(call.request)}/console/`;
  return { status: 201, body: { owner, expiresAt: new Date(expiresAtMs).toISOString(), url: portalUrl(consoleBase, token), token } };
}

/** @throws ApiProblem 400 naming each bad field */
function parseLinkRequest(body: unknown): { owner: string; ttlSeconds: number } {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw invalid([{ path: 'body', message: 'must be a JSON object' }]);
  const fields = body as Record<string, unknown>;
  const problems: FieldProblem[] = [];
  for (const key of Object.keys(fields)) {
    if (key !== 'owner' && key !== 'ttlSeconds') problems.push({ path: key, message: 'is not a field of a portal link request' });
  }
  const { owner, ttlSeconds = PORTAL_LINK_DEFAULT_TTL_SECONDS } = fields;
  if (typeof owner !== 'string' || !OWNER.test(owner)) problems.push({ path: 'owner', message: OWNER_MESSAGE });
  if (typeof ttlSeconds !== 'number' || !Number.isInteger(ttlSeconds) || ttlSeconds < 1 || ttlSeconds > PORTAL_LINK_MAX_TTL_SECONDS) {
    problems.push({ path: 'ttlSeconds', message: `must be a whole number of seconds from 1 to ${PORTAL_LINK_MAX_TTL_SECONDS}` });
  }
  if (problems.length > 0) throw invalid(problems);
  return { owner: owner as string, ttlSeconds: ttlSeconds as number };
}

/**
 * The origin the request came to: API Gateway's domain (its `Host`), the scheme it was called with.
 * Used only when the deployment names no console URL; it only shapes the link answered to this caller.
 */
function originOf(request: ApiRequest): string {
  const host = request.headers.host ?? 'localhost';
  const loopback = /^(?:127\.0\.0\.1|localhost|\[::1\])(?::\d+)?$/.test(host);
  const proto = request.headers['x-forwarded-proto'] ?? (loopback ? 'http' : 'https');
  return `${proto === 'http' ? 'http' : 'https'}://${host}`;
}
