// Randomness is injected: pure code takes a Rand, the shell passes `mathRand`, tests pass a
// seeded one so a failure replays exactly.

export interface Rand {
  /** A uniform integer in [0, maxExclusive). */
  int(maxExclusive: number): number;
}

/** The real thing, for the shell (node.ts) only. */
export const mathRand: Rand = { int: (maxExclusive) => Math.floor(Math.random() * maxExclusive) };
