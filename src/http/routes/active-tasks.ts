// CouchDB's `GET /_active_tasks` (admin, as CouchDB's server admin): what the node works on
// now, each with its progress: replications (tasks and one-shot runs), database compactions,
// VDB imports (each runs inside its request, on the node that took it); on a cluster, as in
// CouchDB 2+, every member's (gathered over the cluster links: peer-tasks.ts), each naming its
// `node`, and the cluster's running jobs (reshards, VDB splits and merges, replica repairs,
// leaves). Fauxton-style tools read this one list.
import type { FastifyPluginAsync } from 'fastify';
import type { Job } from '../../cluster/meta-state.js';
import { isReshardEnded } from '../../cluster/meta-state.js';
import type { DocEngine } from '../../docdb/engine.js';
import type { ReplicationManager } from '../../docdb/replication/manager.js';
import type { ImportTasks } from '../../docdb/vdb/import-tasks.js';
import type { PeerTasks } from '../../cluster/peer-tasks.js';

export interface NodeTaskSources {
  nodeName: string;
  docs: DocEngine;
  replication: ReplicationManager;
  imports: ImportTasks;
}

export interface ActiveTasksDeps extends NodeTaskSources {
  /** The cluster's jobs; undefined on a standalone node (or before it joined). */
  jobs: () => readonly Job[] | undefined;
  /** The other members' tasks; undefined on a standalone node (or before it joined). */
  peers: () => PeerTasks | undefined;
}

const seconds = (ms: number) => Math.floor(ms / 1000);

/** This node's own entries: its replications, compactions and VDB imports. */
export function nodeTasks({ nodeName, docs, replication, imports }: NodeTaskSources): Record<string, unknown>[] {
  const replications = [...replication.list(), ...replication.oneShots()]
    .filter((v) => v.status === 'active')
    .map((v) => ({
      type: 'replication',
      node: nodeName,
      pid: v.task_id,
      replication_id: v.task_id,
      source: v.source,
      target: v.target,
      continuous: v.mode === 'continuous',
      docs_read: v.docs_read,
      docs_written: v.docs_written,
      doc_write_failures: v.doc_write_failures,
      checkpointed_source_seq: v.last_seq,
      started_on: seconds(Date.parse(v.created_at)),
      updated_on: seconds(Date.parse(v.updated_at)),
    }));
  const compactions = docs.compactions().map((c) => ({
    type: 'database_compaction',
    node: nodeName,
    database: c.database,
    changes_done: c.docsDone,
    total_changes: c.docsTotal,
    // Documents written meanwhile may take it past the count it started with.
    progress: c.docsTotal === 0 ? 0 : Math.min(99, Math.floor((100 * c.docsDone) / c.docsTotal)),
    started_on: seconds(c.startedMs),
    updated_on: seconds(c.updatedMs),
  }));
  const vdbImports = imports.list().map((i) => ({
    type: 'vdb_import',
    node: nodeName,
    // Two imports alike (same VDB, source and options) are told apart by it, as CouchDB's pids do.
    pid: `vdb_import:${i.id}`,
    vdb: i.vdb,
    source_db: i.sourceDb,
    on_conflict: i.onConflict,
    batch_size: i.batchSize,
    docs_read: i.counts.docs_read,
    docs_written: i.counts.docs_written,
    docs_skipped: i.counts.docs_skipped,
    errors: i.counts.errors,
    total_docs: i.docsTotal,
    progress: i.progress,
    started_on: seconds(i.startedMs),
    updated_on: seconds(i.updatedMs),
  }));
  return [...replications, ...compactions, ...vdbImports];
}

export const activeTasksRoutes: FastifyPluginAsync<ActiveTasksDeps> = async (app, deps) => {
  app.get('/_active_tasks', { config: { permission: 'admin' } }, async () => {
    const { nodeName, jobs, peers } = deps;
    const cluster = (jobs() ?? [])
      .filter((j) => !isReshardEnded(j.step))
      .map(({ id, kind, target, step, createdAtMs, updatedAtMs, ...detail }) => ({
        type: `cluster_${kind.replace('-', '_')}`,
        node: nodeName,
        pid: id,
        target,
        step,
        ...detail,
        started_on: seconds(createdAtMs),
        updated_on: seconds(updatedAtMs),
      }));
    return [...nodeTasks(deps), ...((await peers()?.list()) ?? []), ...cluster];
  });
};
