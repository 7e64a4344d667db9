import type { Route } from '../route';

export const PORTAL_LINK_ROUTES: readonly Route[] = [];
