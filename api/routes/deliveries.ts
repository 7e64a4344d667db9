import type { Route } from '../route';

export const DELIVERY_ROUTES: readonly Route[] = [];
