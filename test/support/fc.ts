// fast-check parameters from the environment, so any failure replays exactly:
// FC_SEED=<seed> FC_PATH=<path> npm test; FC_NUM_RUNS scales every property.
import type fc from 'fast-check';

export function fcParams<T>(defaultRuns = 200): fc.Parameters<T> {
  const seed = process.env.FC_SEED === undefined ? undefined : Number(process.env.FC_SEED);
  const runs = process.env.FC_NUM_RUNS === undefined ? defaultRuns : Number(process.env.FC_NUM_RUNS);
  return {
    ...(seed === undefined ? {} : { seed }),
    ...(process.env.FC_PATH === undefined ? {} : { path: process.env.FC_PATH }),
    numRuns: runs,
  };
}

/**
 * For a fuzzer whose runs share state (a node that every request changes): a failing request
 * depends on the ones before it, so fast-check's shrinking, which replays one alone, would show
 * the wrong thing. The property collects failures and never fails; the seed is chosen here and
 * said (`comment`), so FC_SEED=<seed> replays the same sequence.
 */
export function fcSequenceParams<T>(defaultRuns: number, comment: (text: string) => void): fc.Parameters<T> {
  const params = fcParams<T>(defaultRuns);
  const seed = params.seed ?? Math.floor(Math.random() * 0x7fffffff);
  comment(`fuzz seed ${seed} (replay: FC_SEED=${seed}), ${params.numRuns} runs`);
  return { ...params, seed };
}

/** How often a fuzzer got each HTTP status, said at the end ("200 x97, 400 x305"): how deep its requests reached. */
export class StatusTally {
  readonly #counts = new Map<number, number>();

  add(status: number): void {
    this.#counts.set(status, (this.#counts.get(status) ?? 0) + 1);
  }

  toString(): string {
    return `statuses: ${[...this.#counts].sort(([a], [b]) => a - b).map(([k, v]) => `${k} x${v}`).join(', ')}`;
  }
}
