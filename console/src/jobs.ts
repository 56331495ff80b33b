// Progress of the cluster's long operations, worked out from what the admin routes show.
// The metadata group records a job by its kind and the step the leader is driving
// (`GET /_cluster/jobs`); how far it got is read off the nodes (`/_cluster/nodes`) and the
// shard groups (`/_cluster/collections/:c/shards`), which is where the steps leave their mark.
// Pure: the Cluster page passes what it fetched.

export interface JobRecord {
  readonly id: string;
  readonly kind: 'leave' | 'repair' | 'reshard' | 'vdb-rebalance';
  readonly target: string;
  readonly step: string;
  readonly createdAtMs: number;
  readonly updatedAtMs: number;
  /** A reshard's counts (documents copied toward those the collection held at its start). */
  readonly reshard?: { readonly oldShards: number; readonly newShards: number; readonly migrated: number; readonly expected?: number; readonly error?: string };
  /** A VDB split's or merge's counts. */
  readonly vdb?: { readonly op: string; readonly source: number; readonly target: number; readonly copied: number; readonly expected?: number; readonly cancelRequested?: true; readonly error?: string };
  /** Why the job cannot go on for now (a leave whose replicas have nowhere to go until a node joins). */
  readonly waiting?: string;
}

export interface NodeState {
  readonly name: string;
  readonly status: string;
  readonly role: 'voter' | 'learner' | 'none';
}

export interface ShardState {
  readonly shard: number;
  /** The replicas the metadata wants (the placement). */
  readonly replicas: readonly string[];
  readonly leader: string | null;
  /** The shard group's own membership, as its leader reports it (absent when unreachable). */
  readonly voters?: readonly string[];
  readonly learners?: readonly string[];
  /** Entries each replica is behind the leader's last index (null: not known yet). */
  readonly lag?: Readonly<Record<string, number | null>>;
  readonly commit?: number;
}

export interface CollectionShards {
  readonly name: string;
  readonly shards: readonly ShardState[];
}

export interface JobStep {
  /** What the step is while it runs ("moving shard replicas (2 left)"). */
  readonly doing: string;
  readonly done: boolean;
}

export interface JobProgress {
  readonly steps: readonly JobStep[];
  /** Steps done out of `steps.length`; null when the steps of this kind are not known here. */
  readonly fraction: number | null;
  /** The first step not done ("step 3 of 4: …"), "done", or the server's own step name. */
  readonly current: string;
}

/** Shards (over all collections) whose placement or group still names `node`. */
export function shardsHolding(node: string, collections: readonly CollectionShards[]): number {
  let held = 0;
  for (const c of collections) {
    for (const s of c.shards) {
      if (s.replicas.includes(node) || (s.voters ?? []).includes(node) || (s.learners ?? []).includes(node)) held++;
    }
  }
  return held;
}

/** A reshard's and a VDB split's or merge's steps, in the order the coordinator takes them. */
const MOVE_STEPS = ['copying', 'catching_up', 'switching', 'cleaning'] as const;
const MOVE_DOING: Record<(typeof MOVE_STEPS)[number], string> = {
  copying: 'copying documents',
  catching_up: 'copying what changed meanwhile',
  switching: 'switching (writes of the moving range wait)',
  cleaning: 'cleaning up',
};

/**
 * A reshard or a VDB split or merge: its step among the four, and the documents copied toward
 * those there were at its start. The bar counts the copy as the first three quarters (it is
 * most of the time), the later steps as the last quarter.
 */
function moveDetail(job: JobRecord): { moved: number; expected: number | undefined; error: string | undefined; cancel: boolean } | undefined {
  if (job.reshard !== undefined) return { moved: job.reshard.migrated, expected: job.reshard.expected, error: job.reshard.error, cancel: false };
  if (job.vdb !== undefined) return { moved: job.vdb.copied, expected: job.vdb.expected, error: job.vdb.error, cancel: job.vdb.cancelRequested === true };
  return undefined;
}

function moveProgress(job: JobRecord): JobProgress {
  const detail = moveDetail(job);
  const at = MOVE_STEPS.indexOf(job.step as (typeof MOVE_STEPS)[number]);
  const ended = job.step === 'done' || job.step === 'failed' || job.step === 'cancelled';
  const steps = MOVE_STEPS.map((step, i) => ({ doing: MOVE_DOING[step], done: job.step === 'done' || (at !== -1 && i < at) }));
  if (ended) return { steps, fraction: job.step === 'done' ? 1 : 0, current: job.step === 'done' ? 'done' : `${job.step}${detail?.error === undefined ? '' : `: ${detail.error}`}` };
  if (at === -1 || detail === undefined) return { steps: [], fraction: null, current: job.step };
  const copied = detail.expected === undefined || detail.expected === 0 ? 0 : Math.min(1, detail.moved / detail.expected);
  const fraction = at === 0 ? 0.75 * copied : 0.75 + (0.25 * (at - 1)) / (MOVE_STEPS.length - 1);
  const counts = detail.expected === undefined ? `${detail.moved} documents` : detail.moved > detail.expected ? `${detail.moved} documents (${detail.expected} when it began)` : `${detail.moved} of ${detail.expected} documents`;
  const notes = [detail.cancel ? 'cancel requested' : undefined, detail.error === undefined ? undefined : `last error: ${detail.error}`].filter((x) => x !== undefined);
  return { steps, fraction, current: `step ${at + 1} of ${MOVE_STEPS.length}: ${MOVE_DOING[MOVE_STEPS[at]!]} (${counts})${notes.length === 0 ? '' : `; ${notes.join('; ')}`}` };
}

/**
 * The call that cancels a job while it still can be cancelled: a reshard or a VDB split or
 * merge before its switch (the server refuses later; a VDB job asked once already is not
 * offered again). Leaves and repairs have no cancel.
 */
export function cancelCall(job: JobRecord): { method: 'DELETE'; path: string } | null {
  if (job.step !== 'copying' && job.step !== 'catching_up') return null;
  if (job.kind === 'reshard') return { method: 'DELETE', path: `/vectordb/collections/${encodeURIComponent(job.target)}/reshard` };
  if (job.kind === 'vdb-rebalance' && job.vdb?.cancelRequested !== true) return { method: 'DELETE', path: `/vdb/${encodeURIComponent(job.target)}/_rebalance` };
  return null;
}

// The steps of a leave, in the order docs/cluster.md gives them.
export function jobProgress(job: JobRecord, nodes: readonly NodeState[], collections: readonly CollectionShards[]): JobProgress {
  if (job.kind === 'reshard' || job.kind === 'vdb-rebalance') return moveProgress(job);
  if (job.kind !== 'leave') return { steps: [], fraction: null, current: job.step };
  const node = nodes.find((n) => n.name === job.target);
  const left = node?.status === 'left';
  const held = shardsHolding(job.target, collections);
  const steps: JobStep[] = [
    { doing: 'marking the node leaving', done: true },
    { doing: 'leaving the metadata group', done: left || node?.role === 'none' },
    { doing: `moving shard replicas (${held} left)`, done: left || held === 0 },
    { doing: 'waiting for the node to stop', done: left },
  ];
  const done = steps.filter((s) => s.done).length;
  const next = steps.findIndex((s) => !s.done);
  const current = next === -1 ? 'done' : `step ${next + 1} of ${steps.length}: ${steps[next]!.doing}${job.waiting === undefined ? '' : `; waiting: ${job.waiting}`}`;
  return { steps, fraction: done / steps.length, current };
}

export interface ReplicaMove {
  readonly collection: string;
  readonly shard: number;
  readonly node: string;
  /** adding: placed but not in the group yet; catching_up: a learner; removing: in the group, no longer placed. */
  readonly state: 'adding' | 'catching_up' | 'removing';
  /** Share of the leader's log the replica holds (catching up), else null. */
  readonly fraction: number | null;
}

/** The replica moves under way: where a shard group's membership differs from its placement. */
export function replicaMoves(collections: readonly CollectionShards[]): ReplicaMove[] {
  const moves: ReplicaMove[] = [];
  for (const c of collections) {
    for (const s of c.shards) {
      // Without the leader's view there is no membership to compare with.
      if (s.voters === undefined) continue;
      const learners = s.learners ?? [];
      const members = new Set([...s.voters, ...learners]);
      for (const node of s.replicas) {
        if (learners.includes(node)) {
          const lag = s.lag?.[node];
          const commit = s.commit ?? 0;
          const fraction = lag === undefined || lag === null || commit <= 0 ? 0 : Math.min(1, Math.max(0, (commit - lag) / commit));
          moves.push({ collection: c.name, shard: s.shard, node, state: 'catching_up', fraction });
        } else if (!members.has(node)) {
          moves.push({ collection: c.name, shard: s.shard, node, state: 'adding', fraction: null });
        }
      }
      for (const node of s.voters) if (!s.replicas.includes(node)) moves.push({ collection: c.name, shard: s.shard, node, state: 'removing', fraction: null });
    }
  }
  return moves;
}
