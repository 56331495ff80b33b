// Whether the runner may take a node out (kill, stop, pause) without leaving a shard group with
// no majority of voters holding its log, pure. Counting nodes is not enough: a group one
// replica short (a removed or leaving node's replacement still a learner catching up) loses
// its majority to the next node out, though every other node runs and has caught up. Seed
// 116's 24.3 s without an acknowledged write: n2 was killed while a VDB group still waited for
// the replacement of a replica removed ten seconds before. This is the remove route's own rule
// (`removalRisks`), with what the runner knows added: a node it has out holds nothing for now,
// whatever its leader last heard from it; and a group with no leader is its concern only where
// its placement names the node (the route counts every such group).
import { type GroupView, removalRisks } from '../../src/cluster/removal-risk.js';

/** A shard as a placement route shows it: a VDB's `_shards` names its leader `primary`, a collection's `leader`. */
export interface ShardRow {
  readonly group: string;
  readonly replicas: readonly string[];
  readonly primary?: string | null;
  readonly leader?: string | null;
  readonly voters?: readonly string[];
  readonly learners?: readonly string[];
  readonly lag?: Readonly<Record<string, number | null>>;
  readonly message?: string;
}

/** The groups `target` out would leave without a majority holding their log, one line each; none: it may go. */
export function groupsLosingMajority(target: string, rows: readonly ShardRow[], out: ReadonlySet<string>): string[] {
  return removalRisks(target, rows.map((r) => groupView(r, out)), 'placed');
}

/**
 * One view per group from the rows of several nodes' answers: the first that names a leader
 * (a node cut off from a group's leader answers without one, which says nothing of the group).
 */
export function mergeShardRows(answers: readonly (readonly ShardRow[])[]): ShardRow[] {
  const byGroup = new Map<string, ShardRow>();
  for (const rows of answers) {
    for (const r of rows) {
      const had = byGroup.get(r.group);
      if (had === undefined || (leaderOf(had) === null && leaderOf(r) !== null)) byGroup.set(r.group, r);
    }
  }
  return [...byGroup.values()];
}

function leaderOf(r: ShardRow): string | null {
  return r.primary ?? r.leader ?? null;
}

/** Has every group of `rows` been seen with a leader? */
export function everyGroupLed(rows: readonly ShardRow[]): boolean {
  return rows.every((r) => leaderOf(r) !== null);
}

function groupView(r: ShardRow, out: ReadonlySet<string>): GroupView {
  const leader = leaderOf(r);
  if (leader !== null && out.has(leader)) return { group: r.group, replicas: r.replicas, leader: null, message: `its leader ${leader} is out` };
  return {
    group: r.group,
    replicas: r.replicas,
    leader,
    ...(r.voters === undefined ? {} : { voters: r.voters }),
    ...(r.learners === undefined ? {} : { learners: r.learners }),
    ...(r.lag === undefined ? {} : { lag: Object.fromEntries(Object.entries(r.lag).map(([n, l]) => [n, out.has(n) ? null : l])) }),
    ...(r.message === undefined ? {} : { message: r.message }),
  };
}
