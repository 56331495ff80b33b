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
