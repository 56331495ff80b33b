// Replica repair, pure. Two halves, each a function of what its caller can see:
// - `planRepairs` (the metadata leader): which replica of which shard moves to which node,
//   because its node is down past the grace period, leaving or gone. It changes the desired
//   replicas in the metadata (`shard.replace`), nothing else.
// - `planShardConf` (each shard group's leader): the next single membership change that
//   brings the group from its Raft conf state toward the desired replicas: add the new node
//   as a learner, promote it once caught up, then remove the replaced voter (handing
//   leadership over first if it is the leader). One change at a time, so the group never
//   loses its majority, and every step is idempotent: a crash anywhere resumes from the state.
import type { ConfChange, ConfState } from '../raft/types.js';
import { type MetaState, type NodeRecord, type ShardOwnerKind, shardOwners } from './meta-state.js';
import { type PlacementNode, replaceReplica, replicaLoad } from './placement.js';

export interface ReplicaMove {
  readonly kind: ShardOwnerKind;
  /** The collection's or VDB's name. */
  readonly collection: string;
  readonly group: string;
  readonly from: string;
  readonly to: string;
  readonly why: string;
  /** A running reshard's or split's group, not routed yet (`shard.replace.pending`). */
  readonly pending?: true;
}

/** Why a replica on this node must move, or undefined if it may stay. */
function mustMove(node: NodeRecord | undefined, nowMs: number, graceMs: number): string | undefined {
  if (node === undefined) return 'its node is unknown';
  if (node.status === 'left') return `${node.name} left the cluster`;
  if (node.status === 'leaving') return `${node.name} is leaving`;
  if (node.status === 'down' && nowMs - node.statusSinceMs >= graceMs) return `${node.name} has been down for ${Math.round((nowMs - node.statusSinceMs) / 1000)} s`;
  return undefined;
}

/**
 * At most one move per shard; none where no healthy node outside the shard can take it.
 * `pending`: a running reshard's or split's groups too (every member reads their moves), so a
 * node that leaves or is lost while the job runs neither waits for it nor leaves its group short.
 */
export function planRepairs(state: MetaState, nowMs: number, graceMs: number, o: { pending?: boolean } = {}): ReplicaMove[] {
  const up = Object.values(state.nodes).filter((n) => n.status === 'up');
  const held = replicaLoad(state);
  const moves: ReplicaMove[] = [];
  const byName = (a: { name: string }, b: { name: string }) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);
  for (const c of shardOwners(state).sort((a, b) => (a.kind === b.kind ? byName(a, b) : a.kind === 'collection' ? -1 : 1))) {
    const pending = o.pending === true ? c.pending : [];
    for (const s of [...c.shards, ...pending]) {
      const leaderless = noMajorityLive(state, s.replicas);
      for (const r of s.replicas) {
        const why = mustMove(state.nodes[r], nowMs, graceMs);
        if (why === undefined) continue;
        // A move is made by the group's leader, elected by a majority. With fewer than a majority
        // of the replicas live there is none: moving a down node's replica would only send the
        // shard's requests to an empty replica that cannot catch up, and make the placement name
        // a node without the data (the remove route then let a replica_factor 1 shard's one
        // holder go). It waits for its nodes; a replica on a node that left still moves.
        if (leaderless && state.nodes[r]?.status === 'down') continue;
        const candidates: PlacementNode[] = up.map((n) => ({ name: n.name, zone: n.zone, replicas: held.get(n.name) ?? 0 }));
        let to: string;
        try {
          to = replaceReplica(s.replicas, r, candidates);
        } catch {
          break; // nowhere to go now; a node that joins later can take it
        }
        held.set(to, (held.get(to) ?? 0) + 1);
        moves.push({ kind: c.kind, collection: c.name, group: s.group, from: r, to, why, ...(pending.includes(s) ? { pending: true as const } : {}) });
        break;
      }
    }
  }
  return moves;
}

/** A node that holds its replicas and answers: up, or suspect (expected back). */
function answers(node: NodeRecord | undefined): boolean {
  return node?.status === 'up' || node?.status === 'suspect';
}

/** Fewer than a majority of the replicas on nodes that answer: the group cannot elect a leader. */
function noMajorityLive(state: MetaState, replicas: readonly string[]): boolean {
  return 2 * replicas.filter((r) => answers(state.nodes[r])).length <= replicas.length;
}

/** The shards of one owner (a collection or a VDB) that no other node can take a replica of. */
export interface StrandedReplicas {
  readonly kind: ShardOwnerKind;
  readonly owner: string;
  readonly groups: readonly string[];
}

/**
 * The shards with a replica on `node` that no other live node (up or suspect, not leaving)
 * could take, because each of those already holds one of the shard's replicas: a leave of
 * `node` would wait for a node to join before it could end.
 */
export function strandedReplicas(state: MetaState, node: string): StrandedReplicas[] {
  const takers = Object.values(state.nodes).filter((n) => n.name !== node && answers(n));
  const out: StrandedReplicas[] = [];
  for (const c of shardOwners(state)) {
    // A running job's new groups too: they move as routed ones do (`planRepairs`).
    const shards = [...c.shards, ...c.pending];
    const groups = shards.filter((s) => s.replicas.includes(node) && takers.every((n) => s.replicas.includes(n.name))).map((s) => s.group);
    if (groups.length > 0) out.push({ kind: c.kind, owner: c.name, groups });
  }
  return out.sort((a, b) => (a.kind === b.kind ? (a.owner < b.owner ? -1 : a.owner > b.owner ? 1 : 0) : a.kind === 'collection' ? -1 : 1));
}

/** `strandedReplicas` in words, for an error or a job's note. */
export function describeStranded(node: string, stranded: readonly StrandedReplicas[]): string {
  const what = stranded.map((s) => `${s.kind === 'collection' ? 'collection' : 'VDB'} ${s.owner} (${s.groups.length === 1 ? 'shard group' : 'shard groups'} ${s.groups.join(', ')})`).join(', ');
  return `no other live node can take ${node}'s replicas of ${what}: every other live node already holds a replica of those shards; a node must join first`;
}

/**
 * Why a leave of `node` cannot end for now, per shard it holds or held (its bootstrap
 * replicas): its replica has no taker (`strandedReplicas`), or the replica that took its place
 * is on a node that is not live and no other live node could take that one either. Empty when
 * the leave can go on.
 */
export function leaveBlockers(state: MetaState, node: string): string[] {
  const stranded = new Set(strandedReplicas(state, node).flatMap((s) => s.groups));
  const shortfalls = replicaShortfalls(state);
  const unrepairable = new Set(shortfalls.filter((x) => !x.repairable).map((x) => x.group));
  const waiting = new Set(shortfalls.filter((x) => x.waitsForItsNodes === true).map((x) => x.group));
  const out: string[] = [];
  for (const c of shardOwners(state)) {
    for (const p of c.pending) {
      if (stranded.has(p.group)) out.push(`${p.group} of ${c.kind === 'collection' ? 'collection' : 'VDB'} ${c.name} (a running job's new group): every other live node already holds a replica`);
    }
    for (const s of c.shards) {
      const what = `${s.group} of ${c.kind === 'collection' ? 'collection' : 'VDB'} ${c.name}`;
      if (s.replicas.includes(node)) {
        if (stranded.has(s.group)) out.push(`${what}: every other live node already holds a replica`);
        continue;
      }
      if (!(s.initial ?? []).includes(node) || !unrepairable.has(s.group)) continue;
      const notLive = s.replicas.filter((r) => !answers(state.nodes[r]));
      out.push(`${what}: its new replica is on ${notLive.join(', ')}, not live, and ${waiting.has(s.group) ? 'the group cannot elect a leader to move it: it waits for its nodes' : 'no other live node can take it'}`);
    }
  }
  return out;
}

/** A shard whose placed replicas are not all on live nodes. */
export interface ReplicaShortfall {
  readonly kind: ShardOwnerKind;
  readonly owner: string;
  readonly group: string;
  readonly placed: number;
  /** Placed replicas whose node is up or suspect. */
  readonly live: number;
  /** Whether an up node outside the shard could take a replica (the repair's rule). */
  readonly repairable: boolean;
  /** Fewer than a majority of its replicas live, the others on nodes that are down: nothing moves it, it answers again once a majority is back. */
  readonly waitsForItsNodes?: true;
}

/**
 * Every shard (of collections and VDBs) with a placed replica on a node that is down, leaving,
 * gone or unknown: what the metadata says is missing, whether or not a repair is under way.
 */
export function replicaShortfalls(state: MetaState): ReplicaShortfall[] {
  const up = Object.values(state.nodes).filter((n) => n.status === 'up');
  const out: ReplicaShortfall[] = [];
  for (const c of shardOwners(state)) {
    // A running reshard's or split's new groups too: repaired alike (`planRepairs`).
    for (const s of [...c.shards, ...c.pending]) {
      const live = s.replicas.filter((r) => answers(state.nodes[r])).length;
      if (live === s.replicas.length) continue;
      // Nothing moves it (`planRepairs`): no leader can be elected, and every replica that is
      // not live is on a node that is down, with its data.
      const waits = noMajorityLive(state, s.replicas) && s.replicas.every((r) => answers(state.nodes[r]) || state.nodes[r]?.status === 'down');
      out.push({ kind: c.kind, owner: c.name, group: s.group, placed: s.replicas.length, live, repairable: !waits && up.some((n) => !s.replicas.includes(n.name)), ...(waits ? { waitsForItsNodes: true as const } : {}) });
    }
  }
  return out;
}

/**
 * `replicaShortfalls` as /health problems: one line per owner, the worst first. An owner the
 * reader may not see (`named` false: a VDB the caller's key may not read) is described without
 * its name.
 */
export function describeShortfalls(shortfalls: readonly ReplicaShortfall[], named: (kind: ShardOwnerKind, owner: string) => boolean = () => true): string[] {
  const byOwner = new Map<string, ReplicaShortfall[]>();
  for (const s of shortfalls) {
    const key = `${s.kind} ${s.owner}`;
    byOwner.set(key, [...(byOwner.get(key) ?? []), s]);
  }
  const lines: { worst: number; text: string }[] = [];
  for (const list of byOwner.values()) {
    const { kind, owner: name } = list[0]!;
    const noun = kind === 'collection' ? 'collection' : 'VDB';
    const owner = named(kind, name) ? `${noun} ${name}` : `a ${noun} this key may not read`;
    const noMajority = list.filter((s) => s.live <= s.placed / 2);
    const groups = list.map((s) => `${s.group} ${s.live}/${s.placed}`).join(', ');
    const waiting = list.filter((s) => s.waitsForItsNodes === true);
    const others = list.filter((s) => s.waitsForItsNodes !== true);
    const wait = waiting.length === 0 ? '' : `${waiting.map((s) => s.group).join(', ')} cannot elect a leader to move ${waiting.length === 1 ? 'its' : 'their'} replicas: nothing moves them, ${waiting.length === 1 ? 'it answers' : 'they answer'} again once a majority of ${waiting.length === 1 ? 'its' : 'their'} nodes is back`;
    const move = others.length === 0 ? '' : others.every((s) => s.repairable) ? 'repairable: their replicas move to other nodes (a down node\'s after the grace period)' : 'no other live node can take the missing ones: a node must join';
    const where = [move, wait].filter((w) => w !== '').join('; ');
    const majority = noMajority.length === 0 ? '' : `; ${noMajority.map((s) => s.group).join(', ')} without a majority (no writes, no linearizable reads)`;
    lines.push({ worst: noMajority.length, text: `${owner}: ${list.length} shard ${list.length === 1 ? 'group' : 'groups'} with replicas on nodes that are not live (${groups} live)${majority}; ${where}` });
  }
  return lines.sort((a, b) => b.worst - a.worst).map((l) => l.text);
}

export type ShardConfStep = { readonly kind: 'change'; readonly change: ConfChange; readonly why: string } | { readonly kind: 'transfer'; readonly to: string; readonly why: string };

export interface ShardConfInput {
  readonly conf: ConfState;
  readonly desired: readonly string[];
  /** Learners whose log is close enough to the leader's to vote. */
  readonly caughtUp: ReadonlySet<string>;
  readonly leader: string;
}

export function planShardConf(i: ShardConfInput): ShardConfStep | undefined {
  const { conf, desired, leader } = i;
  const inConf = (n: string) => conf.voters.includes(n) || conf.learners.includes(n);
  for (const n of [...desired].sort()) if (!inConf(n)) return { kind: 'change', change: { type: 'addLearner', node: n }, why: `${n} takes a replica` };
  for (const n of [...conf.learners].sort()) {
    if (desired.includes(n) && i.caughtUp.has(n)) return { kind: 'change', change: { type: 'addVoter', node: n }, why: `${n} caught up` };
  }
  // Remove the replaced ones only once every desired replica votes: the majority never shrinks below the desired one.
  if (!desired.every((n) => conf.voters.includes(n))) return undefined;
  for (const n of [...conf.learners].sort()) if (!desired.includes(n)) return { kind: 'change', change: { type: 'removeNode', node: n }, why: `${n} no longer holds a replica` };
  for (const n of [...conf.voters].sort()) {
    if (desired.includes(n)) continue;
    if (n === leader) {
      const to = desired.filter((d) => d !== leader).sort()[0];
      return to === undefined ? undefined : { kind: 'transfer', to, why: `${leader} no longer holds a replica` };
    }
    return { kind: 'change', change: { type: 'removeNode', node: n }, why: `${n} no longer holds a replica` };
  }
  return undefined;
}
