/**
 * Loading what a page shows, and keeping it current: one load at a time, the next one scheduled
 * once the last has answered (never on a fixed beat, so a slow API is not sent more and more
 * requests), and an answer that arrives after a newer load started, or after the page closed, is
 * dropped.
 */
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { actionKeys } from './action-keys';
import { toError } from './errors';
import { readPages, type Page } from './paging';

/**
 * The loads a component starts, newest last: `begin()` starts one and answers whether it is still
 * the newest (no later load began, the component is still shown) when its answer comes.
 */
function useLoads(): { begin: () => () => boolean; cancel: () => void } {
  const generation = useRef(0);
  useEffect(
    () => () => {
      generation.current += 1;
    },
    [],
  );
  return useRef({
    begin: () => {
      const mine = ++generation.current;
      return () => mine === generation.current;
    },
    cancel: () => {
      generation.current += 1;
    },
  }).current;
}

/**
 * Calls `run` in `ms`, or, when the tab is hidden then, once it is shown again: a hidden tab asks
 * nothing. Answers the function that cancels it.
 */
function later(ms: number, run: () => void): () => void {
  let waiting: (() => void) | undefined;
  const timer = setTimeout(() => {
    if (document.visibilityState === 'visible') return run();
    waiting = () => {
      if (document.visibilityState !== 'visible') return;
      document.removeEventListener('visibilitychange', waiting!);
      waiting = undefined;
      run();
    };
    document.addEventListener('visibilitychange', waiting);
  }, ms);
  return () => {
    clearTimeout(timer);
    if (waiting !== undefined) document.removeEventListener('visibilitychange', waiting);
  };
}

/** setTimeout's longest delay is 2³¹−1 ms; a longer one fires at once. The page never waits more than an hour. */
const LONGEST_WAIT_MS = 3_600_000;

export interface Loaded<T> {
  readonly data: T | undefined;
  readonly error: Error | undefined;
  readonly loading: boolean;
  /** When the next load is due (epoch ms), if one is scheduled. */
  readonly nextAt: number | undefined;
  /** Loads again now (after an action changed what is shown), in place of any load in flight. */
  readonly reload: () => void;
}

/**
 * How long after a load answered the next one starts: a fixed number of ms, or one worked out from
 * what the last load answered (undefined: no further load until `reload`).
 */
export type Every<T> = number | ((data: T | undefined) => number | undefined);

/**
 * `load()` when the page opens and whenever `deps` change, then again `every` after each load has
 * answered, while the tab is visible. The last data stays shown while a refresh runs; a failed
 * refresh shows its error beside it.
 */
export function useLoad<T>(load: () => Promise<T>, deps: readonly unknown[], every?: Every<T>): Loaded<T> {
  const [data, setData] = useState<T | undefined>(undefined);
  const [error, setError] = useState<Error | undefined>(undefined);
  const [loading, setLoading] = useState(true);
  const [nextAt, setNextAt] = useState<number | undefined>(undefined);
  const loads = useLoads();
  const cancelNext = useRef<() => void>(() => {});
  const last = useRef<T | undefined>(undefined);
  const everyNow = useRef(every);
  everyNow.current = every;

  // eslint-disable-next-line react-hooks/exhaustive-deps
  const run = useCallback(() => {
    cancelNext.current();
    setNextAt(undefined);
    const current = loads.begin();
    setLoading(true);
    const settle = () => {
      const rule = everyNow.current;
      const wait = typeof rule === 'function' ? rule(last.current) : rule;
      if (wait === undefined) return;
      const ms = Math.min(Math.max(0, wait), LONGEST_WAIT_MS);
      setNextAt(Date.now() + ms);
      cancelNext.current = later(ms, run);
    };
    load().then(
      (value) => {
        if (!current()) return;
        last.current = value;
        setData(value);
        setError(undefined);
        setLoading(false);
        settle();
      },
      (failure: unknown) => {
        if (!current()) return;
        setError(toError(failure));
        setLoading(false);
        settle();
      },
    );
  }, deps);

  useEffect(() => {
    last.current = undefined;
    setData(undefined);
    run();
    return () => {
      loads.cancel();
      cancelNext.current();
    };
  }, [run]);
  return { data, error, loading, nextAt, reload: run };
}

/**
 * One figure per key (an endpoint's stats), each read again `everyMs` after its last read: the keys
 * due are read together, `fanOut` at a time, each answer shown as it comes; the next round starts
 * once this one is done and the next keys are due, so requests never pile up. A key that appears is
 * read in the next round; one that goes is forgotten. A failure is that key's figure (an Error).
 */
export function useEach<T>(keys: readonly string[], read: (key: string) => Promise<T>, everyMs: number, fanOut: number): {
  readonly byKey: ReadonlyMap<string, T | Error>;
  /** When the last round finished (epoch ms). */
  readonly readAt: number | undefined;
} {
  const [byKey, setByKey] = useState<ReadonlyMap<string, T | Error>>(new Map());
  const [readAt, setReadAt] = useState<number | undefined>(undefined);
  const state = useRef({
    keys: [] as readonly string[],
    /** When each key's figure was last asked for. */
    askedAt: new Map<string, number>(),
    values: new Map<string, T | Error>(),
    running: false,
    alive: true,
    cancelNext: () => {},
  }).current;
  const readNow = useRef(read);
  readNow.current = read;

  const runRound = useRef<() => void>(() => {});
  runRound.current = () => {
    if (state.running || !state.alive) return;
    state.cancelNext();
    const startedAt = Date.now();
    const due = state.keys.filter((key) => (state.askedAt.get(key) ?? Number.NEGATIVE_INFINITY) + everyMs <= startedAt);
    if (due.length === 0) return scheduleNext();
    state.running = true;
    for (const key of due) state.askedAt.set(key, startedAt);
    let next = 0;
    const worker = async (): Promise<void> => {
      while (next < due.length && state.alive) {
        const key = due[next++]!;
        const value = await readNow.current(key).catch(toError);
        if (!state.alive || !state.keys.includes(key)) continue;
        state.values.set(key, value);
        setByKey(new Map(state.values));
      }
    };
    void Promise.all(Array.from({ length: Math.min(fanOut, due.length) }, worker)).then(() => {
      state.running = false;
      if (!state.alive) return;
      setReadAt(Date.now());
      scheduleNext();
    });
  };
  const scheduleNext = () => {
    if (!state.alive || state.keys.length === 0) return;
    const now = Date.now();
    const dueAt = Math.min(
      ...state.keys.map((key) => {
        const asked = state.askedAt.get(key);
        return asked === undefined ? now : asked + everyMs;
      }),
    );
    // At least a second between rounds, so keys that appear one by one are read together.
    state.cancelNext = later(Math.min(Math.max(1000, dueAt - now), LONGEST_WAIT_MS), () => runRound.current());
  };

  const keysText = keys.join('\n');
  useEffect(() => {
    state.keys = keys;
    for (const key of [...state.values.keys()]) {
      if (!keys.includes(key)) {
        state.values.delete(key);
        state.askedAt.delete(key);
      }
    }
    setByKey(new Map(state.values));
    runRound.current();
    // A round in flight schedules the next when it ends; the new keys are due then.
  }, [keysText]); // eslint-disable-line react-hooks/exhaustive-deps
  useEffect(
    () => () => {
      state.alive = false;
      state.cancelNext();
    },
    [], // eslint-disable-line react-hooks/exhaustive-deps
  );
  return { byKey, readAt };
}

export interface Paged<T> {
  readonly items: readonly T[];
  /** The cursor "More" reads from; null at the list's end. */
  readonly next: string | null;
  /** Whether the first page has answered (since the list started again). */
  readonly loaded: boolean;
  readonly loading: boolean;
  readonly error: Error | undefined;
  /** Reads the next page, after the items shown. */
  readonly more: () => void;
  /** Reads the list from its start again. */
  readonly reload: () => void;
}

/**
 * A list read a page at a time: the first page when the page opens and whenever `deps` change,
 * then one more each `more()`. A page the API answers empty with `next` (a filter checked row by
 * row) is followed, up to `followEmpty` requests, so "More" is not a click that shows nothing. A
 * page that arrives after the list started again (the filters changed) is dropped; an item already
 * shown (by `keyOf`) is not shown twice.
 */
export function usePages<T>(
  readPage: (cursor: string | null) => Promise<Page<T>>,
  deps: readonly unknown[],
  options: { readonly keyOf: (item: T) => string; readonly followEmpty?: number },
): Paged<T> {
  const [items, setItems] = useState<readonly T[]>([]);
  const [next, setNext] = useState<string | null>(null);
  const [loaded, setLoaded] = useState(false);
  const [loading, setLoading] = useState(true);
  const [error, setError] = useState<Error | undefined>(undefined);
  const loads = useLoads();
  const readNow = useRef(readPage);
  readNow.current = readPage;

  const read = (cursor: string | null, before: readonly T[]) => {
    const current = loads.begin();
    setLoading(true);
    readPages((at) => readNow.current(at), { from: cursor, maxRequests: options.followEmpty ?? 1, enough: (found) => found.length > 0 }).then(
      (found) => {
        if (!current()) return;
        const seen = new Set(before.map(options.keyOf));
        setItems([...before, ...found.items.filter((item) => !seen.has(options.keyOf(item)))]);
        setNext(found.next);
        setError(undefined);
        setLoaded(true);
        setLoading(false);
      },
      (failure: unknown) => {
        if (!current()) return;
        setError(toError(failure));
        setLoading(false);
      },
    );
  };

  useEffect(() => {
    setItems([]);
    setNext(null);
    setLoaded(false);
    setError(undefined);
    read(null, []);
  }, deps); // eslint-disable-line react-hooks/exhaustive-deps

  return {
    items,
    next,
    loaded,
    loading,
    error,
    more: () => {
      if (next !== null && !loading) read(next, items);
    },
    reload: () => read(null, []),
  };
}

/**
 * A form's one request: busy while it runs, its failure kept to show (the API's problem, each
 * field's messages). On success the form is done and stays busy: its caller closes it or moves on.
 */
export function useSubmit(): {
  readonly busy: boolean;
  readonly error: Error | undefined;
  /** Runs `work` for a submitted form (the browser's own submission prevented). */
  readonly submit: (work: () => Promise<void>) => (event: Event) => Promise<void>;
} {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<Error | undefined>(undefined);
  const submit = (work: () => Promise<void>) => async (event: Event) => {
    event.preventDefault();
    setBusy(true);
    try {
      await work();
    } catch (failure) {
      setError(toError(failure));
      setBusy(false);
    }
  };
  return { busy, error, submit };
}

/** Idempotency-Keys for as long as the component is shown (one opening of a dialog or form): see `actionKeys`. */
export function useActionKeys(): (body: unknown) => string {
  return useState(actionKeys)[0];
}
