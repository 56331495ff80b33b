// Retry delays of a failing replication task: exponential, capped, with "equal jitter"
// (half the delay fixed, half random) so a fleet of tasks that failed together does not
// retry together, while a retry never comes sooner than half the nominal delay. Pure.

import type { Rand } from '../../core/rand.js';

export const BACKOFF = { baseMs: 1_000, capMs: 60_000 } as const;

/** The nominal (un-jittered) delay before retry number `attempt` (1 = first retry). */
export function nominalDelayMs(attempt: number, baseMs: number = BACKOFF.baseMs, capMs: number = BACKOFF.capMs): number {
  const exponent = Math.min(Math.max(attempt, 1) - 1, 30);
  return Math.min(capMs, baseMs * 2 ** exponent);
}

export function backoffDelayMs(attempt: number, rand: Rand, baseMs: number = BACKOFF.baseMs, capMs: number = BACKOFF.capMs): number {
  const nominal = nominalDelayMs(attempt, baseMs, capMs);
  const half = Math.floor(nominal / 2);
  return nominal - half + rand.int(half + 1);
}
