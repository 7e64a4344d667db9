/**
 * Reading a list the API answers a page at a time (`{items, next}`): the one loop every page uses,
 * bounded by the requests it may make. Nothing here touches the DOM.
 */

/** Every list the API answers. */
export interface Page<T> {
  readonly items: readonly T[];
  readonly next: string | null;
}

export interface PagesRead<T> {
  readonly items: T[];
  /** Where reading stopped: the cursor of the page after the last read, null at the list's end. */
  readonly next: string | null;
}

export interface PageLimits<T> {
  /** The cursor to start from (null or absent: the list's start). */
  readonly from?: string | null;
  /** Requests made at most. */
  readonly maxRequests: number;
  /** No further request once this many items are read. */
  readonly maxItems?: number;
  /** No further request once the items read are enough (say, "any at all" when pages may come back empty). */
  readonly enough?: (items: readonly T[]) => boolean;
}

/** Reads pages from `from` on, following `next` until the list ends or a limit is reached. */
export async function readPages<T>(readPage: (cursor: string | null) => Promise<Page<T>>, limits: PageLimits<T>): Promise<PagesRead<T>> {
  const items: T[] = [];
  let cursor = limits.from ?? null;
  let requests = 0;
  do {
    const page = await readPage(cursor);
    items.push(...page.items);
    cursor = page.next;
    requests += 1;
  } while (
    cursor !== null &&
    requests < limits.maxRequests &&
    items.length < (limits.maxItems ?? Number.POSITIVE_INFINITY) &&
    limits.enough?.(items) !== true
  );
  return { items, next: cursor };
}
