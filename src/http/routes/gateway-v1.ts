// /v1/...: a tenant's own collections, documents and searches. Every route needs a tenant key
// in X-Api-Key and a token from the tenant's (and the key's) bucket; both checks run in this
// plugin's onRequest hook, before the body is validated, so bad bodies count against the limit.
import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import { FirkinError, isFirkinError } from '../../core/errors.js';
import { type Caller, GATEWAY_LIMITS, type Gateway, type NewDocument } from '../../gateway/gateway.js';
import type { GatewayMetrics } from '../../gateway/metrics.js';
import {
  collectionSchema,
  docIdSchema,
  docProperties,
  embedderSchema,
  kSchema,
  queryTextSchema,
  scrollSchema,
  searchSchema,
  vectorSchema,
} from './vector.js';
import { DEFAULTS } from '../../vector/collection-config.js';
import { SCROLL_LIMIT_DEFAULT } from '../../vector/requests.js';
import { collectionNameSchema } from './gateway-schemas.js';
import type { Embedder } from '../../gateway/types.js';
import type { V1Bounds } from '../../gateway/vectors.js';

const DOC_ID_CHARS_MAX = 512;
const TEXT_CHARS_MAX = 1_000_000;
const QUERY_CHARS_MAX = 10_000;

const nameParams = { type: 'object', required: ['name'], properties: { name: collectionNameSchema } } as const;
const docParams = {
  type: 'object',
  required: ['name', 'id'],
  properties: { name: collectionNameSchema, id: { type: 'string', minLength: 1, maxLength: DOC_ID_CHARS_MAX } },
} as const;

/** The standard API's schemas (one definition each), narrowed to what /v1 takes. */
function schemas(bounds: V1Bounds) {
  const vector = { ...vectorSchema, minItems: 1, maxItems: bounds.dimensionMax } as const;
  const doc = {
    type: 'object',
    additionalProperties: false,
    properties: {
      ...docProperties,
      // No id: the gateway makes one.
      id: { ...docIdSchema, maxLength: DOC_ID_CHARS_MAX },
      text: { type: 'string', maxLength: TEXT_CHARS_MAX },
      metadata: { ...docProperties.metadata, type: 'object' },
      vector,
    },
  } as const;
  return {
    createCollection: {
      type: 'object',
      required: ['name', 'dimension'],
      additionalProperties: false,
      properties: {
        name: collectionNameSchema,
        dimension: { ...collectionSchema.properties.dimensions, maximum: bounds.dimensionMax },
        embedder: {
          ...embedderSchema,
          properties: { type: { enum: bounds.embedderTypes }, url: embedderSchema.properties.url, model: embedderSchema.properties.model },
        },
      },
    },
    documents: {
      type: 'object',
      additionalProperties: false,
      properties: {
        ...doc.properties,
        documents: { type: 'array', minItems: 1, maxItems: GATEWAY_LIMITS.batchDocumentsMax, items: doc },
      },
    },
    search: {
      ...searchSchema,
      properties: {
        query: { ...queryTextSchema, maxLength: QUERY_CHARS_MAX },
        vector,
        k: { ...kSchema, maximum: bounds.kMax },
        filter: { type: 'object' },
      },
      // Exactly one: /v1 does not let a vector silently win over a query.
      oneOf: [{ required: ['query'] }, { required: ['vector'] }],
    },
    scroll: {
      ...scrollSchema,
      properties: { limit: { ...scrollSchema.properties.limit, maximum: bounds.kMax }, offset: { ...scrollSchema.properties.offset, maxLength: DOC_ID_CHARS_MAX }, filter: { type: 'object' } },
    },
  } as const;
}

type NameParams = { name: string };
type DocParams = { name: string; id: string };
type DocumentsBody = NewDocument & { documents?: NewDocument[] };
type SearchBody = { query?: string; vector?: number[]; k?: number; filter?: Record<string, unknown> };
type ScrollBody = { limit?: number; offset?: string; filter?: Record<string, unknown> } | null;

export const v1Routes: FastifyPluginAsync<{ gateway: Gateway; bounds: V1Bounds; metrics: GatewayMetrics }> = async (app, { gateway, bounds, metrics }) => {
  const callers = new WeakMap<FastifyRequest, Caller>();
  const callerOf = (request: FastifyRequest): Caller => callers.get(request)!;
  const s = schemas(bounds);

  app.addHook('onRequest', async (request, reply) => {
    const caller = await gateway.authenticate(request.headers['x-api-key'] as string | undefined);
    const admission = gateway.admit(caller);
    const headers = { 'x-ratelimit-limit': String(admission.limit), 'x-ratelimit-remaining': String(admission.remaining) };
    if (!admission.allowed) {
      metrics.refused(caller.tenant.tenant_id, 'rate_limit');
      const retryAfterS = Math.max(1, Math.ceil(admission.retryAfterMs / 1000));
      throw new FirkinError('rate_limit_exceeded', `rate limit of ${admission.limit} requests per minute exceeded; retry in ${retryAfterS} s`, {
        headers: { ...headers, 'retry-after': String(retryAfterS) },
      });
    }
    reply.headers(headers);
    callers.set(request, caller);
  });

  app.addHook('onError', async (request, _reply, err) => {
    const caller = callers.get(request);
    if (caller !== undefined && isFirkinError(err) && err.code === 'quota_exceeded') metrics.refused(caller.tenant.tenant_id, 'quota');
  });

  app.get('/v1/collections', async (request) => ({ collections: gateway.listCollections(callerOf(request)) }));

  app.post<{ Body: { name: string; dimension: number; embedder?: Embedder } }>(
    '/v1/collections',
    { schema: { body: s.createCollection } },
    async (request, reply) => {
      const { name, dimension, embedder } = request.body;
      const created = await gateway.createCollection(callerOf(request), name, { dimension, ...(embedder === undefined ? {} : { embedder }) });
      reply.code(201);
      return { ...created, status: 'created' };
    },
  );

  app.get<{ Params: NameParams }>('/v1/collections/:name', { schema: { params: nameParams } }, async (request) =>
    gateway.getCollection(callerOf(request), request.params.name),
  );

  app.delete<{ Params: NameParams }>('/v1/collections/:name', { schema: { params: nameParams } }, async (request) => {
    await gateway.deleteCollection(callerOf(request), request.params.name);
    return { status: 'deleted', name: request.params.name };
  });

  app.post<{ Params: NameParams; Body: DocumentsBody }>(
    '/v1/collections/:name/documents',
    { schema: { params: nameParams, body: s.documents } },
    async (request, reply) => {
      const { documents, ...single } = request.body;
      if (documents !== undefined && Object.keys(single).length > 0) {
        throw new FirkinError('bad_request', 'send either one document or {documents: [...]}, not both');
      }
      const docs = documents ?? [single];
      const results = await gateway.upsert(callerOf(request), request.params.name, docs);
      reply.code(201);
      return documents === undefined ? results[0] : { results };
    },
  );

  app.get<{ Params: DocParams }>('/v1/collections/:name/documents/:id', { schema: { params: docParams } }, async (request) => {
    const doc = await gateway.getDocument(callerOf(request), request.params.name, request.params.id);
    return { id: doc.id, text: doc.text, metadata: doc.metadata };
  });

  // The collection's documents in id order, a page at a time (the standard API's scroll).
  app.post<{ Params: NameParams; Body: ScrollBody }>('/v1/collections/:name/documents/scroll', { schema: { params: nameParams, body: s.scroll } }, async (request) => {
    const body = request.body ?? {};
    const page = await gateway.scroll(callerOf(request), request.params.name, {
      limit: body.limit ?? SCROLL_LIMIT_DEFAULT,
      ...(body.offset === undefined ? {} : { offset: body.offset }),
      ...(body.filter === undefined ? {} : { filter: body.filter }),
    });
    return { documents: page.documents, next_offset: page.next ?? null };
  });

  app.delete<{ Params: DocParams }>('/v1/collections/:name/documents/:id', { schema: { params: docParams } }, async (request) => {
    await gateway.deleteDocument(callerOf(request), request.params.name, request.params.id);
    return { status: 'deleted', id: request.params.id };
  });

  app.post<{ Params: NameParams; Body: SearchBody }>(
    '/v1/collections/:name/search',
    { schema: { params: nameParams, body: s.search } },
    async (request) => {
      const { query, vector, k = DEFAULTS.k, filter } = request.body;
      const hits = await gateway.search(callerOf(request), request.params.name, {
        ...(query === undefined ? {} : { query }),
        ...(vector === undefined ? {} : { vector }),
        k,
        ...(filter === undefined ? {} : { filter }),
      });
      return { hits };
    },
  );
};
