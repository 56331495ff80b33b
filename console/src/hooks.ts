import { useEffect, useState } from 'preact/hooks';
import { describeError } from './api.js';

export type Load<T> = { state: 'loading' } | { state: 'error'; message: string } | { state: 'ready'; value: T };

/** Loads `fetcher` now and every `intervalMs` (if given) while mounted; `deps` reload it. */
export function usePoll<T>(fetcher: () => Promise<T>, deps: unknown[], intervalMs?: number): [Load<T>, () => void] {
  const [load, setLoad] = useState<Load<T>>({ state: 'loading' });
  const [tick, setTick] = useState(0);
  useEffect(() => {
    let live = true;
    const run = () =>
      fetcher().then(
        (value) => live && setLoad({ state: 'ready', value }),
        (err: unknown) => live && setLoad({ state: 'error', message: describeError(err) }),
      );
    void run();
    const timer = intervalMs === undefined ? undefined : setInterval(run, intervalMs);
    return () => {
      live = false;
      if (timer !== undefined) clearInterval(timer);
    };
  }, [...deps, tick]);
  return [load, () => setTick((t) => t + 1)];
}

/** An action a user starts: `busy` while it runs, its failure as `error`; `then` runs after success. */
export function useAction(): { busy: boolean; error: string | null; clearError: () => void; run: (call: () => Promise<unknown>, then: () => void) => Promise<void> } {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const run = async (call: () => Promise<unknown>, then: () => void) => {
    setError(null);
    setBusy(true);
    try {
      await call();
      then();
    } catch (err) {
      setError(describeError(err));
    } finally {
      setBusy(false);
    }
  };
  return { busy, error, clearError: () => setError(null), run };
}
