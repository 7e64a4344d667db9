import type { Route } from '../route';

export const EVENT_ROUTES: readonly Route[] = [];
