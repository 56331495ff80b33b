// What the vector API needs to know about the cluster. A standalone node answers for itself;
// the cluster work provides another implementation of the same interface.
import { FirkinError } from '../core/errors.js';

export interface ClusterStatus {
  /** `joining`: cluster mode, not a member yet; `left`: it left its cluster. */
  state: 'standalone' | 'joining' | 'member' | 'left';
  is_leader: boolean;
  leader: string | null;
  node: string;
  nodes: string[];
  /** Members whose status is `up`. */
  healthy_nodes: string[];
}

export interface ReshardInfo {
  old_shards: number;
  new_shards: number;
  documents_migrated: number;
}

export interface VectorCluster {
  status(): ClusterStatus;
  nodes(): string[];
  leave(): Promise<{ status: 'leaving'; node: string }>;
  /** Called after the request is validated, the collection exists and the count differs. */
  reshard(collection: string, numShards: number): Promise<ReshardInfo>;
  /** The collection's current (or last) reshard job. */
  reshardStatus(collection: string): Promise<Record<string, unknown>>;
  /** Cancel a reshard before its switch. */
  cancelReshard(collection: string): Promise<Record<string, unknown>>;
}

/**
 * A node not in a cluster. With cluster mode off, leave and reshard are `not_clustered`; with
 * it on but the node not (yet) a member, leave is `not_member`.
 */
export function standaloneCluster(options: { nodeName: string; clusterEnabled: boolean }): VectorCluster {
  const notClustered = (what: string) =>
    new FirkinError('not_clustered', `${what} needs cluster mode; this node runs standalone (SERVICE_ENABLE_CLUSTER=false)`);
  return {
    status: () => ({ state: 'standalone', is_leader: false, leader: null, node: options.nodeName, nodes: [options.nodeName], healthy_nodes: [options.nodeName] }),
    nodes: () => [options.nodeName],
    async leave() {
      if (options.clusterEnabled) throw new FirkinError('not_member', `node ${options.nodeName} is not a member of a cluster`);
      throw notClustered('leaving a cluster');
    },
    async reshard() {
      throw notClustered('resharding');
    },
    async reshardStatus() {
      throw notClustered('resharding');
    },
    async cancelReshard() {
      throw notClustered('resharding');
    },
  };
}
