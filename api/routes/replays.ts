import type { Route } from '../route';

export const REPLAY_ROUTES: readonly Route[] = [];
