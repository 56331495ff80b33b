// Which Firkin each member runs, as the metadata records it (each node writes its own version
// and protocol into its record when it joins or restarts on another build). Members on
// different versions are a rolling upgrade under way, or one forgotten: /health says so until
// every member runs the same build. A request that needs what only newer members serve is
// refused with a clear error while an older one is a member (`requireProtocol`), rather than
// sent to a node that answers it with an error of its own.
import { FirkinError } from '../core/errors.js';
import type { NodeRecord } from './meta-state.js';

/**
 * The cluster protocol this build speaks: raised when members start asking each other for
 * something an earlier build cannot serve. 1: a VDB shard's `all` and `keys` reads
 * (`_all_docs`). 2: the members' task lists and import cancels (`tasks.*`, peer-tasks.ts).
 * 3: CouchDB's replication protocol on a VDB (a shard's `rdiff`, `bget`, `lget` reads, leaves
 * in its `changes`, and `local` log entries, which an older replica cannot decode).
 * 4: a VDB split or merge carries the moving range's `_local` documents (a shard's `locals`
 * read and `locals` log entries), and a VDB's `_local_docs` (the same read).
 * 5: Raft `vouch` entries for a replica that opened empty (`VOUCH_PROTOCOL`).
 * 6: a VDB shard's `explain` read (`_explain` on a VDB).
 * 7: a reshard's numbered fences and their lifts in a vector shard's log, and the metadata's
 * `reshard.rollback` (a switch that runs out of time is rolled back: cluster/reshard.ts).
 * 8: the metadata's `shard.replace.pending` (a running reshard's or split's pending group is
 * repaired: `PENDING_REPAIR_PROTOCOL`), and a vector shard's `proposeMany` (a reshard's replay
 * sends a new group its part of a tail batch in one call: `REPLAY_RUN_PROTOCOL`).
 * 9: a VDB split's or merge's `vdb.rebalance.begin` names the ranges it was planned on, and
 * the metadata refuses it when the map changed since (`REBALANCE_PLAN_PROTOCOL`).
 * A record without one is from a build before protocols: 0.
 */
export const PROTOCOL = 9;

/**
 * A split or merge names the ranges it was planned on only while every member speaks this: an
 * older member ignores the field and would begin a job the others refuse (their states would part).
 */
export const REBALANCE_PLAN_PROTOCOL = 9;

/** The metadata leader moves the replicas of pending groups only while every member reads `shard.replace.pending`. */
export const PENDING_REPAIR_PROTOCOL = 8;

/** A reshard replays in runs (`vshard.proposeMany`) only while every member answers it; before, one call per command. */
export const REPLAY_RUN_PROTOCOL = 8;

/**
 * Leaders vouch for replicas that opened empty (raft/core.ts `catchingUp`) only while every
 * member speaks this: an older replica cannot decode a `vouch` entry, and an older leader
 * never writes one (a fresh replica then follows the catch-up rule from before).
 */
export const VOUCH_PROTOCOL = 5;

type ProtocolNode = Pick<NodeRecord, 'name' | 'version' | 'protocol'>;

/** Why `what` cannot be done while these members run (undefined: every one speaks at least `needed`). */
export function protocolShortfall(nodes: readonly ProtocolNode[], needed: number, what: string): string | undefined {
  const behind = nodes.filter((n) => (n.protocol ?? 0) < needed);
  if (behind.length === 0) return undefined;
  const named = behind.map((n) => `${n.name} (${n.version ?? UNKNOWN_VERSION})`).join(', ');
  return `${what} needs every member on cluster protocol ${needed} or later; ${named} ${behind.length === 1 ? 'runs' : 'run'} an older Firkin: finish the rolling upgrade`;
}

/** Refuses `what` (503) unless every live member speaks at least `needed`. */
export function requireProtocol(nodes: readonly ProtocolNode[], needed: number, what: string): void {
  const shortfall = protocolShortfall(nodes, needed, what);
  if (shortfall !== undefined) throw new FirkinError('unavailable', shortfall);
}

/** A record written by a node older than the versions in the records: it wrote none. */
export const UNKNOWN_VERSION = 'older (unrecorded)';

/** The live members by the version they run, versions in a stable order, names sorted. */
export function membersByVersion(nodes: readonly Pick<NodeRecord, 'name' | 'version'>[]): Map<string, string[]> {
  const byVersion = new Map<string, string[]>();
  for (const n of [...nodes].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))) {
    const v = n.version ?? UNKNOWN_VERSION;
    byVersion.set(v, [...(byVersion.get(v) ?? []), n.name]);
  }
  return new Map([...byVersion].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

/** The /health problem when the members run more than one version; undefined when they agree. */
export function mixedVersionsProblem(nodes: readonly Pick<NodeRecord, 'name' | 'version'>[]): string | undefined {
  const byVersion = membersByVersion(nodes);
  if (byVersion.size <= 1) return undefined;
  const parts = [...byVersion].map(([v, names]) => `${names.join(', ')} on ${v}`);
  return `members run different versions (${parts.join('; ')}): finish the rolling upgrade, as a newer node's requests may be refused by an older one`;
}
