// Forced recovery of a group that lost a majority of its voters for good, pure. Raft waits for
// ever there, by design: nothing can tell a voter that is gone from one that is slow, and
// electing without a majority could lose acknowledged writes. When an operator knows the
// others are gone (their disks lost), the one way on is to make a survivor the group's only
// voter, as etcd's --force-new-cluster does: append, at a new term, one `removeNode` entry per
// other voter, and commit everything the survivor holds. The caller writes what this plans, on
// a stopped node; started again, the replica elects itself and the cluster's usual repair adds
// replicas back.
//
// What it costs: an entry the lost voters committed but this survivor never received is gone
// (pick the survivor with the highest last term, then index: `summarizeLog` says), and an entry
// this survivor holds that never committed is committed now.
import { confAfter } from './conf.js';
import type { ConfState, Entry, HardState, NodeId } from './types.js';

export interface LogSummary {
  /** Membership once every entry held is applied (what the group becomes when they commit). */
  readonly conf: ConfState;
  readonly term: number;
  readonly commit: number;
  readonly lastIndex: number;
  readonly lastTerm: number;
  /** Opened empty and never vouched for by a leader: it may lack what its old self acknowledged. */
  readonly fresh: boolean;
}

export interface StoredLog {
  readonly snapshotConf: ConfState;
  readonly snapshotIndex: number;
  readonly snapshotTerm: number;
  /** Entries after the snapshot, in order. */
  readonly entries: readonly Entry[];
  readonly hardState: HardState;
  readonly fresh: boolean;
}

export function summarizeLog(log: StoredLog): LogSummary {
  const last = log.entries.at(-1);
  return {
    conf: confAfter(log.snapshotConf, log.entries),
    term: log.hardState.term,
    commit: log.hardState.commit,
    lastIndex: last?.index ?? log.snapshotIndex,
    lastTerm: last?.term ?? log.snapshotTerm,
    fresh: log.fresh,
  };
}

export type SoleVoterPlan =
  | { readonly kind: 'write'; readonly entries: readonly Entry[]; readonly hardState: HardState; readonly removed: readonly NodeId[]; readonly learners: readonly NodeId[] }
  /** Already its only voter, nothing to write. */
  | { readonly kind: 'nothing'; readonly why: string }
  | { readonly kind: 'refused'; readonly why: string };

/** How to make `me` the only voter of a group, from what its log holds. */
export function planSoleVoter(me: NodeId, log: StoredLog): SoleVoterPlan {
  const s = summarizeLog(log);
  if (s.fresh || s.lastIndex === 0) return { kind: 'refused', why: `${me}'s replica opened empty and never caught up with a leader: it holds nothing to recover from` };
  if (!s.conf.voters.includes(me)) return { kind: 'refused', why: `${me} is not a voter of this group (voters: ${s.conf.voters.join(', ') || 'none'}): run this where a voter's data survived` };
  const others = s.conf.voters.filter((n) => n !== me);
  if (others.length === 0) return { kind: 'nothing', why: `${me} is already its only voter` };
  // A term above any this replica saw: a survivor of the old membership that comes back finds
  // the recovered log newer than its own, and a learner follows the recovered leader.
  const term = Math.max(s.term, s.lastTerm) + 1;
  const entries: Entry[] = others.map((node, i) => ({ index: s.lastIndex + 1 + i, term, kind: 'conf', change: { type: 'removeNode', node } }));
  const lastIndex = s.lastIndex + entries.length;
  return { kind: 'write', entries, hardState: { term, vote: me, commit: lastIndex }, removed: others, learners: s.conf.learners };
}
