/**
 * Deliveries by shipment and the dead ones (docs/contract.md §16), as `handoff status --shipment`
 * and `handoff dead` read them: the same ledger reads, each delivery the same object
 * (cli/commands/record-view.ts `recordJson`), a page at a time as `{items, next}`.
 */
import { deadPage, ownerEndpoints, type DeadFilter } from '../../cli/commands/dead';
import { recordJson } from '../../cli/commands/record-view';
import { ENDPOINT_NAME } from '../../lib/endpoints/endpoint';
import { OWNER } from '../../lib/endpoints/field-schemas';
import { isShipmentId } from '../../lib/event';
import { ShipmentIndexOffError } from '../../lib/ledger/errors';
import type { DeliveryRecord, ShipmentPage, ShipmentPageOptions } from '../../lib/ledger/ledger';
import { encodeShipmentCursor } from '../../lib/ledger/shipment-index';
import { requireOwner } from '../portal-link';
import { ApiProblem, invalid } from '../problem';
import type { QueryParameter, Route, RouteCall } from '../route';
import { DEAD_REASONS, DELIVERY_SCHEMA, pageSchema } from './delivery-schemas';
import { portalFilter } from './portal-scope';
import { CURSOR_PARAMETER, ISO_TIME_SCHEMA, LIMIT_PARAMETER, QueryReader } from './read-query';

/**
 * Rows of a shipment one portal page reads at most, its owner's or not: at most a few seconds of
 * the ledger's reads. Past it the page answers what it found, with `next` where it stopped.
 */
export const PORTAL_SHIPMENT_ROWS_PER_REQUEST = 1_000;
/** The largest ledger page a portal page reads at once. */
const PORTAL_READ_ROWS = 100;

const SHIPMENT_QUERY: readonly QueryParameter[] = [CURSOR_PARAMETER, LIMIT_PARAMETER];

const shipmentDeliveries: Route = {
  method: 'GET',
  path: '/v1/shipments/{shipmentId}/deliveries',
  operationId: 'listShipmentDeliveries',
  summary: "Every delivery of a shipment's events, newest admission first",
  description:
    "As `handoff status --shipment ID --json`, from the ledger's shipment index. A deployment that turned the index off (shipmentIndex: false) answers 409 `shipment-index-off`: the request is sound, the deployment's setting refuses it. " +
    "A portal link's holder gets its owner's endpoints' deliveries only: its page reads on past other owners' deliveries until it holds `limit` of its owner's or the shipment ends, " +
    `so it is short only at the end, and empty with \`next\` only where more than ${PORTAL_SHIPMENT_ROWS_PER_REQUEST} deliveries to other owners' endpoints come before its owner's next (a request reads at most that many).`,
  tag: 'deliveries',
  query: SHIPMENT_QUERY,
  portal: 'owner',
  responses: { 200: { description: "A page of the shipment's deliveries", schema: pageSchema(DELIVERY_SCHEMA, "A page of the shipment's deliveries, newest admission first") } },
  problems: [409],
  handle: async (call) => {
    const { request, params, deps } = call;
    const query = new QueryReader(request.query, SHIPMENT_QUERY);
    const limit = query.limit();
    const cursor = query.text('cursor');
    const shipmentId = params.shipmentId!;
    if (!isShipmentId(shipmentId)) query.pathProblem('shipmentId', 'must be 1–128 printable characters, not only spaces');
    query.done();
    let page: ShipmentPage;
    try {
      const read = (options: ShipmentPageOptions) => deps.context.ledger().deliveriesOfShipment(shipmentId, options);
      page = call.portalOwner === undefined ? await read({ limit, ...(cursor === undefined ? {} : { cursor }) }) : await ownersPage(call, shipmentId, read, limit, cursor);
    } catch (error) {
      if (error instanceof ShipmentIndexOffError) {
        throw new ApiProblem(409, error.code, 'this deployment keeps no shipment index (shipmentIndex: false): deliveries are found by event ID only', [], { cause: error });
      }
      if (error instanceof RangeError && cursor !== undefined) throw invalid([{ path: 'query.cursor', message: 'is not a cursor this listing gave for this shipment: start again without it' }]);
      throw error;
    }
    return { status: 200, body: { items: page.items.map(recordJson), next: page.next ?? null } };
  },
};

/**
 * A page of a shipment's deliveries for a portal link's holder: only its owner's endpoints', read
 * on past other owners' until it holds `limit` or the shipment ends, so neither a short page nor
 * `next` tells the holder that other owners' deliveries exist (within the rows a request reads).
 * The first read is `limit + 1` rows (one more than the page: whether the owner has more, when
 * every delivery is the owner's); each further read twice the one before, up to 100.
 *
 * `next` is the cursor right after the page's last item when another of the owner's was read
 * beyond it, else where the reads ended: every row between was another owner's. The cursor after a
 * delivery is the one the ledger itself answers after it (lib/ledger/shipment-index.ts), its
 * position in the shipment's index being its admission time and key.
 */
async function ownersPage(
  call: Pick<RouteCall, 'deps' | 'portalOwner'>,
  shipmentId: string,
  read: (options: ShipmentPageOptions) => Promise<ShipmentPage>,
  limit: number,
  cursor: string | undefined,
): Promise<ShipmentPage> {
  const scope = portalFilter(call);
  const items: DeliveryRecord[] = [];
  let rowsRead = 0;
  let size = Math.min(PORTAL_READ_ROWS, limit + 1);
  let at = cursor;
  for (;;) {
    size = Math.min(size, PORTAL_SHIPMENT_ROWS_PER_REQUEST - rowsRead);
    const page = await read({ limit: size, ...(at === undefined ? {} : { cursor: at }) });
    rowsRead += size;
    for (const item of await scope.filter(page.items)) {
      if (items.length === limit) return { items, next: encodeShipmentCursor(shipmentId, items.at(-1)!) };
      items.push(item);
    }
    if (page.next === undefined) return { items };
    if (rowsRead >= PORTAL_SHIPMENT_ROWS_PER_REQUEST) return { items, next: page.next };
    at = page.next;
    size = Math.min(PORTAL_READ_ROWS, size * 2);
  }
}

const DEAD_QUERY: readonly QueryParameter[] = [
  { name: 'endpoint', description: "Only this endpoint's", schema: { type: 'string', pattern: ENDPOINT_NAME.source } },
  { name: 'owner', description: "Only the deliveries of this owner's endpoints", schema: { type: 'string', pattern: OWNER.source } },
  { name: 'since', description: 'Only those that died at or after this time', schema: ISO_TIME_SCHEMA },
  { name: 'until', description: 'Only those that died before this time', schema: ISO_TIME_SCHEMA },
  { name: 'reason', description: 'Only those that died for this reason', schema: { enum: [...DEAD_REASONS] } },
  CURSOR_PARAMETER,
  LIMIT_PARAMETER,
];

const deadDeliveries: Route = {
  method: 'GET',
  path: '/v1/dead',
  operationId: 'listDeadDeliveries',
  summary: 'Dead deliveries, oldest death first',
  description:
    "As `handoff dead --json`, with filters. An endpoint and a window of death times are read from the ledger's listing; a reason and an owner are checked on the rows, so a page may hold fewer than `limit` (even none) and still have `next`: following `next` to the end yields every match once. " +
    "A portal link's holder sees its owner's only (`owner` is then that owner, or 403).",
  tag: 'deliveries',
  query: DEAD_QUERY,
  portal: 'owner',
  problems: [403],
  responses: { 200: { description: 'A page of dead deliveries', schema: pageSchema(DELIVERY_SCHEMA, 'A page of dead deliveries, oldest death first') } },
  handle: async (call) => {
    const { request, deps } = call;
    const query = new QueryReader(request.query, DEAD_QUERY);
    const endpoint = query.text('endpoint', { pattern: ENDPOINT_NAME, message: 'must be an endpoint name: 1–64 of a-z 0-9 -' });
    // A portal link's holder: its owner's dead deliveries, whether it names the owner or not.
    const owner = query.text('owner', { pattern: OWNER, message: 'must be 1–128 characters of A-Z a-z 0-9 . _ : @ + = -' }) ?? call.portalOwner;
    const sinceMs = query.time('since');
    const untilMs = query.time('until');
    const deadReason = query.choice('reason', DEAD_REASONS);
    const cursor = query.text('cursor');
    const limit = query.limit();
    if (sinceMs !== undefined && untilMs !== undefined && untilMs <= sinceMs) query.refuse('until', 'must come after since');
    query.done();
    requireOwner(call, owner);

    const filter: DeadFilter = {
      ...(endpoint === undefined ? {} : { endpoint }),
      ...(owner === undefined ? {} : { endpoints: await ownerEndpoints(deps.context, owner) }),
      ...(sinceMs === undefined ? {} : { sinceMs }),
      ...(untilMs === undefined ? {} : { untilMs }),
      ...(deadReason === undefined ? {} : { deadReason }),
    };
    try {
      const page = await deadPage(deps.context.ledger(), filter, { limit, cursor });
      return { status: 200, body: { items: page.records.map(recordJson), next: page.cursor ?? null } };
    } catch (error) {
      if (error instanceof RangeError && cursor !== undefined) throw invalid([{ path: 'query.cursor', message: 'is not a cursor the dead listing gave: start again without it' }]);
      throw error;
    }
  },
};

export const DELIVERY_ROUTES: readonly Route[] = [shipmentDeliveries, deadDeliveries];
