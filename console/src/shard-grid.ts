// One shards × nodes grid for vector collections and virtual databases (VDBs): a row per
// shard, a cell per node saying what the node is to that shard's Raft group.
// Pure: the Cluster page passes what it fetched.
//
// The two sources differ in what they tell:
// - `/_cluster/collections/:c/shards` names the group's voters and learners (as its leader sees
//   them), so a non-leader is a follower or a learner;
// - `/vdb/:vdb/_shards` names the leader (`primary`) and the placement's replicas only, so a
//   non-leader is a replica. A standalone node answers `replicas: []` and `primary`: itself,
//   every shard being a database on that node.

export type CellRole = 'leader' | 'follower' | 'learner' | 'replica' | 'local' | '';

export interface GridRow {
  readonly shard: number;
  /** The shard's Raft leader; null: none reachable (an election, or a lost majority). */
  readonly leader: string | null;
  /** The nodes the placement puts a replica on. */
  readonly replicas: readonly string[];
  /** undefined: the source cannot tell learners from followers (non-leaders are replicas). */
  readonly learners: readonly string[] | undefined;
  /** Entries each member is behind the leader's last index (null: not known to the leader yet). */
  readonly lag: Readonly<Record<string, number | null>> | undefined;
  readonly readonly: boolean;
  /** Standalone: the shard is a database on this node, with no group around it. */
  readonly local: boolean;
  /** Why the row looks the way it does (the node's message for an unreachable shard). */
  readonly note: string | undefined;
}

export interface GridCell {
  readonly role: CellRole;
  readonly text: string;
}

/** A row of `/_cluster/collections/:c/shards` (see `ShardState` in jobs.ts). */
export interface CollectionShardRow {
  readonly shard: number;
  readonly replicas: readonly string[];
  readonly leader: string | null;
  readonly learners?: readonly string[];
  readonly voters?: readonly string[];
  readonly lag?: Readonly<Record<string, number | null>>;
  readonly message?: string;
}

/** A row of `/vdb/:vdb/_shards`. */
export interface VdbShardRow {
  readonly shard_id: number;
  readonly primary: string | null;
  readonly replicas: readonly string[];
  readonly status: 'active' | 'readonly' | 'unavailable';
  readonly lag?: Readonly<Record<string, number | null>>;
}

export function fromCollectionShard(row: CollectionShardRow): GridRow {
  // The leader reports voters and learners together; an unreachable shard reports neither.
  const learners = row.voters === undefined ? undefined : (row.learners ?? []);
  return { shard: row.shard, leader: row.leader, replicas: row.replicas, learners, lag: row.lag, readonly: false, local: false, note: row.message };
}

export function fromVdbShard(row: VdbShardRow): GridRow {
  const local = row.replicas.length === 0 && row.primary !== null;
  return {
    shard: row.shard_id,
    leader: row.primary,
    replicas: local ? [row.primary!] : row.replicas,
    learners: undefined,
    lag: row.lag,
    readonly: row.status === 'readonly',
    local,
    note: row.primary === null ? 'no leader' : undefined,
  };
}

export function gridCell(row: GridRow, node: string): GridCell {
  if (!row.replicas.includes(node)) return { role: '', text: '' };
  if (row.local) return { role: 'local', text: 'local' };
  if (row.leader === node) return { role: 'leader', text: 'leader' };
  const role: CellRole = row.learners === undefined ? 'replica' : row.learners.includes(node) ? 'learner' : 'follower';
  // Not in the leader's lag map (no leader, or not in the group yet): no lag to show.
  const lag = row.lag?.[node];
  return { role, text: lag === undefined ? role : `${role} lag ${lag ?? '?'}` };
}

/**
 * The grid's columns: the cluster's nodes in their order, then any node a row names that the
 * list lacks (standalone: the node itself, known only from the shards).
 */
export function gridColumns(nodes: readonly string[], rows: readonly GridRow[]): string[] {
  const columns = [...nodes];
  for (const row of rows) for (const n of row.replicas) if (!columns.includes(n)) columns.push(n);
  return columns;
}
