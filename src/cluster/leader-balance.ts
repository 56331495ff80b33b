// Shard leader balancing, pure. Every write and linearizable read of a shard goes through its
// Raft leader, so a node that leads most shards does most of the work while the others idle:
// after a failover or a rolling restart every shard a restarted node led has moved away, and
// nothing brings it back. A leader of a data kind's shards runs this each membership round
// with what it can see (the groups it leads, and how many groups of that kind each peer said
// it leads in its last link heartbeat), and hands one group to a less loaded voter when the
// counts differ by two or more.
//
// Why it settles: each transfer moves one leadership from a node with `a` to one with `b <= a - 2`,
// which lowers the sum of the squared counts by 2(a - b - 1) >= 2; with counts as they are, no
// sequence of transfers can go on forever. Counts heard late can make two leaders pick the same
// target at once; the caller waits a cooldown after each transfer (longer than a heartbeat), so
// the next decision sees fresh counts.

/** A group this node leads, as its Raft leader sees it. */
export interface LedGroup {
  readonly group: string;
  readonly voters: readonly string[];
  /** Voters whose log matches the leader's last index: a transfer to them is immediate. */
  readonly caughtUp: ReadonlySet<string>;
}

export interface LeaderBalanceInput {
  readonly me: string;
  /** How many groups of the kind this node leads now. */
  readonly leads: number;
  /** The ones of them that may move now (steady: no membership step under way). */
  readonly movable: readonly LedGroup[];
  /** Groups of the kind each peer leads, as last heard; absent: not heard (never a target). */
  readonly peerLeads: ReadonlyMap<string, number>;
  /** A node that may take leadership now: live, `up` in the metadata. */
  readonly eligible: (node: string) => boolean;
}

export interface LeaderTransfer {
  readonly group: string;
  readonly to: string;
  readonly why: string;
}

/** The one transfer to make now, or undefined when no voter leads two groups fewer than this node. */
export function planLeaderTransfer(input: LeaderBalanceInput): LeaderTransfer | undefined {
  const mine = input.leads;
  let best: { group: string; to: string; theirs: number } | undefined;
  for (const g of input.movable) {
    for (const to of g.voters) {
      if (to === input.me || !g.caughtUp.has(to) || !input.eligible(to)) continue;
      const theirs = input.peerLeads.get(to);
      if (theirs === undefined || mine - theirs < 2) continue;
      const better = best === undefined || theirs < best.theirs || (theirs === best.theirs && (to < best.to || (to === best.to && g.group < best.group)));
      if (better) best = { group: g.group, to, theirs };
    }
  }
  if (best === undefined) return undefined;
  return { group: best.group, to: best.to, why: `${input.me} leads ${mine} shard groups, ${best.to} leads ${best.theirs}` };
}
