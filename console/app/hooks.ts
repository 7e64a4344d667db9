/** Loading what a page shows, and keeping it current. */
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';

export interface Loaded<T> {
  readonly data: T | undefined;
  readonly error: Error | undefined;
  readonly loading: boolean;
  /** Loads again now (after an action changed what is shown). */
  readonly reload: () => void;
}

/**
 * `load()` when the page opens and whenever `deps` change, then every `everyMs` if given, while the
 * tab is visible. The last data stays shown while a refresh runs; a failed refresh shows its error
 * beside it. An answer that arrives after a newer load started is dropped.
 */
export function useLoad<T>(load: () => Promise<T>, deps: readonly unknown[], everyMs?: number): Loaded<T> {
  const [data, setData] = useState<T | undefined>(undefined);
  const [error, setError] = useState<Error | undefined>(undefined);
  const [loading, setLoading] = useState(true);
  const generation = useRef(0);
  // eslint-disable-next-line react-hooks/exhaustive-deps
  const run = useCallback(() => {
    const mine = ++generation.current;
    setLoading(true);
    load().then(
      (value) => {
        if (mine !== generation.current) return;
        setData(value);
        setError(undefined);
        setLoading(false);
      },
      (failure: unknown) => {
        if (mine !== generation.current) return;
        setError(failure instanceof Error ? failure : new Error(String(failure)));
        setLoading(false);
      },
    );
  }, deps);
  useEffect(() => {
    setData(undefined);
    run();
    if (everyMs === undefined) return undefined;
    const timer = setInterval(() => {
      if (document.visibilityState === 'visible') run();
    }, everyMs);
    return () => clearInterval(timer);
  }, [run, everyMs]);
  return { data, error, loading, reload: run };
}
