// POST /db/:db/_find and POST /db/:db/_explain; CouchDB's _index routes (every field is indexed
// automatically: a declared index already exists).
import type { FastifyPluginAsync } from 'fastify';
import { FirkinError } from '../../core/errors.js';
import { checkDbName } from '../../docdb/names.js';
import { type FindContext, executeFind, planFind } from '../../docdb/query/execute.js';
import { declareIndex, listIndexes, refuseIndexDelete } from '../../docdb/query/index-def.js';
import { parseFind } from '../../docdb/query/parse.js';
import { READ } from '../hooks/auth.js';

const params = { type: 'object', required: ['db'], properties: { db: { type: 'string' } } } as const;
const indexParams = {
  type: 'object',
  required: ['db', 'ddoc', 'type', 'name'],
  properties: { db: { type: 'string' }, ddoc: { type: 'string' }, type: { type: 'string' }, name: { type: 'string' } },
} as const;

export const docdbQueryRoutes: FastifyPluginAsync<{ finder: FindContext }> = async (app, { finder }) => {
  const requireDb = (db: string) => {
    checkDbName(db);
    if (!finder.docs.has(db)) {
      throw new FirkinError('not_found', `database ${JSON.stringify(db)} does not exist`);
    }
  };

  app.post<{ Params: { db: string } }>('/db/:db/_find', { schema: { params }, config: READ }, async (request) => {
    requireDb(request.params.db);
    return executeFind(finder, request.params.db, parseFind(request.body));
  });

  app.post<{ Params: { db: string } }>('/db/:db/_explain', { schema: { params }, config: READ }, async (request) => {
    requireDb(request.params.db);
    const query = parseFind(request.body);
    const { plan, exact, estimates } = await planFind(finder, request.params.db, query);
    return {
      plan:
        plan.kind === 'index'
          ? { kind: 'index', scan: plan.scan.describe, estimated_postings: plan.estimate, alternatives: plan.alternatives }
          : { kind: 'full_scan', reason: plan.reason },
      // An exact plan counts from the index alone; otherwise every candidate's body is checked.
      exact,
      candidates: estimates,
      limit: query.limit ?? null,
      offset: query.offset,
      order_by: query.orderBy,
    };
  });

  app.post<{ Params: { db: string } }>('/db/:db/_index', { schema: { params } }, async (request) => {
    requireDb(request.params.db);
    return declareIndex(request.body);
  });
  app.get<{ Params: { db: string } }>('/db/:db/_index', { schema: { params } }, async (request) => {
    requireDb(request.params.db);
    return listIndexes();
  });
  // CouchDB's path names the design document with or without its `_design/` prefix.
  for (const url of ['/db/:db/_index/:ddoc/:type/:name', '/db/:db/_index/_design/:ddoc/:type/:name']) {
    app.delete<{ Params: { db: string; ddoc: string; type: string; name: string } }>(url, { schema: { params: indexParams } }, async (request) => {
      requireDb(request.params.db);
      throw refuseIndexDelete(request.params.ddoc, request.params.name);
    });
  }
};
