// Which single membership step the metadata leader takes next, pure: from the Raft conf
// state, the nodes' recorded statuses and which learners have caught up, to one conf change
// (or a leadership transfer, or nothing). The leader runs it every round; one change at a time
// (the core accepts a new change only once the last one committed).
//
// Rules, in order:
// 1. A node that `left` is removed from the group.
// 2. A `leaving` node: if it leads, hand leadership to a caught-up live voter; once no shard
//    places it any more (its replicas moved), promote a caught-up learner first if it votes
//    and the live voters would drop below the target, then remove it. Kept until then: out of
//    the group it would not see the moves of its own replicas commit.
// 3. Promote a caught-up live learner while live voters are below the target, where the target
//    is the largest odd number <= min(maxVoters, live voters + caught-up live learners).
// 4. A voter `down` past the grace period is removed once the voters exceed the target and the
//    live voters are an odd group (so its replacement, if any, was promoted first).
import type { ConfChange, ConfState } from '../raft/types.js';
import type { NodeRecord } from './meta-state.js';

export interface VoterPlanInput {
  readonly conf: ConfState;
  readonly nodes: Readonly<Record<string, NodeRecord>>;
  /** Learners whose log matches the leader's closely enough to vote without stalling commits. */
  readonly caughtUp: ReadonlySet<string>;
  readonly leader: string;
  /** Nodes a shard still places a replica on (`placedNodes`). */
  readonly placed: ReadonlySet<string>;
  readonly maxVoters: number;
  readonly deadVoterGraceMs: number;
  readonly nowMs: number;
}

export type VoterStep = { readonly kind: 'change'; readonly change: ConfChange; readonly why: string } | { readonly kind: 'transfer'; readonly to: string; readonly why: string };

export function largestOddAtMost(n: number): number {
  if (n <= 0) return 0;
  return n % 2 === 1 ? n : n - 1;
}

export function planVoters(input: VoterPlanInput): VoterStep | undefined {
  const { conf, nodes, caughtUp, leader } = input;
  const status = (name: string) => nodes[name]?.status;
  const live = (name: string) => status(name) === 'up' || status(name) === 'suspect';
  const deadLong = (name: string) => {
    const n = nodes[name];
    return n !== undefined && n.status === 'down' && input.nowMs - n.statusSinceMs >= input.deadVoterGraceMs;
  };
  const members = [...conf.voters, ...conf.learners];
  const liveVoters = conf.voters.filter(live);
  const readyLearners = conf.learners.filter((l) => live(l) && caughtUp.has(l)).sort();
  const target = largestOddAtMost(Math.min(input.maxVoters, liveVoters.length + readyLearners.length));
  const promote = (why: string): VoterStep | undefined => (readyLearners[0] === undefined ? undefined : { kind: 'change', change: { type: 'addVoter', node: readyLearners[0] }, why });

  // 1 (a leader that left hands over first, in 2)
  for (const name of [...members].sort()) {
    if (status(name) === 'left' && name !== leader) return { kind: 'change', change: { type: 'removeNode', node: name }, why: `${name} left` };
  }
  // 2
  for (const name of [...members].sort()) {
    if (status(name) !== 'leaving' && status(name) !== 'left') continue;
    if (name === leader) {
      const to = liveVoters.filter((v) => v !== leader).sort()[0];
      return to === undefined ? promote(`${name} is leaving and leads alone`) : { kind: 'transfer', to, why: `${name} is leaving` };
    }
    if (status(name) === 'leaving' && input.placed.has(name)) continue;
    if (conf.learners.includes(name)) return { kind: 'change', change: { type: 'removeNode', node: name }, why: `${name} is leaving` };
    if (liveVoters.filter((v) => v !== name).length < target) {
      const p = promote(`${name} is leaving`);
      if (p !== undefined) return p;
    }
    return { kind: 'change', change: { type: 'removeNode', node: name }, why: `${name} is leaving` };
  }
  // 3
  if (liveVoters.length < target) {
    const p = promote(`live voters ${liveVoters.length} < target ${target}`);
    if (p !== undefined) return p;
  }
  // 4
  // Only while the live voters form an odd group at the target: a dead voter is not worth
  // removing when no replacement can keep the count odd (3 voters, 1 dead, no learner: keep).
  if (conf.voters.length > target && liveVoters.length % 2 === 1 && liveVoters.length >= target) {
    const dead = conf.voters.filter((v) => v !== leader && deadLong(v)).sort()[0];
    if (dead !== undefined) return { kind: 'change', change: { type: 'removeNode', node: dead }, why: `${dead} is down past the grace period` };
  }
  return undefined;
}
