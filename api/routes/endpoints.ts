/**
 * The endpoint routes of the management API (docs/contract.md §16): list, create, read, change,
 * remove, disable, enable, rotate the secret, send a test event. Each runs the use case the
 * `handoff endpoint` command runs (cli/commands/endpoint-*.ts) with the deployment's clients, and
 * answers its `--json` (`endpointJson`): the command and the API check and print an endpoint alike.
 *
 * What a route takes is checked here, every bad field named (`errors: [{path, message}]`); an
 * endpoint's fields by the command's own checks (`checkFields`: each field's shape, then the rules
 * against the deployment's settings, the endpoint guard among them), which name every problem.
 *
 * A signing secret is in two answers only: the one that created the endpoint and the one that
 * rotated its secret; `Idempotency-Key` repeats get `secretShown: true` instead (api/idempotency.ts).
 * An ed25519 secret's public key is in every answer (`publicKey`), a secret header never (`{"secret": true}`).
 * Who disables or enables an endpoint is the authenticated caller, never a name in the body.
 */
import { endpointListCommand, endpointShowCommand } from '../../cli/commands/endpoint-read';
import { EndpointFieldsUsageError, ListOptionError, requireEndpoint } from '../../cli/commands/endpoint-common';
import { sendTestEvent } from '../../cli/commands/endpoint-test';
import { rotateEndpointSecret } from '../../cli/commands/endpoint-secret';
import { ENABLE_REASON, MAX_RESUME_RATE, setEndpointState } from '../../cli/commands/endpoint-state';
import { endpointJson, releaseJson } from '../../cli/commands/endpoint-view';
import { addEndpoint, endpointRemoveCommand, schemeOf, updateEndpoint } from '../../cli/commands/endpoint-write';
import { ENDPOINT_NAME, ENDPOINT_STATES, type EndpointState } from '../../lib/endpoints/endpoint';
import { OWNER, SIGNATURE_SCHEMES } from '../../lib/endpoints/field-schemas';
import { CLEARABLE_FIELDS } from '../../lib/endpoints/fields';
import { generateSecret } from '../../lib/endpoints/secret';
import { isSecretValue, type SignatureScheme } from '../../lib/webhook/signing-secret';
import { TEST_EVENT_TYPE } from '../../lib/event';
import { auditTextProblem } from '../../lib/replay';
import { DEFAULT_RESUME_RATE } from '../../lib/resume';
import { outOfScope, requireOwner } from '../portal-link';
import { operatorOf } from './replays';
import { ApiProblem, invalid, type FieldProblem } from '../problem';
import type { QueryParameter, Route, RouteCall } from '../route';
import {
  CREATE_BODY_SCHEMA,
  CREATED_SCHEMA,
  DEFAULT_OVERLAP_SECONDS,
  DISABLE_BODY_SCHEMA,
  ENABLE_BODY_SCHEMA,
  ENABLED_SCHEMA,
  ENDPOINT_DETAIL_SCHEMA,
  ENDPOINT_PAGE_SCHEMA,
  LIST_LIMITS,
  MAX_OVERLAP_SECONDS,
  ROTATE_BODY_SCHEMA,
  ROTATED_SCHEMA,
  STATE_SCHEMA,
  TEST_SENT_SCHEMA,
  UPDATE_BODY_SCHEMA,
  UPDATED_SCHEMA,
  unshared,
} from './endpoint-schemas';

const TAG = 'endpoints';

const LIST_QUERY: readonly QueryParameter[] = [
  { name: 'owner', description: "that owner's endpoints only, in name order", schema: { type: 'string', pattern: OWNER.source } },
  { name: 'state', description: 'enabled or disabled endpoints only', schema: { type: 'string', enum: [...ENDPOINT_STATES] } },
  { name: 'cursor', description: 'the page after the one whose `next` it is (give the same owner and state)', schema: { type: 'string', minLength: 1 } },
  {
    name: 'limit',
    description: `endpoints per page, ${LIST_LIMITS.min}–${LIST_LIMITS.max} (default ${LIST_LIMITS.default})`,
    schema: { type: 'integer', minimum: LIST_LIMITS.min, maximum: LIST_LIMITS.max, default: LIST_LIMITS.default },
  },
];

const listEndpoints: Route = {
  method: 'GET',
  path: '/v1/endpoints',
  operationId: 'listEndpoints',
  summary: 'The endpoints, a page at a time: state, health and parked count, never a secret',
  tag: TAG,
  query: LIST_QUERY,
  responses: { 200: { description: 'A page of endpoints; `next` is null on the last', schema: ENDPOINT_PAGE_SCHEMA } },
  problems: [403],
  portal: 'owner',
  handle: async (call) => {
    const { request, deps } = call;
    const query = listQuery(request.query);
    // A portal link's holder lists its owner's endpoints alone, whatever owner it names.
    if (call.portalOwner !== undefined) {
      requireOwner(call, query.owner ?? call.portalOwner);
      query.owner = call.portalOwner;
    }
    try {
      const result = await endpointListCommand(deps.context, query);
      return { status: 200, body: result.json };
    } catch (error) {
      if (error instanceof ListOptionError) throw invalid([{ path: `query.${error.option}`, message: LIST_OPTION_PROBLEMS[error.option] }]);
      throw error;
    }
  },
};

const LIST_OPTION_PROBLEMS: Record<ListOptionError['option'], string> = {
  cursor: 'is not a cursor this listing issued with these owner and state filters: start again without it',
  owner: 'must be 1–128 characters of A-Z a-z 0-9 . _ : @ + = -',
};

const createEndpoint: Route = {
  method: 'POST',
  path: '/v1/endpoints',
  operationId: 'createEndpoint',
  summary: 'Add an endpoint, enabled; its signing secret is in this answer only',
  description:
    "The fields of docs/contract.md §11 and §18 (and owner), checked as the consumer will use them against the deployment's settings. Without a secret one is generated, of the signature's scheme (ed25519: a key pair, its public key in `publicKey`). The answer holds the signing secret, the only time it is shown.",
  tag: TAG,
  body: { schema: CREATE_BODY_SCHEMA, required: true },
  responses: { 201: { description: 'Added, enabled: the endpoint and its signing secret (shown once)', schema: CREATED_SCHEMA } },
  problems: [409],
  handle: async ({ body, deps }) => {
    const raw = { ...objectBody(body) };
    if (raw.secret === undefined) raw.secret = generateSecret(schemeOf(raw.signature));
    const ctx = deps.context;
    const nowMs = ctx.now();
    const { record, parked } = await naming(() => addEndpoint(ctx, raw, nowMs));
    // The plain secret it signs with, generated or given; one kept in Secrets Manager is not the registry's to show.
    const secret = typeof raw.secret === 'string' && isSecretValue(raw.secret) ? raw.secret : undefined;
    return { status: 201, body: { ...endpointJson(record, nowMs, parked), ...(secret !== undefined ? { secret } : {}) } };
  },
};

const readEndpoint: Route = {
  method: 'GET',
  path: '/v1/endpoints/{name}',
  operationId: 'getEndpoint',
  summary: 'One endpoint: its fields, state, health, parked deliveries and release, the settings in effect',
  tag: TAG,
  responses: { 200: { description: 'The endpoint, as `handoff endpoint show --json`', schema: ENDPOINT_DETAIL_SCHEMA } },
  problems: [403, 404],
  portal: 'owner',
  handle: async (call) => {
    const { params, deps } = call;
    await inScope(call, nameOf(params));
    const result = await endpointShowCommand(deps.context, nameOf(params));
    return { status: 200, body: result.json };
  },
};

const updateEndpointRoute: Route = {
  method: 'PATCH',
  path: '/v1/endpoints/{name}',
  operationId: 'updateEndpoint',
  summary: "Change an endpoint's fields; those not given are kept, null unsets an optional one",
  description:
    'As `handoff endpoint update`: the result is checked as a new endpoint is; its state and secret change by their own operations (a secret given here replaces the current one at once). An endpoint is not renamed.',
  tag: TAG,
  body: { schema: UPDATE_BODY_SCHEMA, required: true },
  responses: { 200: { description: 'The endpoint as changed, and the fields that changed (none: nothing written)', schema: UPDATED_SCHEMA } },
  problems: [403, 404, 409],
  portal: 'owner',
  handle: async (call) => {
    const { params, body, deps } = call;
    const name = nameOf(params);
    const given = objectBody(body);
    await inScope(call, name);
    // A portal link changes an endpoint's URL alone: of its fields, the console's portal mode edits only that.
    if (call.portalOwner !== undefined && Object.keys(given).some((field) => field !== 'url' && !(field === 'name' && given.name === name))) throw outOfScope();
    const changes: Record<string, unknown> = {};
    const clear: string[] = [];
    const problems: FieldProblem[] = [];
    for (const [field, value] of Object.entries(given)) {
      if (field === 'name') {
        if (value !== name) problems.push({ path: 'name', message: `differs from the endpoint changed (${name}): an endpoint cannot be renamed; add one and remove the other` });
      } else if (value === null) {
        if ((CLEARABLE_FIELDS as readonly string[]).includes(field)) clear.push(field);
        else problems.push({ path: field, message: `cannot be unset (optional fields: ${CLEARABLE_FIELDS.join(', ')})` });
      } else {
        changes[field] = value;
      }
    }
    if (problems.length > 0) throw invalid(problems);
    if (Object.keys(changes).length === 0 && clear.length === 0) throw invalid([{ path: 'body', message: 'names no field to change' }]);
    const ctx = deps.context;
    const nowMs = ctx.now();
    const { record, changed, parked } = await naming(() => updateEndpoint(ctx, name, changes, clear, nowMs));
    return { status: 200, body: { ...endpointJson(record, nowMs, parked), changed } };
  },
};

const removeEndpoint: Route = {
  method: 'DELETE',
  path: '/v1/endpoints/{name}',
  operationId: 'deleteEndpoint',
  summary: 'Remove an endpoint: new events are no longer routed to it; its ledger rows are kept until they expire',
  tag: TAG,
  responses: { 204: { description: 'Removed' } },
  problems: [404],
  handle: async ({ params, deps }) => {
    await endpointRemoveCommand(deps.context, nameOf(params));
    return { status: 204, body: undefined };
  },
};

const disableEndpoint: Route = {
  method: 'POST',
  path: '/v1/endpoints/{name}/disable',
  operationId: 'disableEndpoint',
  summary: 'Stop delivering to an endpoint: its deliveries are parked; the caller and the reason are kept with it',
  tag: TAG,
  body: { schema: DISABLE_BODY_SCHEMA, required: true },
  responses: { 200: { description: 'Disabled: the endpoint, its stateChange naming the caller', schema: STATE_SCHEMA } },
  problems: [404],
  handle: async (call) => {
    const name = nameOf(call.params);
    const given = objectBody(call.body);
    const problems = unknownFields(given, ['reason']);
    const reason = auditText(given.reason, problems, true);
    if (problems.length > 0) throw invalid(problems);
    return stateChanged(call, name, 'disabled', reason!);
  },
};

const enableEndpoint: Route = {
  method: 'POST',
  path: '/v1/endpoints/{name}/enable',
  operationId: 'enableEndpoint',
  summary: 'Deliver to a disabled endpoint again, releasing its parked deliveries at up to `rate` a second',
  tag: TAG,
  body: { schema: ENABLE_BODY_SCHEMA },
  responses: { 200: { description: 'Enabled: the endpoint and the release it began', schema: ENABLED_SCHEMA } },
  problems: [404],
  handle: async (call) => {
    const name = nameOf(call.params);
    const given = objectBody(call.body ?? {});
    const problems = unknownFields(given, ['reason', 'rate']);
    const reason = auditText(given.reason, problems, false) ?? ENABLE_REASON;
    const rate = wholeField(given, 'rate', 1, MAX_RESUME_RATE, problems) ?? DEFAULT_RESUME_RATE;
    if (problems.length > 0) throw invalid(problems);
    return stateChanged(call, name, 'enabled', reason, rate);
  },
};

const rotateSecret: Route = {
  method: 'POST',
  path: '/v1/endpoints/{name}/rotate-secret',
  operationId: 'rotateEndpointSecret',
  summary: "Replace an endpoint's signing secret; the new one is in this answer only",
  description:
    "The old secret keeps signing beside the new one for `overlapSeconds` (default 24 h; 0 switches at once): `previousSecretUntil` says until when. The new secret is of the endpoint's signature scheme, or of `signature`, which the endpoint signs with from then (an ed25519 key pair's public key in `publicKey`). An endpoint whose secret is kept in Secrets Manager is rotated there (409).",
  tag: TAG,
  body: { schema: ROTATE_BODY_SCHEMA },
  responses: { 200: { description: 'Rotated: the endpoint and its new signing secret (shown once)', schema: ROTATED_SCHEMA } },
  problems: [403, 404, 409],
  portal: 'owner',
  handle: async (call) => {
    const { params, body, deps } = call;
    const name = nameOf(params);
    const given = objectBody(body ?? {});
    await inScope(call, name);
    const problems = unknownFields(given, ['overlapSeconds', 'signature']);
    const overlapSeconds = wholeField(given, 'overlapSeconds', 0, MAX_OVERLAP_SECONDS, problems) ?? DEFAULT_OVERLAP_SECONDS;
    const signature = signatureField(given, problems);
    if (problems.length > 0) throw invalid(problems);
    const ctx = deps.context;
    const nowMs = ctx.now();
    const rotated = await naming(() => rotateEndpointSecret(ctx, name, { overlapMs: overlapSeconds * 1000, ...(signature !== undefined ? { signature } : {}) }, nowMs));
    return { status: 200, body: { ...endpointJson(rotated.record, nowMs, rotated.parked), secret: rotated.secret } };
  },
};

const testEndpoint: Route = {
  method: 'POST',
  path: '/v1/endpoints/{name}/test',
  operationId: 'testEndpoint',
  summary: `Send a signed ${TEST_EVENT_TYPE} event to this endpoint alone, through the normal pipeline`,
  description: `The event (status "test", data.type "${TEST_EVENT_TYPE}") goes on the delivery queue addressed to this endpoint alone, as handoff's own messages are (sealed): the consumer delivers it as any delivery, signed, retried, parked while the endpoint is disabled. GET /v1/events/{eventId} follows it.`,
  tag: TAG,
  responses: { 202: { description: 'On the queue: its event ID', schema: TEST_SENT_SCHEMA } },
  problems: [403, 404],
  portal: 'owner',
  handle: async (call) => {
    const name = nameOf(call.params);
    await inScope(call, name);
    const { eventId } = await sendTestEvent(call.deps.context, name);
    return { status: 202, body: { eventId } };
  },
};

export const ENDPOINT_ROUTES: readonly Route[] = [
  listEndpoints,
  createEndpoint,
  readEndpoint,
  updateEndpointRoute,
  removeEndpoint,
  disableEndpoint,
  enableEndpoint,
  rotateSecret,
  testEndpoint,
].map(withUnsharedSchemas);

/** The route with each of its schemas a tree of its own (`unshared`), as the OpenAPI document shows them. */
function withUnsharedSchemas(route: Route): Route {
  return {
    ...route,
    ...(route.query !== undefined ? { query: route.query.map((q) => ({ ...q, schema: unshared(q.schema) })) } : {}),
    ...(route.body !== undefined ? { body: { ...route.body, schema: unshared(route.body.schema) } } : {}),
    responses: Object.fromEntries(Object.entries(route.responses).map(([status, r]) => [status, r.schema === undefined ? r : { ...r, schema: unshared(r.schema) }])),
  };
}

/** The endpoint the path names. A name no endpoint can have names none: 404. */
function nameOf(params: Readonly<Record<string, string>>): string {
  const name = params.name ?? '';
  if (!ENDPOINT_NAME.test(name)) throw new ApiProblem(404, 'endpoint-not-found', 'no endpoint has this name (1–64 characters of a-z 0-9 -)');
  return name;
}

/**
 * For a portal link's holder: the endpoint must be its owner's (403 otherwise; 404 when there is
 * none). Every other caller reaches every endpoint.
 */
async function inScope(call: RouteCall, name: string): Promise<void> {
  if (call.portalOwner === undefined) return;
  const record = await requireEndpoint(call.deps.context, name);
  requireOwner(call, record.fields.owner);
}

/** The body as an object of fields. @throws ApiProblem 400 */
function objectBody(body: unknown): Readonly<Record<string, unknown>> {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw invalid([{ path: 'body', message: 'must be a JSON object' }]);
  return body as Record<string, unknown>;
}

/** Runs an endpoint use case; fields it refuses are named each by its path. */
async function naming<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (error instanceof EndpointFieldsUsageError) throw invalid(error.problems.map((p) => ({ path: p.field, message: p.problem })));
    throw error;
  }
}

function unknownFields(given: Readonly<Record<string, unknown>>, known: readonly string[]): FieldProblem[] {
  return Object.keys(given)
    .filter((key) => !known.includes(key))
    .map((key) => ({ path: key.slice(0, 64), message: `is not a field of this request (fields: ${known.join(', ')})` }));
}

/** An audit text (`reason`) as the registry keeps it; undefined when not given and not required. */
function auditText(value: unknown, problems: FieldProblem[], required: boolean): string | undefined {
  if (value === undefined && !required) return undefined;
  if (typeof value !== 'string') {
    problems.push({ path: 'reason', message: 'is required: a text saying why' });
    return undefined;
  }
  const problem = auditTextProblem('reason', value);
  if (problem !== undefined) problems.push({ path: 'reason', message: problem });
  return value.trim();
}

function wholeField(given: Readonly<Record<string, unknown>>, field: string, min: number, max: number, problems: FieldProblem[]): number | undefined {
  const value = given[field];
  if (value === undefined) return undefined;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    problems.push({ path: field, message: `must be a whole number from ${min} to ${max}` });
    return undefined;
  }
  return value;
}

/** A rotation's `signature`, when given. */
function signatureField(given: Readonly<Record<string, unknown>>, problems: FieldProblem[]): SignatureScheme | undefined {
  const value = given.signature;
  if (value === undefined) return undefined;
  if (typeof value === 'string' && (SIGNATURE_SCHEMES as readonly string[]).includes(value)) return value as SignatureScheme;
  problems.push({ path: 'signature', message: `must be one of ${SIGNATURE_SCHEMES.join(', ')}` });
  return undefined;
}

/** Disables or enables, the caller as who (the audit's operator): never a name the body gives. */
async function stateChanged(call: RouteCall, name: string, state: EndpointState, reason: string, rate?: number) {
  const ctx = call.deps.context;
  const nowMs = ctx.now();
  const { record, parked } = await setEndpointState(ctx, name, state, { by: operatorOf(call.caller), reason, ...(rate !== undefined ? { rate } : {}) }, nowMs);
  const body = endpointJson(record, nowMs, parked);
  return { status: 200, body: rate === undefined ? body : { ...body, release: releaseJson({ since: nowMs, rate }, nowMs) } };
}

/** `GET /v1/endpoints`'s query, every bad parameter named. @throws ApiProblem 400 */
function listQuery(query: Readonly<Record<string, string | undefined>>): { limit: number; cursor?: string; owner?: string; state?: EndpointState } {
  const problems: FieldProblem[] = [];
  const known = LIST_QUERY.map((q) => q.name);
  for (const name of Object.keys(query)) {
    if (!known.includes(name)) problems.push({ path: `query.${name.slice(0, 64)}`, message: `is not a parameter of this listing (${known.join(', ')})` });
  }
  const { owner, state, cursor } = query;
  let limit: number = LIST_LIMITS.default;
  if (query.limit !== undefined) {
    limit = /^\d{1,3}$/.test(query.limit) ? Number(query.limit) : NaN;
    if (!(limit >= LIST_LIMITS.min && limit <= LIST_LIMITS.max)) problems.push({ path: 'query.limit', message: `must be a whole number from ${LIST_LIMITS.min} to ${LIST_LIMITS.max}` });
  }
  if (owner !== undefined && !OWNER.test(owner)) problems.push({ path: 'query.owner', message: LIST_OPTION_PROBLEMS.owner });
  if (state !== undefined && !(ENDPOINT_STATES as readonly string[]).includes(state)) problems.push({ path: 'query.state', message: `must be one of ${ENDPOINT_STATES.join(', ')}` });
  if (cursor === '') problems.push({ path: 'query.cursor', message: 'is empty: leave it out for the first page' });
  if (problems.length > 0) throw invalid(problems);
  return { limit, ...(cursor !== undefined ? { cursor } : {}), ...(owner !== undefined ? { owner } : {}), ...(state !== undefined ? { state: state as EndpointState } : {}) };
}
