// The checkers' part of a chaos report: every checker whose history the workload recorded,
// run once, and their anomalies in one list. Pure: histories in, the `checkers` and
// `anomalies` sections of the report JSON out. A checker whose workload did not run reports
// null, so every report has the same shape whichever workload made it.
import { type Availability, type FaultWindow, type TimedOp, availability } from './availability.js';
import { type Bm25Check, type Bm25NodeRead, CHAOS_BM25_PARAMS, checkBm25 } from './bm25.js';
import { type Scroll, type ScrollCheck, checkScrolls } from './scroll.js';
import { type ListingCheck, type NodeListing, checkListings } from './listing.js';
import { type FeedCheck, type FeedHistory, checkFeed } from './changes.js';
import { type ConvergenceCheck, type ReplicaReport, checkConvergence } from './convergence.js';
import type { KeyOp, RegisterOp, SetOp } from './history.js';
import { type KeyCheck, checkKeys } from './keys.js';
import { type KeyResult, type Verdict, checkLinearizable } from './linearizable.js';
import { type SetCheck, checkSet } from './set.js';

/** Ops of a partial linearization kept in the report (its end: where the search got stuck). */
export const PARTIAL_TAIL = 20;

export interface ReportAnomaly {
  /** `jobs`: a split, merge or reshard still running two minutes after the faults healed (the runner's own check). */
  readonly checker: 'keys' | 'linearizable' | 'set' | 'scroll' | 'listing' | 'bm25' | 'feed' | 'convergence' | 'jobs';
  readonly type: string;
  readonly key: string;
  readonly node: string;
  readonly detail: string;
}

export interface LinearizableReport {
  readonly verdict: Verdict;
  readonly keys: number;
  readonly ops: number;
  readonly stepBudget: number;
  /** Keys not linearizable, then keys out of budget; each with the tail of its longest partial linearization. */
  readonly failures: readonly (Omit<KeyResult, 'partial' | 'linearization'> & { readonly partialLength: number; readonly partialTail: readonly RegisterOp[] })[];
}

export interface CheckersReport {
  readonly keys: KeyCheck | null;
  readonly linearizable: LinearizableReport | null;
  readonly set: SetCheck | null;
  /** The set workload's keyword index against each node's final read. */
  /** The set workload's scrolls during the run, against the adds and deletes around each. */
  readonly scroll: ScrollCheck | null;
  /** The set workload's listings (scroll) against each node's final read. */
  readonly listing: ListingCheck | null;
  readonly bm25: Bm25Check | null;
  /** The cas workload's `_changes` follower. */
  readonly feed: FeedCheck | null;
  /** The last poll after healing; `timedOut`: the runner's deadline passed before it converged. */
  readonly convergence: (ConvergenceCheck & { readonly timedOut: boolean }) | null;
  readonly availability: Availability;
}

export interface CheckerInput {
  readonly keys?: readonly KeyOp[];
  readonly registers?: readonly RegisterOp[];
  readonly set?: readonly SetOp[];
  /** Each node's keyword searches after its final set read. */
  readonly bm25?: readonly Bm25NodeRead[];
  /** The set workload's scrolls during the run (judged with `set`'s history). */
  readonly scrolls?: readonly Scroll[];
  /** Each node's scroll of the whole collection after its final set read. */
  readonly listings?: readonly NodeListing[];
  /** The cas workload's `_changes` follower and the writes it is owed. */
  readonly feed?: FeedHistory;
  /** The last convergence poll, and whether the deadline passed before it converged. */
  readonly convergence?: { readonly reports: readonly ReplicaReport[]; readonly expected?: Readonly<Record<string, readonly string[]>>; readonly timedOut: boolean };
  readonly windows: readonly FaultWindow[];
  /** The workload's span, for the availability gaps. */
  readonly startMs: number;
  readonly endMs: number;
  readonly stepBudget: number;
  readonly gapMsMin: number;
}

/** Which op kinds are writes, per workload (for the gaps without an acknowledged write). */
export const WRITE_KINDS = ['create', 'revoke', 'write', 'cas', 'add', 'delete'] as const;

export function runCheckers(input: CheckerInput): { checkers: CheckersReport; anomalies: ReportAnomaly[] } {
  const anomalies: ReportAnomaly[] = [];

  const keys = input.keys === undefined ? null : checkKeys(input.keys);
  for (const a of keys?.anomalies ?? []) anomalies.push({ checker: 'keys', type: a.type, key: a.keyId, node: a.node, detail: a.detail });

  let linearizable: LinearizableReport | null = null;
  if (input.registers !== undefined) {
    const r = checkLinearizable(input.registers, { stepBudget: input.stepBudget });
    const failures = r.failures.map(({ partial, linearization: _, ...rest }) => ({ ...rest, partialLength: partial?.length ?? 0, partialTail: (partial ?? []).slice(-PARTIAL_TAIL) }));
    linearizable = { verdict: r.verdict, keys: r.keys, ops: r.ops, stepBudget: input.stepBudget, failures };
    for (const f of failures) {
      if (f.verdict === 'not-linearizable') {
        const b = f.blockedBy;
        anomalies.push({ checker: 'linearizable', type: 'not-linearizable', key: f.key, node: b?.node ?? '', detail: `after ${f.partialLength} ops linearized (value ${JSON.stringify(f.valueAfterPartial)}), nothing fits before ${b === undefined ? '?' : `${b.kind} [${b.invokeMs}, ${b.completeMs}] ms`}` });
      } else {
        // Not an anomaly found, but not a pass either: the search gave up.
        anomalies.push({ checker: 'linearizable', type: 'linearizability-unknown', key: f.key, node: '', detail: `the search ran out of its budget (${input.stepBudget} steps) on ${f.ops} ops` });
      }
    }
  }

  const set = input.set === undefined ? null : checkSet(input.set);
  for (const a of set?.anomalies ?? []) anomalies.push({ checker: 'set', type: a.type, key: a.element === undefined ? '' : String(a.element), node: a.node ?? '', detail: a.detail });

  const bm25 = input.bm25 === undefined ? null : checkBm25(input.bm25, CHAOS_BM25_PARAMS);
  for (const a of bm25?.anomalies ?? []) anomalies.push({ checker: 'bm25', type: a.type, key: a.query, node: a.node, detail: `${a.detail}; e.g. ${a.elements.join(', ') || 'none'}` });

  const scroll = input.scrolls === undefined ? null : checkScrolls(input.scrolls, input.set ?? []);
  for (const a of scroll?.anomalies ?? []) anomalies.push({ checker: 'scroll', type: a.type, key: a.ids.join(','), node: '', detail: `${a.detail}; e.g. ${a.ids.join(', ')}` });

  const listing = input.listings === undefined ? null : checkListings(input.listings);
  for (const a of listing?.anomalies ?? []) anomalies.push({ checker: 'listing', type: a.type, key: a.ids.join(','), node: a.node, detail: `${a.count} ids ${a.type} in ${a.node}'s scroll of the collection, e.g. ${a.ids.join(', ') || 'none'}` });

  const feed = input.feed === undefined ? null : checkFeed(input.feed);
  for (const a of feed?.anomalies ?? []) anomalies.push({ checker: 'feed', type: a.type, key: a.key, node: a.node, detail: a.detail });

  let convergence: CheckersReport['convergence'] = null;
  if (input.convergence !== undefined) {
    const c = checkConvergence(input.convergence.reports, input.convergence.expected);
    convergence = { ...c, timedOut: input.convergence.timedOut };
    for (const s of c.shards) {
      for (const d of s.diverged) anomalies.push({ checker: 'convergence', type: 'diverged', key: s.shard, node: '', detail: `at applied index ${d.appliedIndex}: ${JSON.stringify(d.digests)}` });
      if (!s.converged && s.diverged.length === 0 && input.convergence.timedOut) {
        anomalies.push({ checker: 'convergence', type: 'no-convergence', key: s.shard, node: [...s.lagging, ...s.missing].join(','), detail: `lagging ${JSON.stringify(s.lagging)}, missing ${JSON.stringify(s.missing)}` });
      }
    }
  }

  const timed: TimedOp[] = [...(input.keys ?? []).filter((op): op is Exclude<KeyOp, { kind: 'final' }> => op.kind !== 'final'), ...(input.registers ?? []), ...(input.set ?? []).filter((op) => !(op.kind === 'read' && op.final === true))];
  const avail = availability(timed, input.windows, { writeKinds: WRITE_KINDS, startMs: input.startMs, endMs: input.endMs, gapMsMin: input.gapMsMin });

  return { checkers: { keys, linearizable, set, scroll, listing, bm25, feed, convergence, availability: avail }, anomalies };
}
