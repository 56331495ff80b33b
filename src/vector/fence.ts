// A vector shard's reshard fence, as a pure state over its log (no I/O, no clock).
//
// A reshard's switch puts a fence entry in each old shard: every write after it is refused,
// on every replica alike. A switch that cannot finish in time (a new shard group lost its
// majority, a link crawls) is rolled back: the metadata first takes the job back to
// catching_up, then a lift entry in each old shard ends the fence, and writes apply again.
//
// Fences and lifts name the switch attempt they belong to (a number that only grows across the
// cluster's reshards: cluster/reshard.ts), because a proposal can commit long after its
// proposer gave up on it:
//   - a lift ends only a fence of its attempt or an earlier one, never a later attempt's;
//   - a fence of an attempt that a lift already named is stale and fences nothing (else a
//     rolled-back attempt's late fence would leave the shard refusing writes with no switch
//     coming).
// The lifted intervals are kept: a reshard replays the old log later, and must skip exactly
// the entries the shard refused.
//
// Entries at or below `through` are already reflected (a replica re-applies entries after
// a restart, from its data's applied index): they change nothing.

/** What a fence entry answered: the index writes are refused after, or that it was stale. */
export type FenceOutcome = { readonly kind: 'fenced'; readonly at: number } | { readonly kind: 'fence_stale'; readonly attempt: number };
/** What a lift entry answered: whether a fence ended here. */
export type LiftOutcome = { readonly kind: 'unfenced'; readonly lifted: boolean };

export interface FenceState {
  /** The fence in force: writes after `index` are refused. */
  readonly current?: { readonly index: number; readonly attempt: number };
  /** Fences that were lifted: entries strictly between the two indexes were refused. */
  readonly lifted: readonly (readonly [number, number])[];
  /** The highest attempt a lift named (-1: none); a fence of that attempt or earlier is stale. */
  readonly liftedAttempt: number;
  /** The last fence or lift entry this state reflects. */
  readonly through: number;
}

export const NO_FENCE: FenceState = { lifted: [], liftedAttempt: -1, through: 0 };

/** Apply a fence entry of `attempt` at `index`. */
export function applyFence(s: FenceState, index: number, attempt: number): { state: FenceState; outcome: FenceOutcome } {
  const { current } = s;
  if (index <= s.through) return { state: s, outcome: current === undefined ? { kind: 'fence_stale', attempt } : { kind: 'fenced', at: current.index } };
  // A second fence answers the first's index.
  if (current !== undefined) return { state: { ...s, current: { ...current, attempt: Math.max(current.attempt, attempt) }, through: index }, outcome: { kind: 'fenced', at: current.index } };
  if (attempt <= s.liftedAttempt) return { state: { ...s, through: index }, outcome: { kind: 'fence_stale', attempt } };
  return { state: { ...s, current: { index, attempt }, through: index }, outcome: { kind: 'fenced', at: index } };
}

/** Apply a lift entry of `attempt` at `index`. */
export function applyLift(s: FenceState, index: number, attempt: number): { state: FenceState; outcome: LiftOutcome } {
  if (index <= s.through) return { state: s, outcome: { kind: 'unfenced', lifted: false } };
  const liftedAttempt = Math.max(s.liftedAttempt, attempt);
  if (s.current === undefined || s.current.attempt > attempt) return { state: { ...s, liftedAttempt, through: index }, outcome: { kind: 'unfenced', lifted: false } };
  const { current: _ended, ...rest } = s;
  return { state: { ...rest, lifted: [...s.lifted, [s.current.index, index] as const], liftedAttempt, through: index }, outcome: { kind: 'unfenced', lifted: true } };
}

/** The fence a write at `index` fell under (its index), or undefined when it applied. */
export function refusedBy(s: FenceState, index: number): number | undefined {
  if (s.current !== undefined && index > s.current.index) return s.current.index;
  for (const [at, until] of s.lifted) if (index > at && index < until) return at;
  return undefined;
}

/** The state as stored and in snapshots (plain CBOR-able values). */
export function fenceToWire(s: FenceState): Record<string, unknown> {
  return { c: s.current === undefined ? null : [s.current.index, s.current.attempt], l: s.lifted.map(([a, b]) => [a, b]), la: s.liftedAttempt, t: s.through };
}

const isIndex = (v: unknown): v is number => Number.isSafeInteger(v) && (v as number) >= 0;

/**
 * A stored or received state; a plain number is a fence from before lifts (attempt 0).
 * Undefined when it does not decode (input from another node).
 */
export function fenceFromWire(v: unknown): FenceState | undefined {
  if (isIndex(v)) return { current: { index: v, attempt: 0 }, lifted: [], liftedAttempt: -1, through: v };
  if (typeof v !== 'object' || v === null) return undefined;
  const w = v as { c?: unknown; l?: unknown; la?: unknown; t?: unknown };
  const pair = (p: unknown): p is [number, number] => Array.isArray(p) && p.length === 2 && isIndex(p[0]) && Number.isSafeInteger(p[1]);
  if (!(w.c === null || pair(w.c)) || !Array.isArray(w.l) || !w.l.every(pair) || !Number.isSafeInteger(w.la) || !isIndex(w.t)) return undefined;
  const current = w.c === null ? undefined : { index: (w.c as [number, number])[0], attempt: (w.c as [number, number])[1] };
  return { ...(current === undefined ? {} : { current }), lifted: (w.l as [number, number][]).map(([a, b]) => [a, b] as const), liftedAttempt: w.la as number, through: w.t };
}
