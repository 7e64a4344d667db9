import type { Route } from '../route';

export const STATS_ROUTES: readonly Route[] = [];
