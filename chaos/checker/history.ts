// The recorded history of a chaos run: what workloads write and checkers read. Plain data,
// times in ms from the workload's start (the runner's clock; checkers never read a clock).
//
// Outcome of an operation, as its client saw it:
// - ok: acknowledged; it took effect (for a read: it returned this value);
// - fail: it definitely did not take effect (refused, connection refused, a 4xx);
// - unknown: timed out or "may still commit" (a 503): it may or may not have taken effect, at
//   any instant after its invocation. Its recorded `completeMs` is when the client gave up; the
//   linearizability check treats its completion as +infinity.

export type Outcome = 'ok' | 'fail' | 'unknown';

/** What every timed operation carries. */
export interface OpTiming {
  /** The client (logical process) that issued it: one operation at a time per process. */
  readonly process?: string;
  /** The node it was sent to. */
  readonly node: string;
  readonly invokeMs: number;
  readonly completeMs: number;
  readonly outcome: Outcome;
}

// ---- keys workload (metadata through consensus; chaos/checker/keys.ts) ----

/** check result: valid (authenticated), invalid (401), unavailable (the node could not vouch: 503). */
export type KeyOp =
  | (OpTiming & { readonly kind: 'create'; readonly keyId?: string })
  /** `absent`: answered 404, already revoked (a `fail` the service answered, not a refusal). */
  | (OpTiming & { readonly kind: 'revoke'; readonly keyId: string; readonly absent?: boolean })
  | (OpTiming & { readonly kind: 'check'; readonly keyId: string; readonly phantom: boolean; readonly result?: 'valid' | 'invalid' | 'unavailable' })
  /** After healing and convergence: the key used on every node. */
  | { readonly kind: 'final'; readonly node: string; readonly keyId: string; readonly result: 'valid' | 'invalid' | 'unavailable' };

// ---- register workload (one register per key; chaos/checker/linearizable.ts) ----

export type RegisterValue = string | number | null;

/**
 * read: `value` is what it returned (absent unless ok). write: sets `value`.
 * cas: sets `value` iff the register holds `expected`; `result` (when ok) says whether it did.
 */
export type RegisterOp =
  | (OpTiming & { readonly kind: 'read'; readonly key: string; readonly value?: RegisterValue })
  | (OpTiming & { readonly kind: 'write'; readonly key: string; readonly value: RegisterValue })
  | (OpTiming & { readonly kind: 'cas'; readonly key: string; readonly expected: RegisterValue; readonly value: RegisterValue; readonly result?: boolean });

// ---- set workload (elements added to and deleted from one set; chaos/checker/set.ts) ----

export type SetElement = string | number;

/**
 * add/delete one element. read: the elements it returned (absent unless ok); `final` marks the
 * reads made after healing and convergence, the ones the set checker judges.
 */
export type SetOp =
  | (OpTiming & { readonly kind: 'add'; readonly element: SetElement })
  /** `absent`: answered 404, nothing to delete (a `fail` the service answered, not a refusal). */
  | (OpTiming & { readonly kind: 'delete'; readonly element: SetElement; readonly absent?: boolean })
  | (OpTiming & { readonly kind: 'read'; readonly elements?: readonly SetElement[]; readonly final?: boolean });

/** Counts of outcomes per operation kind, as every checker reports them. */
export type OutcomeCounts = Record<string, Record<Outcome, number>>;

export function countOutcomes(history: readonly { readonly kind: string; readonly outcome?: Outcome }[]): OutcomeCounts {
  const counts: OutcomeCounts = {};
  for (const op of history) {
    if (op.outcome === undefined) continue;
    const c = (counts[op.kind] ??= { ok: 0, fail: 0, unknown: 0 });
    c[op.outcome]++;
  }
  return counts;
}
