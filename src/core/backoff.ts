// One retry backoff: exponential from `baseMs`, doubling per attempt, capped at `capMs`.
// `jitteredDelayMs` adds "equal jitter" (half the delay fixed, half random) so a fleet that
// failed together does not retry together, while a retry never comes sooner than half the
// nominal delay. Pure: randomness comes in as a Rand.
import type { Rand } from './rand.js';

export interface Backoff {
  readonly baseMs: number;
  readonly capMs: number;
}

/** Doubling stops here: 2^30 times any sane base is past every cap. */
const EXPONENT_MAX = 30;

/** The un-jittered delay before retry number `attempt` (1 = first retry). */
export function nominalDelayMs(attempt: number, backoff: Backoff): number {
  const exponent = Math.min(Math.max(attempt, 1) - 1, EXPONENT_MAX);
  return Math.min(backoff.capMs, backoff.baseMs * 2 ** exponent);
}

/** A delay in [nominal - floor(nominal/2), nominal], uniformly drawn from `rand`. */
export function jitteredDelayMs(attempt: number, backoff: Backoff, rand: Rand): number {
  const nominal = nominalDelayMs(attempt, backoff);
  const half = Math.floor(nominal / 2);
  return nominal - half + rand.int(half + 1);
}
