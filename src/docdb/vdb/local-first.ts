// A cluster node's VDBs: the cluster's, plus the node-local ones it made while standalone. A
// node that starts in cluster mode on a standalone node's data keeps serving its VDBs there,
// as it keeps its plain databases and its collections made before cluster mode (the vector
// engine looks a name up locally first too); before, they vanished from `/vdb` and their
// shards showed as plain databases.
import { FirkinError } from '../../core/errors.js';
import type { VdbService } from './service.js';

/** `local`'s VDBs by their names, every other name `cluster`'s; a new VDB is the cluster's. */
export function localFirstVdbs(local: VdbService, cluster: VdbService): VdbService {
  const of = (name: string): VdbService => (local.has(name) ? local : cluster);
  return {
    create: async (spec) => {
      // The cluster may make this name elsewhere (a node knows only its own); here it would
      // be shadowed by the local one, so it is refused where it can be seen.
      if (local.has(spec.name)) throw new FirkinError('conflict', `virtual database ${JSON.stringify(spec.name)} already exists (node-local: made before this node joined its cluster)`);
      return cluster.create(spec);
    },
    list: () => [...new Set([...local.list(), ...cluster.list()])].sort(),
    has: (name) => local.has(name) || cluster.has(name),
    info: (name) => of(name).info(name),
    delete: (name) => of(name).delete(name),
    shards: (name) => of(name).shards(name),
    replication: (name) => of(name).replication(name),
    import: (name, spec) => of(name).import(name, spec),
    split: (name, shardId, batchSize) => of(name).split(name, shardId, batchSize),
    merge: (name, shardId, targetShard, batchSize) => of(name).merge(name, shardId, targetShard, batchSize),
    cancelRebalance: (name) => of(name).cancelRebalance(name),
    setShardStatus: (name, shardId, status) => of(name).setShardStatus(name, shardId, status),
    bulkDocs: (name, docs, newEdits) => of(name).bulkDocs(name, docs, newEdits),
    find: (name, raw, options) => of(name).find(name, raw, options),
    explain: (name, raw) => of(name).explain(name, raw),
    changes: (name, options) => of(name).changes(name, options),
    revsDiff: (name, request) => of(name).revsDiff(name, request),
    bulkGet: (name, entries, options) => of(name).bulkGet(name, entries, options),
    getLocal: (name, id) => of(name).getLocal(name, id),
    putLocal: (name, id, body, rev) => of(name).putLocal(name, id, body, rev),
    deleteLocal: (name, id, rev) => of(name).deleteLocal(name, id, rev),
    localDocs: (name) => of(name).localDocs(name),
    allDocs: (name, q) => of(name).allDocs(name, q),
    getDoc: (name, id, options, read) => of(name).getDoc(name, id, options, read),
    putDoc: (name, id, doc, rev) => of(name).putDoc(name, id, doc, rev),
    deleteDoc: (name, id, rev) => of(name).deleteDoc(name, id, rev),
    putAttachment: (name, id, attName, rev, blob) => of(name).putAttachment(name, id, attName, rev, blob),
    getAttachment: (name, id, attName, rev) => of(name).getAttachment(name, id, attName, rev),
    compact: (name) => of(name).compact(name),
  };
}
