// The vector service's standard API. `collectionRoutes` and `clusterRoutes` are separate
// fastify plugins so a host can mount either or both under any prefix (default /vectordb);
// `vectorRoutes` mounts both. Handlers only validate the path and call the engine; bodies are
// validated by the engine, which names what was wrong.
import type { FastifyInstance, FastifyPluginAsync } from 'fastify';
import { FirkinError } from '../../core/errors.js';
import type { VectorCluster } from '../../vector/cluster.js';
import { LIMITS, describe } from '../../vector/collection-config.js';
import type { VectorEngine } from '../../vector/engine.js';

export interface VectorRouteOptions {
  engine: VectorEngine;
  cluster: VectorCluster;
}

const anyObject = { type: 'object' } as const;
const collectionParams = {
  type: 'object',
  properties: { collection: { type: 'string' } },
  required: ['collection'],
} as const;
const docParams = {
  type: 'object',
  properties: { collection: { type: 'string' }, id: { type: 'string' } },
  required: ['collection', 'id'],
} as const;

type CollectionReq = { Params: { collection: string }; Body: unknown };
type DocReq = { Params: { collection: string; id: string }; Querystring: { include_vector?: boolean } };

export const collectionRoutes: FastifyPluginAsync<VectorRouteOptions> = async (app, { engine, cluster }) => {
  app.get('/collections', async () => engine.listCollections());

  app.get<CollectionReq>('/collections/:collection', { schema: { params: collectionParams } }, async (req) => engine.getCollection(req.params.collection));

  app.put<CollectionReq>('/collections/:collection', { schema: { params: collectionParams, body: anyObject } }, async (req, reply) => {
    await engine.createCollection(req.params.collection, req.body);
    return reply.code(201).send({ status: 'created' });
  });

  app.delete<CollectionReq>('/collections/:collection', { schema: { params: collectionParams } }, async (req) => {
    await engine.deleteCollection(req.params.collection);
    return { status: 'deleted' };
  });

  app.post<CollectionReq>('/collections/:collection/docs', { schema: { params: collectionParams, body: anyObject } }, async (req, reply) => {
    const body = req.body as Record<string, unknown>;
    if (body.documents !== undefined) {
      if (Object.keys(body).length !== 1) throw new FirkinError('bad_request', 'the batch form is {"documents": [...]} with no other field');
      return { results: await engine.putDocs(req.params.collection, body.documents) };
    }
    const id = await engine.putDoc(req.params.collection, body);
    return reply.code(201).send({ status: 'created', id });
  });

  app.get<DocReq>(
    '/collections/:collection/docs/:id',
    { schema: { params: docParams, querystring: { type: 'object', properties: { include_vector: { type: 'boolean' } } } } },
    async (req) => {
      const doc = await engine.getDoc(req.params.collection, req.params.id);
      const out: Record<string, unknown> = { id: doc.id, text: doc.text, metadata: doc.metadata };
      if (req.query.include_vector === true) out.vector = Array.from(doc.vector);
      return out;
    },
  );

  app.delete<DocReq>('/collections/:collection/docs/:id', { schema: { params: docParams } }, async (req) => {
    await engine.deleteDoc(req.params.collection, req.params.id);
    return { status: 'deleted' };
  });

  app.post<CollectionReq>('/collections/:collection/search', { schema: { params: collectionParams, body: anyObject } }, async (req) => ({
    results: await engine.search(req.params.collection, req.body),
  }));

  app.post<CollectionReq>('/collections/:collection/search/bm25', { schema: { params: collectionParams, body: anyObject } }, async (req) => ({
    results: await engine.searchBm25(req.params.collection, req.body),
  }));

  app.post<CollectionReq>('/collections/:collection/search/hybrid', { schema: { params: collectionParams, body: anyObject } }, async (req) => ({
    results: await engine.searchHybrid(req.params.collection, req.body),
  }));

  app.post<CollectionReq>('/collections/:collection/reshard', { schema: { params: collectionParams, body: anyObject } }, async (req) => {
    const body = req.body as Record<string, unknown>;
    const n = body.num_shards;
    if (n === undefined) throw new FirkinError('bad_request', 'num_shards is required (a positive integer)');
    if (typeof n !== 'number' || !Number.isInteger(n) || n < 1 || n > LIMITS.shardsMax) {
      throw new FirkinError('bad_request', `num_shards must be an integer from 1 to ${LIMITS.shardsMax}, got ${describe(n)}`);
    }
    const current = engine.getCollection(req.params.collection).num_shards;
    if (current === n) throw new FirkinError('same_shard_count', `collection ${JSON.stringify(req.params.collection)} already has ${n} shards`);
    return { status: 'resharding', info: await cluster.reshard(req.params.collection, n) };
  });
};

export const clusterRoutes: FastifyPluginAsync<VectorRouteOptions> = async (app, { cluster }) => {
  app.get('/cluster/status', async () => cluster.status());
  app.get('/cluster/nodes', async () => ({ nodes: cluster.nodes() }));
  app.post('/cluster/leave', async () => cluster.leave());
};

/** Mounts the whole standard API under `prefix` (e.g. /vectordb). */
export async function vectorRoutes(app: FastifyInstance, options: VectorRouteOptions & { prefix: string }): Promise<void> {
  await app.register(collectionRoutes, { ...options, prefix: options.prefix });
  await app.register(clusterRoutes, { ...options, prefix: options.prefix });
}
