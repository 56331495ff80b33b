// The vector service's standard API. `collectionRoutes` and `clusterRoutes` are separate
// fastify plugins so a host can mount either or both under any prefix (default /vectordb);
// `vectorRoutes` mounts both. The schemas below are the one definition of each request body:
// the gateway's /v1 (`gateway-v1.ts`) builds its own from them. Handlers turn a checked
// body into a typed request (`vector/requests.ts`) and call the engine.
import type { ErrorObject } from 'ajv';
import type { FastifyInstance, FastifyPluginAsync } from 'fastify';
import { FirkinError } from '../../core/errors.js';
import type { VectorCluster } from '../../vector/cluster.js';
import {
  BM25_BACKENDS,
  COLLECTION_NAME_PATTERN,
  EMBEDDER_TYPES,
  FUSIONS,
  LIMITS,
  METRICS,
  INDEX_PRECISIONS,
  STOPWORD_SETS,
} from '../../vector/collection-config.js';
import type { SearchAnswer, VectorEngine } from '../../vector/engine.js';
import { FLOAT32_MAX } from '../../vector/metric.js';
import { schemaErrorMessage } from '../errors.js';
import {
  CONSISTENCIES,
  type Bm25SearchBody,
  type Consistency,
  type CollectionBody,
  type DocBody,
  type HybridSearchBody,
  type ScrollBody,
  type SearchBody,
  bm25SearchRequest,
  type CollectionDefaults,
  createCollectionRequest,
  docRequest,
  hybridSearchRequest,
  scrollRequest,
  searchRequest,
} from '../../vector/requests.js';

const int = (minimum: number, maximum: number) => ({ type: 'integer', minimum, maximum }) as const;
const weight = { type: 'number', minimum: 0, maximum: 1 } as const;

const collectionNameSchema = { type: 'string', minLength: 1, maxLength: LIMITS.nameLengthMax, pattern: COLLECTION_NAME_PATTERN } as const;
export const docIdSchema = { type: 'string', minLength: 1, maxLength: LIMITS.docIdLengthMax } as const;
/** Its length must be the collection's dimensions: the engine checks that. */
export const vectorSchema = { type: 'array', maxItems: LIMITS.dimensionsMax, items: { type: 'number', minimum: -FLOAT32_MAX, maximum: FLOAT32_MAX } } as const;
/** null: no vector, as if absent. */
const optionalVectorSchema = { ...vectorSchema, type: ['array', 'null'] } as const;
export const queryTextSchema = { type: 'string', minLength: 1 } as const;
export const kSchema = int(1, LIMITS.kMax);
const filterSchema = { type: ['object', 'null'] } as const;

export const embedderSchema = {
  type: 'object',
  required: ['type'],
  additionalProperties: false,
  properties: {
    type: { enum: EMBEDDER_TYPES },
    url: { type: 'string', minLength: 1, maxLength: LIMITS.embedderUrlCharsMax },
    model: { type: 'string', minLength: 1, maxLength: LIMITS.embedderModelCharsMax },
    timeout_ms: int(1, LIMITS.embedderTimeoutMsMax),
    batch_size: int(1, LIMITS.embedderBatchSizeMax),
    retries: int(0, LIMITS.embedderRetriesMax),
  },
  // The built-in embedder takes no settings.
  if: { required: ['type'], properties: { type: { const: 'hash' } } },
  then: { maxProperties: 1 },
} as const;

export const collectionSchema = {
  type: 'object',
  required: ['dimensions'],
  additionalProperties: false,
  properties: {
    dimensions: int(1, LIMITS.dimensionsMax),
    num_shards: int(1, LIMITS.shardsMax),
    replication_factor: int(1, LIMITS.replicationFactorMax),
    metric: { enum: METRICS },
    // null for a nested object is as if absent (all its defaults).
    index: {
      type: ['object', 'null'],
      additionalProperties: false,
      properties: { m: int(0, LIMITS.mMax), ef_construction: int(1, LIMITS.efConstructionMax), ef_search: int(1, LIMITS.efMax), precision: { enum: INDEX_PRECISIONS } },
    },
    // null: none, as GET shows it.
    embedder: { ...embedderSchema, type: ['object', 'null'] },
    bm25_backend: { enum: BM25_BACKENDS },
    bm25: {
      type: ['object', 'null'],
      additionalProperties: false,
      properties: {
        k1: { type: 'number', minimum: 0, maximum: LIMITS.k1Max },
        b: weight,
        stopwords: {
          anyOf: [
            { enum: STOPWORD_SETS },
            { type: 'array', maxItems: LIMITS.stopwordsMax, items: { type: 'string', minLength: 1, maxLength: LIMITS.stopwordCharsMax } },
          ],
        },
      },
    },
  },
} as const;

/** null text, metadata or vector: as if absent ("", {}, embed the text). */
export const docProperties = {
  id: docIdSchema,
  text: { type: ['string', 'null'] },
  metadata: { type: ['object', 'null'] },
  vector: optionalVectorSchema,
} as const;
const docSchema = { type: 'object', required: ['id'], additionalProperties: false, properties: docProperties } as const;
/** Its documents are checked one by one against `docSchema`: a bad one gets an error result. */
const batchSchema = {
  type: 'object',
  required: ['documents'],
  additionalProperties: false,
  properties: { documents: { type: 'array', minItems: 1, maxItems: LIMITS.batchDocsMax } },
} as const;
const docsBodySchema = { if: { type: 'object', required: ['documents'] }, then: batchSchema, else: docSchema } as const;

export const searchSchema = {
  type: 'object',
  additionalProperties: false,
  properties: { vector: optionalVectorSchema, query: queryTextSchema, k: kSchema, ef: int(1, LIMITS.efMax), filter: filterSchema, consistency: { enum: CONSISTENCIES }, with_payload: { type: 'boolean' } },
} as const;
const searchBatchSchema = {
  type: 'object',
  required: ['searches'],
  additionalProperties: false,
  properties: { searches: { type: 'array', minItems: 1, maxItems: LIMITS.searchBatchMax, items: searchSchema } },
} as const;
export const scrollSchema = {
  // No body: the first page of 10.
  type: ['object', 'null'],
  additionalProperties: false,
  properties: { limit: int(1, LIMITS.kMax), offset: docIdSchema, filter: filterSchema, include_vector: { type: 'boolean' }, consistency: { enum: CONSISTENCIES } },
} as const;
const bm25SearchSchema = {
  type: 'object',
  required: ['query'],
  additionalProperties: false,
  properties: { query: queryTextSchema, k: kSchema, consistency: { enum: CONSISTENCIES } },
} as const;
const hybridSearchSchema = {
  ...bm25SearchSchema,
  properties: {
    ...bm25SearchSchema.properties,
    vector: optionalVectorSchema,
    ef: searchSchema.properties.ef,
    bm25_weight: weight,
    vector_weight: weight,
    fusion: { enum: FUSIONS },
  },
} as const;
const reshardSchema = { type: 'object', required: ['num_shards'], properties: { num_shards: collectionSchema.properties.num_shards } } as const;

const collectionParams = { type: 'object', required: ['collection'], properties: { collection: collectionNameSchema } } as const;
const docParams = { type: 'object', required: ['collection', 'id'], properties: { collection: collectionNameSchema, id: docIdSchema } } as const;

export interface VectorRouteOptions {
  engine: VectorEngine;
  cluster: VectorCluster;
  /** What a create request leaves out (the cluster-wide `replication_factor`). */
  collectionDefaults?: CollectionDefaults;
}

type CollectionReq<Body = undefined> = { Params: { collection: string }; Body: Body };
type DocReq = { Params: { collection: string; id: string }; Querystring: { include_vector?: boolean; consistency?: Consistency } };

/** `{results}`; with `partial: true` and `failed_shards` when some shard could not answer. */
function searchReply<T>(answer: SearchAnswer<T>): Record<string, unknown> {
  return answer.failed.length === 0 ? { results: answer.results } : { results: answer.results, partial: true, failed_shards: answer.failed };
}

export const collectionRoutes: FastifyPluginAsync<VectorRouteOptions> = async (app, { engine, cluster, collectionDefaults }) => {
  const compile = app.validatorCompiler;
  if (compile === undefined) throw new Error('vector routes need the host to set a validator compiler');
  const checkDoc = compile({ schema: docSchema, method: 'POST', url: '/collections/:collection/docs', httpPart: 'body' });

  app.get('/collections', async () => engine.listCollections());

  app.get<CollectionReq>('/collections/:collection', { schema: { params: collectionParams } }, async (req) => engine.describeCollection(req.params.collection));

  app.put<CollectionReq<CollectionBody>>('/collections/:collection', { schema: { params: collectionParams, body: collectionSchema } }, async (req, reply) => {
    await engine.createCollection(createCollectionRequest(req.params.collection, req.body, collectionDefaults));
    return reply.code(201).send({ status: 'created' });
  });

  app.delete<CollectionReq>('/collections/:collection', { schema: { params: collectionParams } }, async (req) => {
    await engine.deleteCollection(req.params.collection);
    return { status: 'deleted' };
  });

  app.post<CollectionReq<DocBody | { documents: unknown[] }>>(
    '/collections/:collection/docs',
    { schema: { params: collectionParams, body: docsBodySchema } },
    async (req, reply) => {
      const { collection } = req.params;
      if (!('documents' in req.body)) {
        const id = await engine.putDoc(collection, docRequest(req.body));
        return reply.code(201).send({ status: 'created', id });
      }
      // A document that fails its schema gets its error here; the engine answers for the rest.
      const refused = new Map<number, { id?: string; error: 'bad_request'; message: string }>();
      const docs: DocBody[] = [];
      req.body.documents.forEach((doc, i) => {
        if (checkDoc(doc) === true) docs.push(doc as DocBody);
        else {
          const id = (doc as { id?: unknown } | null)?.id;
          const e = (checkDoc as { errors?: ErrorObject[] | null }).errors?.[0];
          const message = schemaErrorMessage([e ?? {}], `documents[${i}]`);
          refused.set(i, { ...(typeof id === 'string' ? { id } : {}), error: 'bad_request', message });
        }
      });
      const written = docs.length === 0 ? [] : await engine.putDocs({ collection, docs: docs.map(docRequest) });
      let next = 0;
      return { results: req.body.documents.map((_, i) => refused.get(i) ?? written[next++]) };
    },
  );

  app.get<DocReq>(
    '/collections/:collection/docs/:id',
    { schema: { params: docParams, querystring: { type: 'object', properties: { include_vector: { type: 'boolean' }, consistency: { enum: CONSISTENCIES } } } } },
    async (req) => {
      const doc = await engine.getDoc(req.params.collection, req.params.id, req.query.consistency);
      const out: Record<string, unknown> = { id: doc.id, text: doc.text, metadata: doc.metadata };
      if (req.query.include_vector === true) out.vector = Array.from(doc.vector);
      return out;
    },
  );

  // Qdrant's scroll: the documents in id order, a page at a time; `next_offset` starts the next.
  app.post<CollectionReq<ScrollBody>>('/collections/:collection/docs/scroll', { schema: { params: collectionParams, body: scrollSchema } }, async (req) => {
    const page = await engine.scroll(scrollRequest(req.params.collection, req.body ?? {}));
    return {
      documents: page.documents.map((d) => ({ id: d.id, text: d.text, metadata: d.metadata, ...(d.vector === undefined ? {} : { vector: Array.from(d.vector) }) })),
      next_offset: page.next ?? null,
    };
  });

  app.delete<DocReq>('/collections/:collection/docs/:id', { schema: { params: docParams } }, async (req) => {
    await engine.deleteDoc(req.params.collection, req.params.id);
    return { status: 'deleted' };
  });

  app.post<CollectionReq<SearchBody>>('/collections/:collection/search', { schema: { params: collectionParams, body: searchSchema } }, async (req) =>
    searchReply(await engine.search(searchRequest(req.params.collection, req.body))),
  );

  app.post<CollectionReq<{ searches: SearchBody[] }>>('/collections/:collection/search/batch', { schema: { params: collectionParams, body: searchBatchSchema } }, async (req) => {
    const answers = await engine.searchBatch(req.body.searches.map((s) => searchRequest(req.params.collection, s)));
    const failed = new Map(answers.flatMap((a) => a.failed).map((f) => [f.shard, f]));
    const results = answers.map((a) => a.results);
    return failed.size === 0 ? { results } : { results, partial: true, failed_shards: [...failed.values()] };
  });

  app.post<CollectionReq<Bm25SearchBody>>('/collections/:collection/search/bm25', { schema: { params: collectionParams, body: bm25SearchSchema } }, async (req) =>
    searchReply(await engine.searchBm25(bm25SearchRequest(req.params.collection, req.body))),
  );

  app.post<CollectionReq<HybridSearchBody>>(
    '/collections/:collection/search/hybrid',
    { schema: { params: collectionParams, body: hybridSearchSchema } },
    async (req) => searchReply(await engine.searchHybrid(hybridSearchRequest(req.params.collection, req.body))),
  );

  app.post<CollectionReq<{ num_shards: number }>>('/collections/:collection/reshard', { schema: { params: collectionParams, body: reshardSchema } }, async (req) => {
    const n = req.body.num_shards;
    const current = (await engine.getCollectionNow(req.params.collection)).num_shards;
    if (current === n) throw new FirkinError('same_shard_count', `collection ${JSON.stringify(req.params.collection)} already has ${n} shards`);
    return { status: 'resharding', info: await cluster.reshard(req.params.collection, n) };
  });

  // The job: state, counts, start and end times, rate, the last error (404 when there was none).
  app.get<CollectionReq>('/collections/:collection/reshard', { schema: { params: collectionParams } }, async (req) => {
    await engine.getCollectionNow(req.params.collection);
    return cluster.reshardStatus(req.params.collection);
  });

  // Cancel before the switch: the old shards stay authoritative.
  app.delete<CollectionReq>('/collections/:collection/reshard', { schema: { params: collectionParams } }, async (req) => {
    await engine.getCollectionNow(req.params.collection);
    return cluster.cancelReshard(req.params.collection);
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
