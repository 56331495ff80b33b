// Majority math, kept apart so it can be tested against naive oracles.
import type { NodeId } from './types.js';

export function quorumSize(voterCount: number): number {
  return Math.floor(voterCount / 2) + 1;
}

/** The largest index that a majority of voters has matched. 0 for no voters. */
export function committedIndex(voters: readonly NodeId[], match: (id: NodeId) => number): number {
  if (voters.length === 0) return 0;
  const sorted = voters.map(match).sort((a, b) => b - a);
  return sorted[quorumSize(voters.length) - 1]!;
}

export type VoteResult = 'won' | 'lost' | 'pending';

/** Tally of granted (true) / rejected (false) votes; missing voters have not answered. */
export function voteResult(voters: readonly NodeId[], votes: ReadonlyMap<NodeId, boolean>): VoteResult {
  if (voters.length === 0) return 'won';
  let granted = 0;
  let rejected = 0;
  for (const id of voters) {
    const v = votes.get(id);
    if (v === true) granted++;
    else if (v === false) rejected++;
  }
  const q = quorumSize(voters.length);
  if (granted >= q) return 'won';
  if (rejected > voters.length - q) return 'lost';
  return 'pending';
}

/** Whether the set `acks` contains a majority of `voters`. */
export function hasQuorum(voters: readonly NodeId[], acks: ReadonlySet<NodeId>): boolean {
  let n = 0;
  for (const id of voters) if (acks.has(id)) n++;
  return n >= quorumSize(voters.length);
}
