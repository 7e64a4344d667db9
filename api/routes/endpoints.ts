import type { Route } from '../route';

export const ENDPOINT_ROUTES: readonly Route[] = [];
