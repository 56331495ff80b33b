// Whether removing a dead node now could leave a shard group without a majority that holds its
// data, pure. Removing a down node changes no group by itself; what follows it does: the
// operator wipes the machine and starts it again under its name, or the repair moves its
// replicas. If the group's other voters are not a caught-up majority (one is new and still a
// learner's way behind, one is a wiped node catching up from empty, or the group has no leader
// at all), the dead node's disk may be the only copy of acknowledged writes that a majority
// needs, and after the wipe the group waits for ever (chaos seed 80). So the remove route
// refuses, saying which groups, unless told `force`.

/** A shard group as its leader reports it (`ShardHost.shardStatuses`). */
export interface GroupView {
  readonly group: string;
  /** The replicas the placement wants. */
  readonly replicas: readonly string[];
  readonly leader: string | null;
  readonly voters?: readonly string[];
  readonly learners?: readonly string[];
  /** Entries each member is behind the leader's last index (null: not known to the leader). */
  readonly lag?: Readonly<Record<string, number | null>>;
  /** Why no leader answered. */
  readonly message?: string;
}

/** A voter this many entries behind or less holds the group's log, as far as a removal goes. */
export const CAUGHT_UP_LAG = 100;

/**
 * Why a leaving node that no longer answers may still be one of its groups' members (undefined:
 * no group counts it). Its leave must not end then: a node that left is a machine to wipe, and
 * a group that still counts it as a voter would lose that vote for good (chaos seed 84: a VDB
 * shard counted a leaving node that was down, its leave ended as it was "gone", and with
 * another voter's disk lost the group had no majority). A group without a leader may count it
 * (its membership cannot be read, and cannot change).
 */
export function stillCounted(node: string, groups: readonly GroupView[]): string | undefined {
  for (const g of groups) {
    if (g.leader === null || g.voters === undefined) return `${g.group} has no leader now (${g.message ?? 'none answered'}): whether it still counts ${node} is unknown`;
    if (g.voters.includes(node)) return `${g.group} still counts ${node} as a voter`;
    if (g.learners?.includes(node) === true) return `${g.group} still lists ${node} as a learner`;
  }
  return undefined;
}

/**
 * One line per group the removal of `node` puts at risk; none: it is safe as far as the groups go.
 * `leaderless`: which groups with no leader count, `all` (the remove route) or only those whose
 * placement names the node (`placed`: the chaos runner's pacing, where a skipped fault costs
 * nothing and a group's own nodes are what it must keep).
 */
export function removalRisks(node: string, groups: readonly GroupView[], leaderless: 'all' | 'placed' = 'all'): string[] {
  const risks: string[] = [];
  for (const g of groups) {
    // No leader: its membership cannot be read. The placement is no answer: a repair may have
    // moved it off a node that is still the group's voter, even its only one (a replica_factor 1
    // VDB shard whose node was down past the grace period was placed elsewhere, and the remove
    // route then let its one holder go).
    if (g.leader === null || g.voters === undefined) {
      const placed = g.replicas.includes(node);
      if (placed || leaderless === 'all') risks.push(`${g.group} has no leader now (${g.message ?? 'none answered'})${placed ? '' : `: whether it counts ${node} is unknown`}`);
      continue;
    }
    if (!g.voters.includes(node)) continue;
    const majority = Math.floor(g.voters.length / 2) + 1;
    const caughtUp = (v: string) => {
      const lag = g.lag?.[v];
      return typeof lag === 'number' && lag <= CAUGHT_UP_LAG;
    };
    const holding = g.voters.filter((v) => v !== node && (v === g.leader || caughtUp(v)));
    if (holding.length < majority) {
      risks.push(`${g.group}'s voters are ${g.voters.join(', ')}; without ${node}, ${holding.length === 0 ? 'none' : holding.join(', ')} ${holding.length === 1 ? 'holds' : 'hold'} its log, fewer than its majority of ${majority}`);
    }
  }
  return risks;
}
