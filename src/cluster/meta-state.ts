// The metadata state machine: what every node of the cluster agrees on through the metadata
// Raft group. Pure: `applyMeta(state, command)` returns the next state and a result, with no
// clock, randomness or I/O inside. The proposer decides times and ids and puts them into the
// command, so every replica applying the same log reaches the same state.
//
// Raft membership (voters, learners) lives in the Raft core's conf state, not here: this
// holds what the cluster knows about each node (addresses, zone, health) and everything
// cluster-wide that is not data: API keys, gateway tenants and keys, and (for the shard
// issues) collection and VDB placements and jobs.
import type { ApiKeyRecord } from '../auth/api-keys.js';
import type { CollectionRecord, KeyRecord, Tenant } from '../gateway/types.js';
import { collectionQuotaError } from '../gateway/quota.js';
import { dictOf, isPlainObject } from '../core/values.js';
import { areAdjacent } from '../core/shard-hash.js';
import type { ConfState } from '../raft/types.js';

export const NODE_STATUSES = ['up', 'suspect', 'down', 'leaving', 'left'] as const;
export type NodeStatus = (typeof NODE_STATUSES)[number];
/** Statuses the failure detector moves between; `leaving` and `left` are the operator's. */
export const HEALTH_STATUSES = ['up', 'suspect', 'down'] as const;
export type HealthStatus = (typeof HEALTH_STATUSES)[number];

export interface NodeRecord {
  readonly name: string;
  /** Random id chosen once per data directory: tells a retried join from a name clash. */
  readonly incarnation: string;
  readonly http: string;
  readonly grpc: string;
  readonly zone: string;
  /** The Firkin version the node runs (its package version); absent in records of older nodes. */
  readonly version?: string;
  /** The cluster protocol it speaks (versions.ts); absent in records of older nodes (0). */
  readonly protocol?: number;
  readonly status: NodeStatus;
  readonly joinedAtMs: number;
  readonly statusSinceMs: number;
  /**
   * `nextShard` when this incarnation joined: every shard numbered below it was created before
   * it, so it is never among the replicas that bootstrap one (`bootstrapConf`); absent in
   * records written before 2026-11-29.
   */
  readonly shardFloor?: number;
}

/** One shard's Raft group as placed on nodes. */
export interface ShardPlacement {
  /** Cluster-wide shard number, never reused: names the group (`vs<n>`) and its local storage. */
  readonly number: number;
  readonly group: string;
  /** Hash range [from, to) of the ids it owns. */
  readonly range: readonly [number, number];
  /** The replicas it should have now (repair and leave change this). */
  readonly replicas: readonly string[];
  /** The replicas it was created on: they bootstrap the group; later ones join it empty. */
  readonly initial?: readonly string[];
  /** A VDB shard an operator made read-only: writes are refused, reads go on. */
  readonly readonly?: boolean;
  /**
   * A VDB shard merged into another: kept in the list so shard ids (positions) and `_changes`
   * cursors stay stable, but neither routed nor hosted (no replicas).
   */
  readonly retired?: boolean;
  /**
   * A retired shard's merge: the shard that took its range, and that shard's feed position
   * when the copy began ([0, 0]: its start). A `_changes` cursor from before the merge reads
   * the target from there, so the copies (later sequences) are not skipped.
   */
  readonly mergedInto?: { readonly shard: number; readonly from: readonly [number, number] };
}

export interface CollectionPlacement {
  readonly name: string;
  readonly config: Readonly<Record<string, unknown>>;
  readonly replicationFactor: number;
  /** Bumped on every change of the shard map (reshard, replica moves). */
  readonly epoch: number;
  readonly shards: readonly ShardPlacement[];
  /** A reshard's new shard groups, hosted and filled but not routed to until its switch. */
  readonly pending?: readonly ShardPlacement[];
}

/** Where a reshard stands; every transition is a metadata entry. */
export const RESHARD_STEPS = ['copying', 'catching_up', 'switching', 'cleaning', 'done', 'failed', 'cancelled'] as const;
export type ReshardStep = (typeof RESHARD_STEPS)[number];

/** One old shard's part of a reshard: the log index its copy started from, and how far its log was replayed. */
export interface ReshardSource {
  /** The source replica's applied index when its copy began: the tail starts after it. */
  readonly from: number | null;
  /** The copy finished. */
  readonly copied: boolean;
  readonly docs: number;
  /** Entries up to here were replayed into the new shards. */
  readonly tailed: number;
}

export interface ReshardDetail {
  readonly oldShards: number;
  readonly newShards: number;
  /** By old shard group. */
  readonly sources: Readonly<Record<string, ReshardSource>>;
  readonly migrated: number;
  /** Documents in the collection when the job began (what the progress counts toward). */
  readonly expected?: number;
  readonly endedAtMs?: number;
  readonly error?: string;
  /**
   * The switch attempt under way (or the last one): a number that only grows across the jobs of
   * the cluster (the proposer's metadata applied index when it entered `switching`). Its fence
   * and lift entries and its switch entry carry it (vector/fence.ts). Absent: a switch of the
   * builds before protocol 7, with no time bound.
   */
  readonly attempt?: number;
  /** Switches rolled back (`reshard.rollback`). */
  readonly rollbacks?: number;
  /** When the last rollback was recorded (the next attempt waits a backoff from here). */
  readonly rolledBackAtMs?: number;
  /**
   * A rollback was recorded and the old groups' fences may still be in force: the coordinator
   * lifts them before anything else, and the job cannot be cancelled until it has.
   */
  readonly lifting?: true;
}

/** What a clustered VDB is made with (decided by the proposer). */
export interface VdbConfig {
  readonly hashFunction: 'phash2' | 'xxhash';
  readonly replicaFactor: number;
  readonly zones: readonly string[];
  readonly createdMs: number;
}

/** A clustered VDB: shard i (its `shard_id`) is `shards[i]`, a Raft group `ds<n>`; `range` is [start, end] inclusive. */
export interface VdbPlacement {
  readonly name: string;
  readonly config: VdbConfig;
  readonly epoch: number;
  readonly shards: readonly ShardPlacement[];
  /** A split's new shard group: hosted and filled, not routed to until the switch appends it. */
  readonly pending?: ShardPlacement;
}

/** A split or merge of a clustered VDB shard (`Job.kind` `vdb-rebalance`); steps as a reshard's. */
export interface VdbRebalanceDetail {
  readonly op: 'split' | 'merge';
  /** The shard (id) giving up `moving`. */
  readonly source: number;
  /** The shard (id) taking it: the new one of a split, the merge target. */
  readonly target: number;
  /** The hash range [start, end] that moves. */
  readonly moving: readonly [number, number];
  /** The source's feed position (its sequence) the copy began after: catch-up reads from here. */
  readonly from: readonly [number, number] | null;
  /** A merge target's feed position when the copy began (see `ShardPlacement.mergedInto`). */
  readonly targetFrom?: readonly [number, number];
  /** Catch-up copied the source's changes up to here (the drain after the fence starts after it). */
  readonly caught?: readonly [number, number];
  /** Documents copied so far (a document copied again in catch-up counts again). */
  readonly copied: number;
  /** Documents the source held when the job began. */
  readonly expected?: number;
  /**
   * An operator asked to cancel (before the switch): from this entry the job takes no step
   * forward; its coordinator stops copying, undoes what it copied and ends it `cancelled`.
   */
  readonly cancelRequested?: true;
  readonly endedAtMs?: number;
  readonly error?: string;
  /** The switch attempt under way or the last one, as a reshard's (`ReshardDetail.attempt`). */
  readonly attempt?: number;
  /** Switches rolled back (`vdb.rebalance.rollback`). */
  readonly rollbacks?: number;
  /** When the last rollback was recorded. */
  readonly rolledBackAtMs?: number;
  /** A rollback was recorded and the source's fence may still be in force (no cancel until lifted). */
  readonly lifting?: true;
}

/** A long operation driven step by step by the metadata leader (leave now; reshard, repair later). */
export interface Job {
  readonly id: string;
  readonly kind: 'leave' | 'repair' | 'reshard' | 'vdb-rebalance';
  readonly target: string;
  readonly step: string;
  readonly createdAtMs: number;
  readonly updatedAtMs: number;
  /** A reshard's progress. */
  readonly reshard?: ReshardDetail;
  /** A VDB split's or merge's progress. */
  readonly vdb?: VdbRebalanceDetail;
}

export interface MetaState {
  readonly nodes: Readonly<Record<string, NodeRecord>>;
  /** docdb API keys by id (only digests are stored). */
  readonly apiKeys: Readonly<Record<string, ApiKeyRecord>>;
  readonly tenants: Readonly<Record<string, Tenant>>;
  /** Gateway keys by key id. */
  readonly tenantKeys: Readonly<Record<string, KeyRecord>>;
  /** Gateway tenant collections with their usage, by `tenantCollectionKey` (absent in older snapshots: empty). */
  readonly tenantCollections: Readonly<Record<string, CollectionRecord>>;
  readonly collections: Readonly<Record<string, CollectionPlacement>>;
  readonly vdbs: Readonly<Record<string, VdbPlacement>>;
  readonly jobs: Readonly<Record<string, Job>>;
  /** The next shard number a placement takes (absent in snapshots taken before placements: 0). */
  readonly nextShard: number;
}

// Every map of the state is keyed by names users and operators choose ("constructor" is a fine
// collection name): each is a `dictOf`, without a prototype, wherever it is made (here,
// `withEntry`, `without`, `canonicalMeta`, `checkMetaState`), so a lookup finds only real entries.
export const EMPTY_META: MetaState = { nodes: dictOf(), apiKeys: dictOf(), tenants: dictOf(), tenantKeys: dictOf(), tenantCollections: dictOf(), collections: dictOf(), vdbs: dictOf(), jobs: dictOf(), nextShard: 0 };

/** The key of a tenant collection in `tenantCollections` (tenant ids hold no NUL). */
export const tenantCollectionKey = (tenantId: string, name: string): string => `${tenantId}\u0000${name}`;

/** The group name of shard number `n`: a vector shard, or a document (VDB) shard. */
export const shardGroupName = (n: number): string => `vs${n}`;
export const docShardGroupName = (n: number): string => `ds${n}`;

export type ShardOwnerKind = 'collection' | 'vdb';

/** Every placed shard group with its owner: collections, then VDBs. */
export function shardOwners(state: MetaState): { kind: ShardOwnerKind; name: string; shards: readonly ShardPlacement[]; pending: readonly ShardPlacement[] }[] {
  return [
    ...Object.values(state.collections).map((c) => ({ kind: 'collection' as const, name: c.name, shards: c.shards, pending: c.pending ?? [] })),
    ...Object.values(state.vdbs).map((v) => ({ kind: 'vdb' as const, name: v.name, shards: v.shards, pending: v.pending === undefined ? [] : [v.pending] })),
  ];
}

/** Every shard of every collection and VDB, routed or pending (a reshard's, a split's). */
function everyShard(state: MetaState): ShardPlacement[] {
  return [...Object.values(state.collections).flatMap((c) => [...c.shards, ...(c.pending ?? [])]), ...Object.values(state.vdbs).flatMap((v) => (v.pending === undefined ? v.shards : [...v.shards, v.pending]))];
}

/** Every node placed in a shard of a collection or VDB, routed or pending. */
export function placedNodes(state: MetaState): Set<string> {
  return new Set(everyShard(state).flatMap((s) => s.replicas));
}

/**
 * Of `groups`, the ones this state shows deleted: numbered below `nextShard` (their creation
 * is applied here) and placed nowhere, neither routed with replicas nor pending (an owner
 * deleted, a merge or reshard ended). Shard numbers are never reused, so a deleted group never
 * comes back: a node that missed the deletion (out of the metadata group) may drop it.
 */
export function deletedGroups(state: MetaState, groups: readonly string[]): string[] {
  const placed = new Set(everyShard(state).filter((s) => s.replicas.length > 0).map((s) => s.group));
  return groups.filter((g) => {
    const n = /^[a-z]+(\d+)$/.exec(g)?.[1];
    return n !== undefined && Number(n) < state.nextShard && !placed.has(g);
  });
}

export type NodeAddress = Pick<NodeRecord, 'name' | 'incarnation' | 'http' | 'grpc' | 'zone' | 'version' | 'protocol'>;

export type MetaCommand =
  | { readonly type: 'node.join'; readonly node: NodeAddress; readonly atMs: number }
  | { readonly type: 'node.status'; readonly name: string; readonly status: HealthStatus; readonly atMs: number }
  | { readonly type: 'node.leave'; readonly name: string; readonly jobId: string; readonly atMs: number }
  | { readonly type: 'node.left'; readonly name: string; readonly atMs: number }
  /** An operator removes a node that is down and will not come back. */
  | { readonly type: 'node.remove'; readonly name: string; readonly atMs: number }
  | { readonly type: 'apikey.put'; readonly record: ApiKeyRecord }
  | { readonly type: 'apikey.revoke'; readonly id: string }
  | { readonly type: 'tenant.create'; readonly tenant: Tenant; readonly key: KeyRecord }
  | { readonly type: 'tenant.put'; readonly tenant: Tenant }
  | { readonly type: 'tenant.delete'; readonly tenantId: string }
  | { readonly type: 'tenantkey.put'; readonly key: KeyRecord }
  | { readonly type: 'tenantkey.delete'; readonly keyId: string }
  /** Refused past the tenant's max_collections: the collection count is exact cluster-wide. */
  | { readonly type: 'tenantcoll.create'; readonly record: CollectionRecord }
  /** Usage after a write, as deltas: concurrent writes through different nodes add up. */
  | { readonly type: 'tenantcoll.usage'; readonly tenantId: string; readonly name: string; readonly vectors: number; readonly bytes: number }
  /** Usage as counted again from the engine (after a write that failed half way). */
  | { readonly type: 'tenantcoll.recount'; readonly tenantId: string; readonly name: string; readonly vectors: number }
  | { readonly type: 'tenantcoll.delete'; readonly tenantId: string; readonly name: string }
  /** Replicas and hash ranges are decided by the proposer (`placement.ts`); shard numbers by the log. */
  | { readonly type: 'collection.create'; readonly name: string; readonly config: Readonly<Record<string, unknown>>; readonly replicationFactor: number; readonly shards: readonly { readonly range: readonly [number, number]; readonly replicas: readonly string[] }[] }
  | { readonly type: 'collection.delete'; readonly name: string }
  /** Repair or leave: the replica on `from` is to live on `to` (the shard's leader moves it). `kind` absent: a collection's. */
  | { readonly type: 'shard.replace'; readonly kind?: ShardOwnerKind; readonly collection: string; readonly group: string; readonly from: string; readonly to: string }
  /** As `shard.replace`, for a reshard's or split's pending group (protocol 8); routed by then, the move applies there. */
  | { readonly type: 'shard.replace.pending'; readonly kind?: ShardOwnerKind; readonly collection: string; readonly group: string; readonly from: string; readonly to: string }
  | { readonly type: 'vdb.create'; readonly name: string; readonly config: VdbConfig; readonly shards: readonly { readonly range: readonly [number, number]; readonly replicas: readonly string[] }[] }
  | { readonly type: 'vdb.delete'; readonly name: string }
  /** A shard made read-only or active again (by its index, the VDB's `shard_id`). */
  | { readonly type: 'vdb.status'; readonly name: string; readonly shard: number; readonly readonly: boolean }
  /** A reshard starts: the new groups are placed (pending) and the job recorded. Refused while one runs. */
  | { readonly type: 'reshard.begin'; readonly collection: string; readonly jobId: string; readonly atMs: number; readonly docs?: number; readonly shards: readonly { readonly range: readonly [number, number]; readonly replicas: readonly string[] }[] }
  /** Progress of one source (merged monotonically: a late report from a stale coordinator cannot undo a newer one). */
  | { readonly type: 'reshard.progress'; readonly jobId: string; readonly atMs: number; readonly step?: ReshardStep; readonly group?: string; readonly source?: Partial<ReshardSource>; readonly error?: string; readonly attempt?: number; readonly lifted?: number }
  /**
   * The switch: the collection routes to the new groups (the old ones are fenced and drained).
   * With `attempt` (protocol 7), only while that attempt is the one switching.
   */
  | { readonly type: 'reshard.switch'; readonly jobId: string; readonly atMs: number; readonly attempt?: number }
  /**
   * A switch that did not finish in time goes back to catching_up (only from switching, and only
   * its own attempt): no switch of that attempt can apply after it, so the old groups' fences
   * can be lifted. Protocol 7.
   */
  | { readonly type: 'reshard.rollback'; readonly jobId: string; readonly atMs: number; readonly attempt: number; readonly error: string }
  /** Cancel (before the switch) or fail: the pending groups go, the old ones stay authoritative. */
  | { readonly type: 'reshard.abort'; readonly jobId: string; readonly atMs: number; readonly step: 'cancelled' | 'failed'; readonly error?: string }
  /**
   * A VDB split or merge starts (refused while another runs on that VDB): the job is recorded
   * and a split's new shard group placed (pending). Ids, ranges and replicas are the proposer's.
   */
  | {
      readonly type: 'vdb.rebalance.begin';
      readonly name: string;
      readonly jobId: string;
      readonly atMs: number;
      readonly op: 'split' | 'merge';
      readonly source: number;
      readonly target: number;
      readonly moving: readonly [number, number];
      readonly docs?: number;
      readonly replicas?: readonly string[];
      /**
       * The source's (and a merge's target's) hash range as the proposer planned on them
       * (protocol 9, `REBALANCE_PLAN_PROTOCOL`): refused if the map changed since.
       */
      readonly planned?: { readonly source: readonly [number, number]; readonly target?: readonly [number, number] };
    }
  /**
   * Progress (monotonic: a stale coordinator's late report cannot undo a newer one). `cancel`:
   * an operator's cancel, taken only before the switching step; after it no step is taken.
   */
  | { readonly type: 'vdb.rebalance.progress'; readonly jobId: string; readonly atMs: number; readonly step?: 'catching_up' | 'switching'; readonly from?: readonly [number, number]; readonly targetFrom?: readonly [number, number]; readonly caught?: readonly [number, number]; readonly copied?: number; readonly error?: string; readonly cancel?: true; readonly attempt?: number; readonly lifted?: number }
  /**
   * The one switch entry: new ranges (a split appends its shard, a merge retires the source),
   * epoch + 1. With `attempt` (protocol 7), only while that attempt is the one switching.
   */
  | { readonly type: 'vdb.rebalance.switch'; readonly jobId: string; readonly atMs: number; readonly attempt?: number }
  /** A switch that did not finish in time goes back to catching_up, as a reshard's (protocol 7). */
  | { readonly type: 'vdb.rebalance.rollback'; readonly jobId: string; readonly atMs: number; readonly attempt: number; readonly error: string }
  /** Done after cleanup, or failed or cancelled (as asked) before the switch (the pending group goes, the ranges stay). */
  | { readonly type: 'vdb.rebalance.end'; readonly jobId: string; readonly atMs: number; readonly step: 'done' | 'failed' | 'cancelled'; readonly error?: string }
  | { readonly type: 'job.put'; readonly job: Job }
  | { readonly type: 'job.delete'; readonly id: string };

/**
 * Every command type, with the cluster protocol (versions.ts) of the first builds that read it.
 * A build that adds a type raises `PROTOCOL` and gives the type that number: the metadata
 * leader then logs it only while every live member speaks it (an older member could not apply
 * it, and would stop its metadata group until upgraded). Types from before protocols: 0.
 */
export const META_COMMAND_PROTOCOL: { readonly [T in MetaCommand['type']]: number } = {
  'node.join': 0, 'node.status': 0, 'node.leave': 0, 'node.left': 0, 'node.remove': 0, 'apikey.put': 0, 'apikey.revoke': 0,
  'tenant.create': 0, 'tenant.put': 0, 'tenant.delete': 0, 'tenantkey.put': 0, 'tenantkey.delete': 0,
  'tenantcoll.create': 0, 'tenantcoll.usage': 0, 'tenantcoll.recount': 0, 'tenantcoll.delete': 0, 'collection.create': 0, 'collection.delete': 0, 'shard.replace': 0, 'shard.replace.pending': 8, 'vdb.create': 0, 'vdb.delete': 0, 'vdb.status': 0, 'reshard.begin': 0, 'reshard.progress': 0, 'reshard.switch': 0, 'reshard.abort': 0, 'reshard.rollback': 7,
  'vdb.rebalance.begin': 0, 'vdb.rebalance.progress': 0, 'vdb.rebalance.switch': 0, 'vdb.rebalance.end': 0, 'vdb.rebalance.rollback': 7, 'job.put': 0, 'job.delete': 0,
};

export const META_COMMAND_TYPES = Object.keys(META_COMMAND_PROTOCOL) as readonly MetaCommand['type'][];

/** What applying a command answers its proposer. Errors are data: the log must not throw. */
// `unavailable`: refused by the metadata leader before the log (a command some member could not read).
export type MetaRefusal = 'conflict' | 'not_found' | 'already_exists' | 'quota_exceeded' | 'reshard_in_progress' | 'unavailable';
export type MetaResult = { readonly ok: true } | { readonly ok: false; readonly code: MetaRefusal; readonly message: string };

const OK: MetaResult = { ok: true };
const refuse = (code: MetaRefusal, message: string): MetaResult => ({ ok: false, code, message });

function withEntry<T>(map: Readonly<Record<string, T>>, key: string, value: T): Record<string, T> {
  const out = dictOf(Object.entries(map));
  out[key] = value;
  return out;
}

function without<T>(map: Readonly<Record<string, T>>, key: string): Record<string, T> {
  const out = dictOf(Object.entries(map));
  delete out[key];
  return out;
}

/**
 * The membership `node` (of data directory `incarnation`) bootstraps `shard`'s Raft group with,
 * or undefined: it opens the group empty and its leader adds it. Only a replica the shard was
 * created on bootstraps, and only the incarnation that was a member then: a node that joined
 * again under the same name on an empty directory, placed back on a group of its old self,
 * would start a second group of that name beside the real one (split brain; found by the
 * chaos runner, seed 76). A state still catching up shows an older incarnation's record: no.
 */
export function bootstrapConf(state: MetaState, shard: ShardPlacement, node: string, incarnation: string): ConfState | undefined {
  const initial = shard.initial ?? shard.replicas;
  const me = state.nodes[node];
  if (!initial.includes(node) || me === undefined || me.incarnation !== incarnation) return undefined;
  if (me.shardFloor !== undefined && shard.number < me.shardFloor) return undefined;
  return { voters: [...initial], learners: [] };
}

/** A node holding its name: anything but `left`. */
export function isLive(node: NodeRecord | undefined): node is NodeRecord {
  return node !== undefined && node.status !== 'left';
}

/** A node the failure detector counts down, or one no longer (or never) a member. */
export function isDownOrGone(node: NodeRecord | undefined): boolean {
  return node === undefined || node.status === 'down' || node.status === 'left';
}

export function applyMeta(state: MetaState, cmd: MetaCommand): { state: MetaState; result: MetaResult } {
  const same = (result: MetaResult) => ({ state, result });
  switch (cmd.type) {
    case 'node.join': {
      const old = state.nodes[cmd.node.name];
      if (isLive(old) && old.incarnation !== cmd.node.incarnation) {
        return same(refuse('conflict', `node name ${cmd.node.name} is held by another member (status ${old.status}); remove it first or pick another SERVICE_NODE_NAME`));
      }
      // A retried join, or a restart at a new address: keep the join time, refresh the rest.
      const joinedAtMs = isLive(old) ? old.joinedAtMs : cmd.atMs;
      const status: NodeStatus = isLive(old) && old.status === 'leaving' ? 'leaving' : 'up';
      const statusSinceMs = old !== undefined && old.status === status ? old.statusSinceMs : cmd.atMs;
      const shardFloor = isLive(old) ? old.shardFloor : state.nextShard;
      const node: NodeRecord = { ...cmd.node, status, joinedAtMs, statusSinceMs, ...(shardFloor === undefined ? {} : { shardFloor }) };
      return { state: { ...state, nodes: withEntry(state.nodes, node.name, node) }, result: OK };
    }
    case 'node.status': {
      const old = state.nodes[cmd.name];
      if (old === undefined) return same(refuse('not_found', `no node ${cmd.name}`));
      // The operator's statuses win over the failure detector's.
      if (old.status === 'leaving' || old.status === 'left' || old.status === cmd.status) return same(OK);
      const node: NodeRecord = { ...old, status: cmd.status, statusSinceMs: cmd.atMs };
      return { state: { ...state, nodes: withEntry(state.nodes, cmd.name, node) }, result: OK };
    }
    case 'node.leave': {
      const old = state.nodes[cmd.name];
      if (!isLive(old)) return same(refuse('not_found', `node ${cmd.name} is not a member`));
      if (old.status === 'leaving') return same(OK);
      const node: NodeRecord = { ...old, status: 'leaving', statusSinceMs: cmd.atMs };
      const job: Job = { id: cmd.jobId, kind: 'leave', target: cmd.name, step: 'leave_voters', createdAtMs: cmd.atMs, updatedAtMs: cmd.atMs };
      return { state: { ...state, nodes: withEntry(state.nodes, cmd.name, node), jobs: withEntry(state.jobs, job.id, job) }, result: OK };
    }
    case 'node.left':
    case 'node.remove': {
      const old = state.nodes[cmd.name];
      if (old === undefined) return same(refuse('not_found', `no node ${cmd.name}`));
      if (cmd.type === 'node.remove' && old.status !== 'down' && old.status !== 'left') {
        return same(refuse('conflict', `node ${cmd.name} is ${old.status}: only a down node can be removed (a live node leaves with POST /vectordb/cluster/leave)`));
      }
      if (old.status === 'left') return same(OK);
      const node: NodeRecord = { ...old, status: 'left', statusSinceMs: cmd.atMs };
      let jobs = state.jobs;
      for (const job of Object.values(jobs)) if (job.kind === 'leave' && job.target === cmd.name) jobs = without(jobs, job.id);
      return { state: { ...state, nodes: withEntry(state.nodes, cmd.name, node), jobs }, result: OK };
    }
    case 'apikey.put': {
      const clash = Object.values(state.apiKeys).find((r) => r.digest === cmd.record.digest && r.id !== cmd.record.id);
      if (clash !== undefined) return same(refuse('conflict', 'that key already exists'));
      return { state: { ...state, apiKeys: withEntry(state.apiKeys, cmd.record.id, cmd.record) }, result: OK };
    }
    case 'apikey.revoke':
      if (state.apiKeys[cmd.id] === undefined) return same(refuse('not_found', `no API key with id ${JSON.stringify(cmd.id)}`));
      return { state: { ...state, apiKeys: without(state.apiKeys, cmd.id) }, result: OK };
    case 'tenant.create':
      if (state.tenants[cmd.tenant.tenant_id] !== undefined) return same(refuse('already_exists', `tenant ${cmd.tenant.tenant_id} already exists`));
      return {
        state: { ...state, tenants: withEntry(state.tenants, cmd.tenant.tenant_id, cmd.tenant), tenantKeys: withEntry(state.tenantKeys, cmd.key.key_id, cmd.key) },
        result: OK,
      };
    case 'tenant.put':
      if (state.tenants[cmd.tenant.tenant_id] === undefined) return same(refuse('not_found', `no tenant ${cmd.tenant.tenant_id}`));
      return { state: { ...state, tenants: withEntry(state.tenants, cmd.tenant.tenant_id, cmd.tenant) }, result: OK };
    case 'tenant.delete': {
      if (state.tenants[cmd.tenantId] === undefined) return same(refuse('not_found', `no tenant ${cmd.tenantId}`));
      const tenantKeys: Record<string, KeyRecord> = {};
      for (const [id, k] of Object.entries(state.tenantKeys)) if (k.tenant_id !== cmd.tenantId) tenantKeys[id] = k;
      const tenantCollections: Record<string, CollectionRecord> = {};
      for (const [key, c] of Object.entries(state.tenantCollections)) if (c.tenant_id !== cmd.tenantId) tenantCollections[key] = c;
      return { state: { ...state, tenants: without(state.tenants, cmd.tenantId), tenantKeys, tenantCollections }, result: OK };
    }
    case 'tenantkey.put':
      if (state.tenants[cmd.key.tenant_id] === undefined) return same(refuse('not_found', `no tenant ${cmd.key.tenant_id}`));
      return { state: { ...state, tenantKeys: withEntry(state.tenantKeys, cmd.key.key_id, cmd.key) }, result: OK };
    case 'tenantkey.delete':
      if (state.tenantKeys[cmd.keyId] === undefined) return same(refuse('not_found', `no key ${cmd.keyId}`));
      return { state: { ...state, tenantKeys: without(state.tenantKeys, cmd.keyId) }, result: OK };
    case 'tenantcoll.create': {
      const r = cmd.record;
      const tenant = state.tenants[r.tenant_id];
      if (tenant === undefined) return same(refuse('not_found', `no tenant ${r.tenant_id}`));
      const key = tenantCollectionKey(r.tenant_id, r.name);
      if (state.tenantCollections[key] !== undefined) return same(refuse('already_exists', `collection ${JSON.stringify(r.name)} already exists`));
      const held = Object.values(state.tenantCollections).filter((c) => c.tenant_id === r.tenant_id).length;
      const refused = collectionQuotaError({ collection_count: held }, tenant.limits);
      if (refused !== undefined) return same(refuse('quota_exceeded', refused));
      return { state: { ...state, tenantCollections: withEntry(state.tenantCollections, key, r) }, result: OK };
    }
    case 'tenantcoll.usage':
    case 'tenantcoll.recount': {
      const key = tenantCollectionKey(cmd.tenantId, cmd.name);
      const old = state.tenantCollections[key];
      if (old === undefined) return same(refuse('not_found', `collection ${JSON.stringify(cmd.name)} not found`));
      const record: CollectionRecord =
        cmd.type === 'tenantcoll.usage'
          ? { ...old, vector_count: Math.max(0, old.vector_count + cmd.vectors), storage_bytes: Math.max(0, old.storage_bytes + cmd.bytes) }
          : { ...old, vector_count: Math.max(0, cmd.vectors) };
      return { state: { ...state, tenantCollections: withEntry(state.tenantCollections, key, record) }, result: OK };
    }
    case 'tenantcoll.delete': {
      const key = tenantCollectionKey(cmd.tenantId, cmd.name);
      if (state.tenantCollections[key] === undefined) return same(refuse('not_found', `collection ${JSON.stringify(cmd.name)} not found`));
      return { state: { ...state, tenantCollections: without(state.tenantCollections, key) }, result: OK };
    }
    case 'collection.create': {
      if (state.collections[cmd.name] !== undefined) return same(refuse('already_exists', `collection ${JSON.stringify(cmd.name)} already exists`));
      const shards: ShardPlacement[] = cmd.shards.map((sh, i) => ({ number: state.nextShard + i, group: shardGroupName(state.nextShard + i), range: sh.range, replicas: sh.replicas, initial: sh.replicas }));
      const placement: CollectionPlacement = { name: cmd.name, config: cmd.config, replicationFactor: cmd.replicationFactor, epoch: 1, shards };
      return { state: { ...state, collections: withEntry(state.collections, cmd.name, placement), nextShard: state.nextShard + shards.length }, result: OK };
    }
    case 'collection.delete': {
      if (state.collections[cmd.name] === undefined) return same(refuse('not_found', `collection ${JSON.stringify(cmd.name)} not found`));
      // A reshard of it ends with it (its pending groups go with the placement).
      let jobs = state.jobs;
      for (const j of Object.values(jobs)) {
        if (j.kind === 'reshard' && j.target === cmd.name && !isReshardEnded(j.step) && j.reshard !== undefined) jobs = withEntry(jobs, j.id, { ...j, step: 'failed', reshard: { ...j.reshard, error: 'the collection was deleted' } });
      }
      return { state: { ...state, collections: without(state.collections, cmd.name), jobs }, result: OK };
    }
    case 'shard.replace.pending': {
      // A pending group is hosted and filled before it is routed. Its replicas move as a routed
      // group's do: a node leaving or removed while the job runs would otherwise hold the job's
      // group short, and its leave would wait for the job (chaos seed 110).
      if (cmd.kind === 'vdb') {
        const v = state.vdbs[cmd.collection];
        if (v?.pending !== undefined && v.pending.group === cmd.group) {
          const moved = replicaMoved(v.pending, cmd.from, cmd.to);
          if ('ok' in moved) return same(moved);
          return { state: { ...state, vdbs: withEntry(state.vdbs, v.name, { ...v, epoch: v.epoch + 1, pending: moved }) }, result: OK };
        }
      } else {
        const c = state.collections[cmd.collection];
        const pending = c?.pending?.find((s) => s.group === cmd.group);
        if (c !== undefined && pending !== undefined) {
          const moved = replicaMoved(pending, cmd.from, cmd.to);
          if ('ok' in moved) return same(moved);
          return { state: { ...state, collections: withEntry(state.collections, c.name, { ...c, epoch: c.epoch + 1, pending: c.pending!.map((s) => (s.group === cmd.group ? moved : s)) }) }, result: OK };
        }
      }
      // The job switched meanwhile: the group is routed now.
      return applyMeta(state, { ...cmd, type: 'shard.replace' });
    }
    case 'shard.replace': {
      const owner = cmd.kind === 'vdb' ? state.vdbs[cmd.collection] : state.collections[cmd.collection];
      const shard = owner?.shards.find((s) => s.group === cmd.group);
      if (owner === undefined || shard === undefined) return same(refuse('not_found', `no shard ${cmd.group} in ${JSON.stringify(cmd.collection)}`));
      const moved = replicaMoved(shard, cmd.from, cmd.to);
      if ('ok' in moved) return same(moved);
      const shards = owner.shards.map((s) => (s.group === cmd.group ? moved : s));
      if (cmd.kind === 'vdb') {
        const v = state.vdbs[cmd.collection]!;
        return { state: { ...state, vdbs: withEntry(state.vdbs, v.name, { ...v, epoch: v.epoch + 1, shards }) }, result: OK };
      }
      const c = state.collections[cmd.collection]!;
      return { state: { ...state, collections: withEntry(state.collections, c.name, { ...c, epoch: c.epoch + 1, shards }) }, result: OK };
    }
    case 'vdb.create': {
      if (state.vdbs[cmd.name] !== undefined) return same(refuse('already_exists', `virtual database ${JSON.stringify(cmd.name)} already exists`));
      const shards: ShardPlacement[] = cmd.shards.map((sh, i) => ({ number: state.nextShard + i, group: docShardGroupName(state.nextShard + i), range: sh.range, replicas: sh.replicas, initial: sh.replicas }));
      const placement: VdbPlacement = { name: cmd.name, config: cmd.config, epoch: 1, shards };
      return { state: { ...state, vdbs: withEntry(state.vdbs, cmd.name, placement), nextShard: state.nextShard + shards.length }, result: OK };
    }
    case 'vdb.delete': {
      if (state.vdbs[cmd.name] === undefined) return same(refuse('not_found', `virtual database ${JSON.stringify(cmd.name)} does not exist`));
      // A split or merge of it ends with it (a pending group goes with the placement).
      let jobs = state.jobs;
      for (const j of Object.values(jobs)) {
        if (j.kind === 'vdb-rebalance' && j.target === cmd.name && !isReshardEnded(j.step) && j.vdb !== undefined) jobs = withEntry(jobs, j.id, { ...j, step: 'failed', vdb: { ...j.vdb, error: 'the virtual database was deleted' } });
      }
      return { state: { ...state, vdbs: without(state.vdbs, cmd.name), jobs }, result: OK };
    }
    case 'vdb.rebalance.begin':
    case 'vdb.rebalance.progress':
    case 'vdb.rebalance.switch':
    case 'vdb.rebalance.rollback':
    case 'vdb.rebalance.end':
      return applyVdbRebalance(state, cmd);
    case 'vdb.status': {
      const v = state.vdbs[cmd.name];
      if (v === undefined) return same(refuse('not_found', `virtual database ${JSON.stringify(cmd.name)} does not exist`));
      const shard = v.shards[cmd.shard];
      if (shard === undefined) return same(refuse('not_found', `shard ${cmd.shard} does not exist`));
      if ((shard.readonly === true) === cmd.readonly) return same(OK);
      const { readonly: _was, ...rest } = shard;
      const changed: ShardPlacement = cmd.readonly ? { ...rest, readonly: true } : rest;
      return { state: { ...state, vdbs: withEntry(state.vdbs, v.name, { ...v, epoch: v.epoch + 1, shards: v.shards.map((s, i) => (i === cmd.shard ? changed : s)) }) }, result: OK };
    }
    case 'reshard.begin': {
      const c = state.collections[cmd.collection];
      if (c === undefined) return same(refuse('not_found', `collection ${JSON.stringify(cmd.collection)} not found`));
      const running = Object.values(state.jobs).find((j) => j.kind === 'reshard' && j.target === cmd.collection && !isReshardEnded(j.step));
      if (running !== undefined || c.pending !== undefined) return same(refuse('reshard_in_progress', `collection ${JSON.stringify(cmd.collection)} is being resharded (job ${running?.id ?? '?'}, ${running?.step ?? 'pending'})`));
      if (cmd.shards.length === c.shards.length) return same(refuse('conflict', `collection ${JSON.stringify(cmd.collection)} already has ${c.shards.length} shards`));
      const pending: ShardPlacement[] = cmd.shards.map((sh, i) => ({ number: state.nextShard + i, group: shardGroupName(state.nextShard + i), range: sh.range, replicas: sh.replicas, initial: sh.replicas }));
      const sources: Record<string, ReshardSource> = {};
      for (const s of c.shards) sources[s.group] = { from: null, copied: false, docs: 0, tailed: 0 };
      // Finished reshard jobs of this collection give way to the new one.
      let jobs = state.jobs;
      for (const j of Object.values(jobs)) if (j.kind === 'reshard' && j.target === cmd.collection) jobs = without(jobs, j.id);
      const job: Job = { id: cmd.jobId, kind: 'reshard', target: cmd.collection, step: 'copying', createdAtMs: cmd.atMs, updatedAtMs: cmd.atMs, reshard: { oldShards: c.shards.length, newShards: pending.length, sources, migrated: 0, ...(cmd.docs === undefined ? {} : { expected: cmd.docs }) } };
      return {
        state: { ...state, collections: withEntry(state.collections, c.name, { ...c, pending }), jobs: withEntry(jobs, job.id, job), nextShard: state.nextShard + pending.length },
        result: OK,
      };
    }
    case 'reshard.progress': {
      const job = state.jobs[cmd.jobId];
      if (job?.reshard === undefined) return same(refuse('not_found', `no reshard job ${cmd.jobId}`));
      if (isReshardEnded(job.step)) return same(refuse('conflict', `reshard job ${cmd.jobId} is ${job.step}`));
      let detail = job.reshard;
      if (cmd.group !== undefined && cmd.source !== undefined) {
        const old = detail.sources[cmd.group];
        if (old === undefined) return same(refuse('not_found', `${cmd.group} is not a source of reshard job ${cmd.jobId}`));
        const next: ReshardSource = {
          from: old.from ?? cmd.source.from ?? null,
          copied: old.copied || cmd.source.copied === true,
          docs: Math.max(old.docs, cmd.source.docs ?? 0),
          tailed: Math.max(old.tailed, cmd.source.tailed ?? 0),
        };
        const sources = { ...detail.sources, [cmd.group]: next };
        detail = { ...detail, sources, migrated: Object.values(sources).reduce((n, s) => n + s.docs, 0) };
      }
      if (cmd.error !== undefined) detail = { ...detail, error: cmd.error };
      // The fences of the last rollback are lifted (a late report of an earlier one clears nothing).
      if (cmd.lifted !== undefined && cmd.lifted === detail.attempt && detail.lifting === true) detail = (({ lifting: _l, ...rest }) => rest)(detail);
      // Not back to switching before the last rollback's fences are lifted.
      if (cmd.step === 'switching' && detail.lifting === true) return same(refuse('conflict', `reshard job ${cmd.jobId} is still lifting the fences of its last switch`));
      const order = (s: string) => RESHARD_STEPS.indexOf(s as ReshardStep);
      // Steps only move forward: copying -> catching_up -> switching (the switch and abort
      // have their own commands), and cleaning -> done.
      const forward = cmd.step !== undefined && ((order(cmd.step) > order(job.step) && order(cmd.step) <= order('switching')) || (job.step === 'cleaning' && cmd.step === 'done'));
      const step = forward ? cmd.step! : job.step;
      if (step === 'done') detail = { ...detail, endedAtMs: cmd.atMs };
      // The attempt number comes with the step into switching (a later attempt, a larger number).
      if (forward && step === 'switching' && cmd.attempt !== undefined) detail = { ...detail, attempt: cmd.attempt };
      return { state: { ...state, jobs: withEntry(state.jobs, job.id, { ...job, step, updatedAtMs: cmd.atMs, reshard: detail }) }, result: OK };
    }
    case 'reshard.switch': {
      const job = state.jobs[cmd.jobId];
      if (job?.reshard === undefined) return same(refuse('not_found', `no reshard job ${cmd.jobId}`));
      if (job.step === 'cleaning' || job.step === 'done') return same(OK);
      if (isReshardEnded(job.step)) return same(refuse('conflict', `reshard job ${cmd.jobId} is ${job.step}`));
      if (cmd.attempt !== undefined && (job.step !== 'switching' || cmd.attempt !== job.reshard.attempt)) {
        return same(refuse('conflict', `switch attempt ${cmd.attempt} of reshard job ${cmd.jobId} was rolled back`));
      }
      const c = state.collections[job.target];
      if (c?.pending === undefined) return same(refuse('conflict', `collection ${JSON.stringify(job.target)} has no pending shards`));
      const { pending, ...rest } = c;
      const config = { ...c.config, num_shards: pending.length };
      const switched: CollectionPlacement = { ...rest, config, epoch: c.epoch + 1, shards: pending };
      return {
        state: { ...state, collections: withEntry(state.collections, c.name, switched), jobs: withEntry(state.jobs, job.id, { ...job, step: 'cleaning', updatedAtMs: cmd.atMs }) },
        result: OK,
      };
    }
    case 'reshard.rollback': {
      const job = state.jobs[cmd.jobId];
      if (job?.reshard === undefined) return same(refuse('not_found', `no reshard job ${cmd.jobId}`));
      if (job.step !== 'switching' || cmd.attempt !== job.reshard.attempt) return same(refuse('conflict', `reshard job ${cmd.jobId} is ${job.step}, not switching in attempt ${cmd.attempt}`));
      const detail: ReshardDetail = { ...job.reshard, rollbacks: (job.reshard.rollbacks ?? 0) + 1, rolledBackAtMs: cmd.atMs, lifting: true, error: cmd.error };
      return { state: { ...state, jobs: withEntry(state.jobs, job.id, { ...job, step: 'catching_up', updatedAtMs: cmd.atMs, reshard: detail }) }, result: OK };
    }
    case 'reshard.abort': {
      const job = state.jobs[cmd.jobId];
      if (job?.reshard === undefined) return same(refuse('not_found', `no reshard job ${cmd.jobId}`));
      if (job.step === 'cleaning' || job.step === 'done') {
        if (cmd.step === 'cancelled') return same(refuse('conflict', `reshard job ${cmd.jobId} already switched the collection; it cannot be cancelled`));
        return same(OK);
      }
      // Recorded as switching, its coordinator may have fenced the old groups (a fence is never
      // lifted): a cancel that lost the race to this step would leave the collection unwritable.
      if (cmd.step === 'cancelled' && job.step === 'switching') return same(refuse('conflict', `reshard job ${cmd.jobId} is switching; it can no longer be cancelled`));
      if (cmd.step === 'cancelled' && job.reshard.lifting === true) return same(refuse('conflict', `reshard job ${cmd.jobId} is lifting the fences of a rolled-back switch; cancel it again in a moment`));
      if (isReshardEnded(job.step)) return same(OK);
      const c = state.collections[job.target];
      const collections = c?.pending === undefined ? state.collections : withEntry(state.collections, c.name, (({ pending: _p, ...rest }) => rest)(c));
      const ended: Job = { ...job, step: cmd.step, updatedAtMs: cmd.atMs, reshard: { ...job.reshard, endedAtMs: cmd.atMs, ...(cmd.error === undefined ? {} : { error: cmd.error }) } };
      return { state: { ...state, collections, jobs: withEntry(state.jobs, job.id, ended) }, result: OK };
    }
    case 'job.put':
      return { state: { ...state, jobs: withEntry(state.jobs, cmd.job.id, cmd.job) }, result: OK };
    case 'job.delete':
      return { state: { ...state, jobs: without(state.jobs, cmd.id) }, result: OK };
  }
}

/** `a` is a sequence after `b` (or `b` is none). */
function laterSeq(a: readonly [number, number] | undefined, b: readonly [number, number] | undefined): a is readonly [number, number] {
  if (a === undefined) return false;
  return b === undefined || a[0] > b[0] || (a[0] === b[0] && a[1] > b[1]);
}

type VdbRebalanceCommand = Extract<MetaCommand, { type: `vdb.rebalance.${string}` }>;

const sameRange = (a: readonly [number, number], b: readonly [number, number]): boolean => a[0] === b[0] && a[1] === b[1];

/**
 * Why a split or merge planned on `planned` cannot run on the map as it is (undefined: it can).
 * A node plans on its copy of the metadata, which may lag: one just restarted merged shard 4
 * into shard 3 after a split had put shard 5 between them, and the widened shard 3 then
 * overlapped shard 5: shard 5's documents were routed to shard 3, which did not hold them (chaos
 * seed 134: reads answered not found, an acknowledged write was hidden). The log decides instead.
 */
function stalePlan(cmd: { readonly op: 'split' | 'merge'; readonly source: number; readonly target: number; readonly moving: readonly [number, number] }, planned: NonNullable<Extract<MetaCommand, { type: 'vdb.rebalance.begin' }>['planned']>, source: ShardPlacement, target: ShardPlacement | undefined): string | undefined {
  const again = 'the map changed since it was planned: ask again';
  if (!sameRange(source.range, planned.source)) return `shard ${cmd.source} holds ${showRange(source.range)} now, not ${showRange(planned.source)}: ${again}`;
  if (cmd.op === 'merge' && (target === undefined || planned.target === undefined || !sameRange(target.range, planned.target))) {
    return `shard ${cmd.target} holds ${target === undefined ? 'nothing' : showRange(target.range)} now, not ${planned.target === undefined ? 'what was planned' : showRange(planned.target)}: ${again}`;
  }
  return rebalanceMisfit(cmd, source.range, target?.range);
}

/** A hash range as messages show it. */
export const showRange = (r: readonly [number, number]): string => `[${r[0]}, ${r[1]}]`;

/**
 * Why a split or merge does not fit these ranges (undefined: it does): a merge's shards must be
 * adjacent and it moves all of its source; a split moves its source's upper part. The log
 * checks it on a planned begin, the coordinator before every step up to the switch.
 */
export function rebalanceMisfit(job: { readonly op: 'split' | 'merge'; readonly source: number; readonly target: number; readonly moving: readonly [number, number] }, source: readonly [number, number], target: readonly [number, number] | undefined): string | undefined {
  const { moving } = job;
  if (job.op === 'split') {
    return moving[1] === source[1] && moving[0] > source[0] && moving[0] <= moving[1] ? undefined : `a split of shard ${job.source} ${showRange(source)} cannot move ${showRange(moving)}`;
  }
  if (target === undefined || !areAdjacent({ shardId: job.source, start: source[0], end: source[1] }, { shardId: job.target, start: target[0], end: target[1] })) {
    return `shards ${job.source} ${showRange(source)} and ${job.target} ${target === undefined ? 'nothing' : showRange(target)} are not adjacent in hash space`;
  }
  return sameRange(moving, source) ? undefined : `a merge of shard ${job.source} ${showRange(source)} cannot move ${showRange(moving)}`;
}

/** The job of a VDB split or merge (see `cluster/vdb-rebalance.ts`). */
function applyVdbRebalance(state: MetaState, cmd: VdbRebalanceCommand): { state: MetaState; result: MetaResult } {
  const same = (result: MetaResult) => ({ state, result });
  const putVdb = (s: MetaState, v: VdbPlacement): Record<string, VdbPlacement> => withEntry(s.vdbs, v.name, v);
  if (cmd.type === 'vdb.rebalance.begin') {
    const v = state.vdbs[cmd.name];
    if (v === undefined) return same(refuse('not_found', `virtual database ${JSON.stringify(cmd.name)} does not exist`));
    const running = Object.values(state.jobs).find((j) => j.kind === 'vdb-rebalance' && j.target === cmd.name && !isReshardEnded(j.step));
    if (running !== undefined || v.pending !== undefined) return same(refuse('conflict', `virtual database ${JSON.stringify(cmd.name)} is already being rebalanced (job ${running?.id ?? '?'}, ${running?.step ?? 'pending'})`));
    const source = v.shards[cmd.source];
    if (source === undefined || source.retired === true) return same(refuse('not_found', `shard ${cmd.source} does not exist`));
    if (source.readonly === true) return same(refuse('conflict', `shard ${cmd.source} is readonly, not active`));
    if (cmd.op === 'merge') {
      const target = v.shards[cmd.target];
      if (target === undefined || target.retired === true) return same(refuse('not_found', `target shard ${cmd.target} does not exist`));
      if (target.readonly === true) return same(refuse('conflict', `shard ${cmd.target} is readonly, not active`));
    } else if (cmd.target !== v.shards.length || cmd.replicas === undefined) {
      return same(refuse('conflict', `a split's new shard must be shard ${v.shards.length} with its replicas`));
    }
    const stale = cmd.planned === undefined ? undefined : stalePlan(cmd, cmd.planned, source, v.shards[cmd.target]);
    if (stale !== undefined) return same(refuse('conflict', stale));
    const pending: ShardPlacement | undefined =
      cmd.op === 'split' ? { number: state.nextShard, group: docShardGroupName(state.nextShard), range: cmd.moving, replicas: cmd.replicas!, initial: cmd.replicas! } : undefined;
    // Ended rebalance jobs of this VDB give way to the new one.
    let jobs = state.jobs;
    for (const j of Object.values(jobs)) if (j.kind === 'vdb-rebalance' && j.target === cmd.name) jobs = without(jobs, j.id);
    const job: Job = {
      id: cmd.jobId,
      kind: 'vdb-rebalance',
      target: cmd.name,
      step: 'copying',
      createdAtMs: cmd.atMs,
      updatedAtMs: cmd.atMs,
      vdb: { op: cmd.op, source: cmd.source, target: cmd.target, moving: cmd.moving, from: null, copied: 0, ...(cmd.docs === undefined ? {} : { expected: cmd.docs }) },
    };
    return {
      state: { ...state, vdbs: putVdb(state, pending === undefined ? v : { ...v, pending }), jobs: withEntry(jobs, job.id, job), nextShard: state.nextShard + (pending === undefined ? 0 : 1) },
      result: OK,
    };
  }
  const job = state.jobs[cmd.jobId];
  const detail = job?.vdb;
  if (job === undefined || detail === undefined) return same(refuse('not_found', `no VDB rebalance job ${cmd.jobId}`));
  const v = state.vdbs[job.target];
  switch (cmd.type) {
    case 'vdb.rebalance.progress': {
      if (isReshardEnded(job.step) || job.step === 'cleaning') return same(refuse('conflict', `job ${cmd.jobId} is ${job.step}`));
      // Once the switching step is recorded the source may be fenced: only the switch undoes that.
      if (cmd.cancel === true && job.step !== 'copying' && job.step !== 'catching_up') return same(refuse('conflict', `job ${cmd.jobId} is ${job.step}: it can no longer be cancelled`));
      if (cmd.cancel === true && detail.lifting === true) return same(refuse('conflict', `job ${cmd.jobId} is lifting the fence of a rolled-back switch; cancel it again in a moment`));
      const order = (s: string) => RESHARD_STEPS.indexOf(s as ReshardStep);
      const advances = cmd.step !== undefined && order(cmd.step) > order(job.step);
      if (advances && detail.cancelRequested === true) return same(refuse('conflict', `job ${cmd.jobId} is being cancelled`));
      if (advances && cmd.step === 'switching' && detail.lifting === true) return same(refuse('conflict', `job ${cmd.jobId} is still lifting the fence of its last switch`));
      const step = advances ? cmd.step! : job.step;
      // The fence of the last rollback is lifted (a late report of an earlier one clears nothing).
      const lifted = cmd.lifted !== undefined && cmd.lifted === detail.attempt && detail.lifting === true;
      const { lifting: _l, ...unlifted } = detail;
      const next: VdbRebalanceDetail = {
        ...(lifted ? unlifted : detail),
        // The attempt number comes with the step into switching.
        ...(advances && step === 'switching' && cmd.attempt !== undefined ? { attempt: cmd.attempt } : {}),
        ...(cmd.cancel === true ? { cancelRequested: true as const } : {}),
        from: detail.from ?? cmd.from ?? null,
        ...(detail.targetFrom === undefined && cmd.targetFrom !== undefined ? { targetFrom: cmd.targetFrom } : {}),
        ...(laterSeq(cmd.caught, detail.caught) ? { caught: cmd.caught } : {}),
        copied: Math.max(detail.copied, cmd.copied ?? 0),
        ...(cmd.error === undefined ? {} : { error: cmd.error }),
      };
      return { state: { ...state, jobs: withEntry(state.jobs, job.id, { ...job, step, updatedAtMs: cmd.atMs, vdb: next }) }, result: OK };
    }
    case 'vdb.rebalance.switch': {
      if (job.step === 'cleaning' || job.step === 'done') return same(OK);
      if (job.step !== 'switching') return same(refuse('conflict', `job ${cmd.jobId} is ${job.step}, not switching`));
      if (cmd.attempt !== undefined && cmd.attempt !== detail.attempt) return same(refuse('conflict', `switch attempt ${cmd.attempt} of job ${cmd.jobId} was rolled back`));
      if (v === undefined) return same(refuse('not_found', `virtual database ${JSON.stringify(job.target)} does not exist`));
      const source = v.shards[detail.source]!;
      let shards: ShardPlacement[];
      if (detail.op === 'split') {
        if (v.pending === undefined) return same(refuse('conflict', `virtual database ${JSON.stringify(v.name)} has no pending shard`));
        shards = [...v.shards.map((s, i) => (i === detail.source ? { ...s, range: [source.range[0], detail.moving[0] - 1] as const } : s)), v.pending];
      } else {
        const target = v.shards[detail.target]!;
        const range = [Math.min(source.range[0], target.range[0]), Math.max(source.range[1], target.range[1])] as const;
        shards = v.shards.map((s, i) => (i === detail.target ? { ...s, range } : i === detail.source ? { ...s, retired: true, mergedInto: { shard: detail.target, from: detail.targetFrom ?? ([0, 0] as const) } } : s));
      }
      const { pending: _p, ...rest } = v;
      return {
        state: { ...state, vdbs: putVdb(state, { ...rest, epoch: v.epoch + 1, shards }), jobs: withEntry(state.jobs, job.id, { ...job, step: 'cleaning', updatedAtMs: cmd.atMs }) },
        result: OK,
      };
    }
    case 'vdb.rebalance.rollback': {
      if (job.step !== 'switching' || cmd.attempt !== detail.attempt) return same(refuse('conflict', `job ${cmd.jobId} is ${job.step}, not switching in attempt ${cmd.attempt}`));
      const next: VdbRebalanceDetail = { ...detail, rollbacks: (detail.rollbacks ?? 0) + 1, rolledBackAtMs: cmd.atMs, lifting: true, error: cmd.error };
      return { state: { ...state, jobs: withEntry(state.jobs, job.id, { ...job, step: 'catching_up', updatedAtMs: cmd.atMs, vdb: next }) }, result: OK };
    }
    case 'vdb.rebalance.end': {
      if (isReshardEnded(job.step)) return same(OK);
      if (cmd.step === 'done' && job.step !== 'cleaning') return same(refuse('conflict', `job ${cmd.jobId} is ${job.step}: it is done only after its switch`));
      if (cmd.step !== 'done' && job.step === 'cleaning') return same(refuse('conflict', `job ${cmd.jobId} already switched; it can only finish`));
      // A cancel is only taken before switching, and no step is taken after it.
      if (cmd.step === 'cancelled' && detail.cancelRequested !== true) return same(refuse('conflict', `job ${cmd.jobId} is ${job.step} and no cancel was taken before its switch`));
      let vdbs = v?.pending === undefined ? state.vdbs : putVdb(state, (({ pending: _p, ...rest }) => rest)(v));
      // A merge's cleanup: the retired source leaves the placement (every node drops its replica).
      const merged = vdbs[job.target];
      if (cmd.step === 'done' && detail.op === 'merge' && merged !== undefined) {
        vdbs = putVdb({ ...state, vdbs }, { ...merged, shards: merged.shards.map((s, i) => (i === detail.source ? { ...s, replicas: [] } : s)) });
      }
      const ended: Job = { ...job, step: cmd.step, updatedAtMs: cmd.atMs, vdb: { ...detail, endedAtMs: cmd.atMs, ...(cmd.error === undefined ? {} : { error: cmd.error }) } };
      return { state: { ...state, vdbs, jobs: withEntry(state.jobs, job.id, ended) }, result: OK };
    }
  }
}

/** `shard` with its replica on `from` placed on `to` instead, or why not. */
function replicaMoved(shard: ShardPlacement, from: string, to: string): ShardPlacement | MetaResult {
  if (!shard.replicas.includes(from)) return refuse('conflict', `${from} holds no replica of ${shard.group}`);
  if (shard.replicas.includes(to)) return refuse('conflict', `${to} already holds a replica of ${shard.group}`);
  return { ...shard, initial: shard.initial ?? shard.replicas, replicas: shard.replicas.map((r) => (r === from ? to : r)) };
}

/** A reshard that stopped (the collection is not being changed any more). */
export function isReshardEnded(step: string): boolean {
  return step === 'done' || step === 'failed' || step === 'cancelled';
}

/**
 * The last index a shard group's log may be compacted to while a running reshard still has
 * to replay it (the tail reads the entries after it), or undefined when none has. A log
 * compacted past that point cannot be replayed: once the old groups are fenced that would
 * leave the collection refusing writes for good. From the job's start until its copy has
 * recorded where it read the group (`from`), the whole log is held (0): the copy reads the
 * state at some index first and records it after, and the writes in between must stay.
 */
export function reshardLogFloor(state: MetaState, group: string): number | undefined {
  let floor: number | undefined;
  for (const job of Object.values(state.jobs)) {
    const source = job.reshard?.sources[group];
    if (source === undefined || isReshardEnded(job.step)) continue;
    const replayedTo = source.from === null ? 0 : Math.max(source.from, source.tailed);
    floor = floor === undefined ? replayedTo : Math.min(floor, replayedTo);
  }
  return floor;
}

/** Canonical form for snapshots and digests: every map with its keys sorted. */
export function canonicalMeta(state: MetaState): MetaState {
  const sorted = <T>(m: Readonly<Record<string, T>>): Record<string, T> => dictOf(Object.entries(m).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
  return {
    nodes: sorted(state.nodes),
    apiKeys: sorted(state.apiKeys),
    tenants: sorted(state.tenants),
    tenantKeys: sorted(state.tenantKeys),
    tenantCollections: sorted(state.tenantCollections),
    collections: sorted(state.collections),
    vdbs: sorted(state.vdbs),
    jobs: sorted(state.jobs),
    nextShard: state.nextShard,
  };
}

/** Shape check of a decoded snapshot or command (data from disk or the wire). */
export function checkMetaState(value: unknown): MetaState {
  const v = value as Record<string, unknown>;
  const maps = ['nodes', 'apiKeys', 'tenants', 'tenantKeys', 'collections', 'vdbs', 'jobs'] as const;
  if (typeof v !== 'object' || v === null || maps.some((m) => typeof v[m] !== 'object' || v[m] === null || Array.isArray(v[m]))) {
    throw new Error('metadata snapshot: not a metadata state');
  }
  const dict = <T>(m: unknown): Record<string, T> => dictOf(Object.entries((isPlainObject(m) ? m : {}) as Record<string, T>));
  const s = v as unknown as MetaState;
  return {
    ...s,
    nodes: dict(s.nodes),
    apiKeys: dict(s.apiKeys),
    tenants: dict(s.tenants),
    tenantKeys: dict(s.tenantKeys),
    tenantCollections: dict(v.tenantCollections),
    collections: dict(s.collections),
    vdbs: dict(s.vdbs),
    jobs: dict(s.jobs),
    nextShard: typeof v.nextShard === 'number' ? v.nextShard : 0,
  };
}

export function checkMetaCommand(value: unknown): MetaCommand {
  const v = value as Record<string, unknown>;
  if (typeof v !== 'object' || v === null || !(META_COMMAND_TYPES as readonly unknown[]).includes(v.type)) {
    throw new Error(`metadata command: unknown type ${JSON.stringify((v as { type?: unknown } | null)?.type)}`);
  }
  if (v.type === 'collection.create') {
    const shards = v.shards as unknown;
    const ok =
      typeof v.name === 'string' &&
      typeof v.config === 'object' && v.config !== null &&
      typeof v.replicationFactor === 'number' &&
      Array.isArray(shards) && shards.length > 0 &&
      shards.every((sh: { range?: unknown; replicas?: unknown }) => Array.isArray(sh?.range) && sh.range.length === 2 && sh.range.every((x) => typeof x === 'number') && Array.isArray(sh.replicas) && sh.replicas.every((r) => typeof r === 'string'));
    if (!ok) throw new Error('metadata command: malformed collection.create');
  }
  if (v.type === 'vdb.create') {
    const shards = v.shards as unknown;
    const c = v.config as Partial<VdbConfig> | null;
    const ok =
      typeof v.name === 'string' &&
      typeof c === 'object' && c !== null && (c.hashFunction === 'phash2' || c.hashFunction === 'xxhash') && typeof c.replicaFactor === 'number' && Array.isArray(c.zones) && typeof c.createdMs === 'number' &&
      Array.isArray(shards) && shards.length > 0 &&
      shards.every((sh: { range?: unknown; replicas?: unknown }) => Array.isArray(sh?.range) && sh.range.length === 2 && sh.range.every((x) => typeof x === 'number') && Array.isArray(sh.replicas) && sh.replicas.every((r) => typeof r === 'string'));
    if (!ok) throw new Error('metadata command: malformed vdb.create');
  }
  return v as unknown as MetaCommand;
}
