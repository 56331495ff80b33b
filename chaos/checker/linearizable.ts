// Linearizability checker for registers, one register per key. Pure: a history in, a verdict
// out; no clock, no randomness, and a bound on the work.
//
// Each key is checked alone: linearizability is compositional (Herlihy & Wing's locality,
// P-compositionality in Porcupine), so a history is linearizable iff each key's is.
//
// The search is Wing & Gong's, with Lowe's cache (as in Knossos' `wgl` and Porcupine's
// checker.go): the calls and returns of a key's operations, sorted by time, form a doubly
// linked list. Walking it from the head, any call met before the first return is a candidate
// for the next linearization point: if the model accepts it and the pair (set of ops
// linearized, register value) is new, the op is *lifted* out of the list (its call and its
// return) and pushed on a stack, and the walk restarts at the head. Meeting a return means the
// op it ends had to be linearized by now and nothing fitted: pop the last op, *unlift* it,
// and try the call after it. The history is linearizable when every return has been lifted;
// it is not when the stack is empty and the walk meets a return. The cache makes the search
// visit each (set, value) pair at most once; the step budget bounds it in any case.
//
// Register model: a read of v requires the value to be v; a write sets it; cas(e, v) sets v
// iff the value is e: a cas acknowledged with result true requires e, one acknowledged with
// result false requires not e and changes nothing.
//
// Outcomes: a `fail` op did not happen and is dropped; an `unknown` read constrains nothing
// and is dropped; an `unknown` write or cas may take effect at any instant after its
// invocation, or never: it has a call and no return (completion at +infinity), so the search
// may linearize it or leave it out. An unknown cas that is linearized takes effect iff the
// value is its `expected` (with result false it changes nothing, which is also what leaving it
// out does; an op never needs to be placed anywhere to "not happen").
import type { RegisterOp, RegisterValue } from './history.js';

export type Verdict = 'ok' | 'not-linearizable' | 'unknown';

/** Plenty for thousands of operations per key; the search stops there with verdict `unknown`. */
export const DEFAULT_STEP_BUDGET = 2_000_000;

/**
 * The cache holds a copy of the linearized set per entry (one bit per op): past this many
 * 32-bit words in all (64 MiB of bits; about twice that as strings) the key's verdict is
 * `unknown` too, whatever the steps left. The step budget alone would let a key of thousands
 * of ops cache gigabytes.
 */
export const CACHE_WORDS_MAX = 16 * 1024 * 1024;

export interface LinearizableOptions {
  /** Steps of the search per key (one step: one list entry examined). */
  readonly stepBudget: number;
  /** Bound on the cache per key, in 32-bit words; default CACHE_WORDS_MAX. */
  readonly cacheWordsMax?: number;
  /** The value of every register before any operation; default null. */
  readonly initial?: RegisterValue;
}

export interface KeyResult {
  readonly key: string;
  readonly verdict: Verdict;
  /** Operations the search had to consider (after dropping failed ops and unknown reads). */
  readonly ops: number;
  readonly steps: number;
  /** ok: a linearization (definite ops and the unknown ones placed). */
  readonly linearization?: readonly RegisterOp[];
  /**
   * not-linearizable: the longest prefix the search could linearize, the value after it, and
   * the op whose completion it could not get past (nothing left fitted before it ended).
   */
  readonly partial?: readonly RegisterOp[];
  readonly valueAfterPartial?: RegisterValue;
  readonly blockedBy?: RegisterOp;
}

export interface LinearizableResult {
  /** Every key linearizable. */
  readonly ok: boolean;
  /** not-linearizable if any key is; else unknown if any key ran out of budget; else ok. */
  readonly verdict: Verdict;
  readonly keys: number;
  readonly ops: number;
  /** Keys that are not linearizable, then keys whose search ran out of budget. */
  readonly failures: readonly KeyResult[];
}

export function checkLinearizable(history: readonly RegisterOp[], options: LinearizableOptions): LinearizableResult {
  if (!(options.stepBudget >= 1)) throw new Error(`checkLinearizable: stepBudget must be at least 1, got ${options.stepBudget}`);
  const byKey = new Map<string, RegisterOp[]>();
  for (const op of history) {
    let ops = byKey.get(op.key);
    if (ops === undefined) byKey.set(op.key, (ops = []));
    ops.push(op);
  }
  const results = [...byKey].map(([key, ops]) => checkRegister(key, ops, options));
  const bad = results.filter((r) => r.verdict === 'not-linearizable');
  const unknown = results.filter((r) => r.verdict === 'unknown');
  const verdict: Verdict = bad.length > 0 ? 'not-linearizable' : unknown.length > 0 ? 'unknown' : 'ok';
  return { ok: verdict === 'ok', verdict, keys: byKey.size, ops: history.length, failures: [...bad, ...unknown] };
}

/**
 * The ops the search must consider: failed ops did not happen; unknown reads say nothing; and
 * an unknown write or cas whose value no op read or expected is left out, as if it never took
 * effect. That keeps the verdict: in a linearization that places such an op, no op reads or
 * expects its value before the next write, so nothing but unknown ops that changed nothing
 * (also left out) sits between them, and without it the value before it simply lasts until
 * that write. A cas that answered false would break this (it requires the value NOT to be
 * its `expected`, which the older value may be), so a key with one keeps every unknown op.
 * Each unknown op kept doubles what the search may try (in it or out of it): a run of faults
 * leaves dozens per key, nearly all of them never read.
 */
export function relevantOps(ops: readonly RegisterOp[]): RegisterOp[] {
  const happened = ops.filter((op) => op.outcome !== 'fail' && !(op.kind === 'read' && op.outcome === 'unknown'));
  if (happened.some((op) => op.kind === 'cas' && op.outcome === 'ok' && op.result === false)) return happened;
  const observed = new Set<RegisterValue>();
  for (const op of happened) {
    if (op.kind === 'read') observed.add(op.value!);
    if (op.kind === 'cas') observed.add(op.expected);
  }
  return happened.filter((op) => op.outcome !== 'unknown' || op.kind === 'read' || observed.has(op.value));
}

/** The value after `op`, or undefined when the model forbids `op` from `value`. */
export function stepRegister(value: RegisterValue, op: RegisterOp): RegisterValue | undefined {
  switch (op.kind) {
    case 'read':
      if (op.value === undefined) throw new Error(`checkLinearizable: an ok read of ${op.key} without a value`);
      return value === op.value ? value : undefined;
    case 'write':
      return op.value;
    case 'cas':
      if (op.outcome === 'unknown') return value === op.expected ? op.value : value;
      if (op.result === undefined) throw new Error(`checkLinearizable: an ok cas of ${op.key} without a result`);
      if (op.result) return value === op.expected ? op.value : undefined;
      return value !== op.expected ? value : undefined;
  }
}

interface Entry {
  /** Index into the key's ops; -1 for the head. */
  readonly id: number;
  /** A call's return (undefined for a return, and for the call of an unknown op). */
  readonly match: Entry | undefined;
  readonly isCall: boolean;
  prev: Entry | undefined;
  next: Entry | undefined;
}

/** One key's history (every op of `all` is taken to be of this key). */
export function checkRegister(key: string, all: readonly RegisterOp[], options: LinearizableOptions): KeyResult {
  const ops = relevantOps(all);
  const n = ops.length;
  const head = buildList(ops);
  let returnsLeft = ops.filter((op) => op.outcome === 'ok').length;

  const linearized = new Uint32Array(Math.ceil(n / 32));
  // The cache of (linearized set, value) pairs, each as a compact string: the value, then the
  // set's words as pairs of UTF-16 code units.
  const cache = new Set<string>();
  let cacheWords = 0;
  const cacheWordsMax = options.cacheWordsMax ?? CACHE_WORDS_MAX;
  const stack: { entry: Entry; value: RegisterValue }[] = [];
  let value: RegisterValue = options.initial ?? null;
  let best: { ids: number[]; value: RegisterValue; blockedBy: number } | undefined;
  let steps = 0;
  let entry = head.next;

  while (returnsLeft > 0) {
    if (steps >= options.stepBudget || cacheWords > cacheWordsMax) return { key, verdict: 'unknown', ops: n, steps };
    steps++;
    // A return is left, and the walk meets it before running off the end.
    if (entry === undefined) throw new Error('checkLinearizable: walked past the last return');
    if (entry.isCall) {
      const next = stepRegister(value, ops[entry.id]!);
      if (next !== undefined) {
        linearized[entry.id >>> 5]! |= 1 << (entry.id & 31);
        const cacheKey = pairKey(linearized, next);
        if (!cache.has(cacheKey)) {
          cache.add(cacheKey);
          cacheWords += linearized.length;
          stack.push({ entry, value });
          value = next;
          lift(entry);
          if (entry.match !== undefined) returnsLeft--;
          entry = head.next;
          continue;
        }
        linearized[entry.id >>> 5]! &= ~(1 << (entry.id & 31));
      }
      entry = entry.next;
      continue;
    }
    // A return: its op had to be linearized by now, and nothing fitted. Back up.
    if (best === undefined || stack.length > best.ids.length) best = { ids: stack.map((s) => s.entry.id), value, blockedBy: entry.id };
    const top = stack.pop();
    if (top === undefined) {
      return { key, verdict: 'not-linearizable', ops: n, steps, partial: best.ids.map((i) => ops[i]!), valueAfterPartial: best.value, blockedBy: ops[best.blockedBy]! };
    }
    value = top.value;
    linearized[top.entry.id >>> 5]! &= ~(1 << (top.entry.id & 31));
    unlift(top.entry);
    if (top.entry.match !== undefined) returnsLeft++;
    entry = top.entry.next;
  }
  return { key, verdict: 'ok', ops: n, steps, linearization: stack.map((s) => ops[s.entry.id]!) };
}

/** The cache key of (linearized set, value); `typeof` keeps 1 and '1' apart. */
function pairKey(bits: Uint32Array, value: RegisterValue): string {
  let key = `${typeof value}:${String(value)}|`;
  for (let i = 0; i < bits.length; i++) key += String.fromCharCode(bits[i]! & 0xffff, bits[i]! >>> 16);
  return key;
}

/**
 * The list head → entries by time. At equal times calls come first (the ops overlap, as in
 * Porcupine): an op precedes another only if it completed strictly before the other began.
 * An unknown op has a call and no return.
 */
function buildList(ops: readonly RegisterOp[]): Entry {
  const events: { time: number; isCall: boolean; id: number }[] = [];
  ops.forEach((op, id) => {
    events.push({ time: op.invokeMs, isCall: true, id });
    if (op.outcome === 'ok') {
      if (!(op.completeMs >= op.invokeMs)) throw new Error(`checkLinearizable: an op of ${op.key} completes (${op.completeMs}) before it is invoked (${op.invokeMs})`);
      events.push({ time: op.completeMs, isCall: false, id });
    }
  });
  events.sort((a, b) => a.time - b.time || Number(a.isCall === false) - Number(b.isCall === false) || a.id - b.id);
  // Built back to front, so a call's return already exists when the call is made.
  const returns = new Map<number, Entry>();
  let next: Entry | undefined;
  for (let i = events.length - 1; i >= 0; i--) {
    const e = events[i]!;
    const entry: Entry = { id: e.id, isCall: e.isCall, match: e.isCall ? returns.get(e.id) : undefined, prev: undefined, next };
    if (!e.isCall) returns.set(e.id, entry);
    if (next !== undefined) next.prev = entry;
    next = entry;
  }
  const head: Entry = { id: -1, isCall: false, match: undefined, prev: undefined, next };
  if (next !== undefined) next.prev = head;
  return head;
}

/** Take a call and its return out of the list; they keep their links, for `unlift`. */
function lift(call: Entry): void {
  call.prev!.next = call.next;
  if (call.next !== undefined) call.next.prev = call.prev;
  const ret = call.match;
  if (ret !== undefined) {
    ret.prev!.next = ret.next;
    if (ret.next !== undefined) ret.next.prev = ret.prev;
  }
}

/** Undo `lift` (in reverse order of lifting). */
function unlift(call: Entry): void {
  const ret = call.match;
  if (ret !== undefined) {
    ret.prev!.next = ret;
    if (ret.next !== undefined) ret.next.prev = ret;
  }
  call.prev!.next = call;
  if (call.next !== undefined) call.next.prev = call;
}
