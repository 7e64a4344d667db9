/**
 * Every route of the management API (docs/contract.md §16), by resource. The router and the
 * OpenAPI document both read this one list.
 */
import { openApiDocument } from '../openapi';
import type { Route } from '../route';
import { DELIVERY_ROUTES } from './deliveries';
import { ENDPOINT_ROUTES } from './endpoints';
import { EVENT_ROUTES } from './events';
import { PORTAL_LINK_ROUTES } from './portal-links';
import { REPLAY_ROUTES } from './replays';
import { STATS_ROUTES } from './stats';

const RESOURCE_ROUTES: readonly Route[] = [...ENDPOINT_ROUTES, ...EVENT_ROUTES, ...DELIVERY_ROUTES, ...REPLAY_ROUTES, ...STATS_ROUTES, ...PORTAL_LINK_ROUTES];

const documentRoute: Route = {
  method: 'GET',
  path: '/v1/openapi.json',
  operationId: 'getOpenApiDocument',
  summary: 'This API described as OpenAPI 3.1',
  tag: 'meta',
  responses: { 200: { description: 'The OpenAPI 3.1 document', schema: { type: 'object', required: ['openapi', 'paths'] } } },
  handle: async () => ({ status: 200, body: DOCUMENT }),
};

export const ROUTES: readonly Route[] = [...RESOURCE_ROUTES, documentRoute];
const DOCUMENT = openApiDocument(ROUTES);

export function apiDocument(): unknown {
  return DOCUMENT;
}
