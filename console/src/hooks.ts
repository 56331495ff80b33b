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
