// Cluster administration beside the spec's /vectordb/cluster routes: the detailed node view,
// joining through a seed on demand, and removing a node that is gone for good. Admin only
// (`/_cluster` is a protected prefix).
import type { FastifyPluginAsync } from 'fastify';
import type { ClusterMember } from '../../cluster/member.js';
import type { VectorShards } from '../../cluster/vector-shards.js';
import type { DocShards } from '../../cluster/doc-shards.js';
import { FirkinError } from '../../core/errors.js';

export interface ClusterRouteDeps {
  /** undefined on a standalone node: every route answers 400 not_clustered. */
  member(): ClusterMember | undefined;
  /** The replicated vector shards hosted here (undefined until the member started). */
  shards?(): VectorShards | undefined;
  /** The replicated VDB shards hosted here (undefined until the member started). */
  docShards?(): DocShards | undefined;
}

const joinBody = {
  type: 'object',
  additionalProperties: false,
  required: ['seed'],
  properties: { seed: { type: 'string', pattern: '^[A-Za-z0-9_.\\-\\[\\]:]+:[0-9]{1,5}$', maxLength: 300 } },
} as const;

const nameParams = {
  type: 'object',
  required: ['name'],
  properties: { name: { type: 'string', minLength: 1, maxLength: 255 } },
} as const;

const removeQuery = {
  type: 'object',
  additionalProperties: false,
  properties: { force: { type: 'boolean' } },
} as const;

export const clusterAdminRoutes: FastifyPluginAsync<ClusterRouteDeps> = async (app, deps) => {
  const member = (): ClusterMember => {
    const m = deps.member();
    if (m === undefined) throw new FirkinError('not_clustered', 'this node runs standalone (SERVICE_ENABLE_CLUSTER=false)');
    return m;
  };
  const admin = { permission: 'admin' as const };

  app.get('/_cluster/nodes', { config: admin }, async () => {
    const m = member();
    const g = m.groupStatus();
    return { node: m.name, leader: m.leader(), term: g.term, commit: g.commit, applied: g.applied, metadata: m.digest(), nodes: m.nodeViews() };
  });

  app.get('/_cluster/jobs', { config: admin }, async () => ({ jobs: member().jobs() }));

  app.get<{ Params: { collection: string } }>(
    '/_cluster/collections/:collection/shards',
    { config: admin, schema: { params: { type: 'object', required: ['collection'], properties: { collection: { type: 'string', minLength: 1, maxLength: 255 } } } } },
    async (req) => {
      member();
      const host = deps.shards?.();
      if (host === undefined) throw new FirkinError('unavailable', 'this node does not host vector shards (the vector service is off, or the node has not joined yet)');
      return host.shardReport(req.params.collection);
    },
  );

  // The shard replicas this node hosts: role, leader, term, applied index, documents, and a
  // digest of the data at that index (replicas of one shard compare these).
  app.get('/_cluster/shards', { config: admin }, async () => {
    const m = member();
    const host = deps.shards?.();
    if (host === undefined) return { node: m.name, replicas: [] };
    const digests = new Map((await host.digests()).map((d) => [d.group, d]));
    return { node: m.name, replicas: host.replicaStatus().map((r) => ({ ...r, digest: digests.get(r.group)?.sha256 ?? null, digest_applied: digests.get(r.group)?.applied ?? null })) };
  });

  // The VDB shard replicas this node hosts, each with a digest of its documents at its applied
  // index (taken between two commits): replicas of one shard at one index must agree.
  app.get('/_cluster/vdb-shards', { config: admin }, async () => {
    const m = member();
    const host = deps.docShards?.();
    if (host === undefined) return { node: m.name, replicas: [] };
    const digests = new Map((await host.digests()).map((d) => [d.group, d]));
    return { node: m.name, replicas: host.replicaStatus().map((r) => ({ ...r, docs: digests.get(r.group)?.docs ?? null, local_docs: digests.get(r.group)?.locals ?? null, digest: digests.get(r.group)?.sha256 ?? null, digest_applied: digests.get(r.group)?.applied ?? null })) };
  });

  app.post<{ Body: { seed: string } }>('/_cluster/join', { config: admin, schema: { body: joinBody } }, async (req, reply) => {
    const result = await member().joinVia(req.body.seed);
    return reply.code(202).send(result);
  });

  // A down node whose data some shard group may still need for its majority is not removed
  // unless asked with `force` (cluster/removal-risk.ts): after a removal the machine is wiped.
  app.delete<{ Params: { name: string }; Querystring: { force?: boolean } }>(
    '/_cluster/nodes/:name',
    { config: admin, schema: { params: nameParams, querystring: removeQuery } },
    async (req) => {
      const m = member();
      const name = req.params.name;
      if (req.query.force !== true && m.state.nodes[name]?.status === 'down') {
        const risks = (await Promise.all([deps.shards?.()?.removalRisks(name), deps.docShards?.()?.removalRisks(name)])).flatMap((r) => r ?? []);
        if (risks.length > 0) {
          throw new FirkinError('conflict', `removing ${name} now could leave shard groups without a majority holding their data (${risks.join('; ')}): if ${name}'s disk survives, start it again instead; once the groups are in step, remove it; to remove it anyway (its data then lost for good: firkin recover may be needed), DELETE /_cluster/nodes/${name}?force=true`);
        }
      }
      return m.remove(name);
    },
  );
};
