// Where a collection's shard replicas go (pure): each shard on `replicationFactor` distinct
// nodes, spread over as many zones as there are, balanced by the replicas each node already
// holds. Ties break by node name, so every proposer computes the same map from the same
// inputs. Existing shards never move when nodes join (the spec): placement runs once, at
// create; repair and leave move single replicas (`replaceReplica`).
import { FirkinError } from '../core/errors.js';
import type { MetaState } from './meta-state.js';

export interface PlacementNode {
  readonly name: string;
  readonly zone: string;
  /** Replicas the node holds already (of every collection). */
  readonly replicas: number;
}

/**
 * Replicas for `numShards` shards. Greedy per replica: among the nodes not yet holding this
 * shard, prefer a zone the shard does not use yet, then the node with the fewest replicas,
 * then the name. Throws `unavailable` when fewer nodes than the replication factor are up.
 */
export function placeShards(numShards: number, replicationFactor: number, nodes: readonly PlacementNode[]): string[][] {
  if (!Number.isSafeInteger(numShards) || numShards < 1) throw new FirkinError('bad_request', `num_shards must be a positive integer, got ${numShards}`);
  if (!Number.isSafeInteger(replicationFactor) || replicationFactor < 1) throw new FirkinError('bad_request', `replication_factor must be a positive integer, got ${replicationFactor}`);
  if (nodes.length < replicationFactor) {
    throw new FirkinError('unavailable', `replication_factor ${replicationFactor} needs ${replicationFactor} live nodes; ${nodes.length} are up or suspect (${nodes.map((n) => n.name).join(', ') || 'none'})`);
  }
  const load = new Map(nodes.map((n) => [n.name, n.replicas]));
  const shards: string[][] = [];
  for (let s = 0; s < numShards; s++) {
    const chosen: PlacementNode[] = [];
    for (let r = 0; r < replicationFactor; r++) {
      const best = pickReplica(nodes, chosen, load);
      chosen.push(best);
      load.set(best.name, load.get(best.name)! + 1);
    }
    shards.push(chosen.map((n) => n.name));
  }
  return shards;
}

/** The node that should take over a replica of a shard now on `current` (minus the one leaving). */
export function replaceReplica(current: readonly string[], leaving: string, nodes: readonly PlacementNode[]): string {
  const staying = nodes.filter((n) => current.includes(n.name) && n.name !== leaving);
  const candidates = nodes.filter((n) => !current.includes(n.name));
  if (candidates.length === 0) throw new FirkinError('unavailable', `no healthy node outside ${current.join(', ')} can take a replica`);
  return pickReplica(candidates, staying, new Map(nodes.map((n) => [n.name, n.replicas]))).name;
}

function pickReplica(nodes: readonly PlacementNode[], chosen: readonly PlacementNode[], load: ReadonlyMap<string, number>): PlacementNode {
  const usedZones = new Set(chosen.map((n) => n.zone));
  const taken = new Set(chosen.map((n) => n.name));
  let best: PlacementNode | undefined;
  for (const n of nodes) {
    if (taken.has(n.name)) continue;
    if (best === undefined || better(n, best)) best = n;
  }
  return best!;

  function better(a: PlacementNode, b: PlacementNode): boolean {
    const newZoneA = !usedZones.has(a.zone);
    const newZoneB = !usedZones.has(b.zone);
    if (newZoneA !== newZoneB) return newZoneA;
    const la = load.get(a.name) ?? 0;
    const lb = load.get(b.name) ?? 0;
    if (la !== lb) return la < lb;
    return a.name < b.name;
  }
}

/** Replicas each node holds, over every collection and VDB. */
export function replicaLoad(state: MetaState): Map<string, number> {
  const held = new Map<string, number>();
  for (const owner of [...Object.values(state.collections), ...Object.values(state.vdbs)]) for (const s of owner.shards) for (const r of s.replicas) held.set(r, (held.get(r) ?? 0) + 1);
  return held;
}

/**
 * The nodes a new placement of `needed` replicas may use (only those in `zones`, when given),
 * with their load: the up ones, or, when fewer than `needed` are up, the suspect ones as well.
 * A node is suspect after a short silence (a busy machine, a GC pause); refusing a create for
 * that would fail users on a healthy cluster, and repair moves the replica if it goes down.
 * Too few: `bad_request` when the cluster has fewer members than `needed` at all (asking again
 * cannot help), `unavailable` when enough exist but some are down now. `field` names the
 * request's setting in the message.
 */
export function placementCandidates(state: MetaState, needed: number, zones: readonly string[] = [], field = 'replication_factor'): PlacementNode[] {
  const held = replicaLoad(state);
  const inZone = Object.values(state.nodes).filter((n) => zones.length === 0 || zones.includes(n.zone));
  const up = inZone.filter((n) => n.status === 'up');
  const usable = up.length >= needed ? up : inZone.filter((n) => n.status === 'up' || n.status === 'suspect');
  if (usable.length < needed) {
    const where = zones.length === 0 ? '' : ` in zones ${zones.join(', ')}`;
    const names = (ns: readonly { name: string }[]) => ns.map((n) => n.name).sort().join(', ') || 'none';
    // A leaving node takes no new replica and will be gone.
    const members = inZone.filter((n) => n.status !== 'left' && n.status !== 'leaving');
    if (members.length < needed) {
      throw new FirkinError('bad_request', `${field} ${needed} needs ${needed} nodes${where}; the cluster has ${members.length} (${names(members)}): add nodes or ask for fewer replicas`);
    }
    const away = members.filter((n) => !usable.includes(n));
    throw new FirkinError('unavailable', `${field} ${needed} needs ${needed} live nodes${where}; ${usable.length} are up or suspect (${names(usable)}), ${names(away)} ${away.length === 1 ? 'is' : 'are'} not: try again when they are back`);
  }
  return usable.map((n) => ({ name: n.name, zone: n.zone, replicas: held.get(n.name) ?? 0 }));
}
