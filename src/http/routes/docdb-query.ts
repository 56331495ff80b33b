// POST /db/:db/_find and POST /db/:db/_explain; CouchDB's _index routes (every field is indexed
// automatically: a declared index already exists).
import type { FastifyPluginAsync } from 'fastify';
import { FirkinError } from '../../core/errors.js';
import { checkDbName } from '../../docdb/names.js';
import { type FindContext, describePlan, executeFind, planFind } from '../../docdb/query/execute.js';
import { parseFind } from '../../docdb/query/parse.js';
import { findAnswer } from '../../docdb/query/stats.js';
import { READ } from '../hooks/auth.js';
import { indexRoutes } from './couchdb-index.js';

const params = { type: 'object', required: ['db'], properties: { db: { type: 'string' } } } as const;

export const docdbQueryRoutes: FastifyPluginAsync<{ finder: FindContext }> = async (app, { finder }) => {
  const requireDb = (db: string) => {
    checkDbName(db);
    if (!finder.docs.has(db)) {
      throw new FirkinError('not_found', `database ${JSON.stringify(db)} does not exist`);
    }
  };

  app.post<{ Params: { db: string } }>('/db/:db/_find', { schema: { params }, config: READ }, async (request) => {
    const started = performance.now();
    requireDb(request.params.db);
    const query = parseFind(request.body);
    return findAnswer(await executeFind(finder, request.params.db, query), query.executionStats === true, performance.now() - started);
  });

  app.post<{ Params: { db: string } }>('/db/:db/_explain', { schema: { params }, config: READ }, async (request) => {
    requireDb(request.params.db);
    const query = parseFind(request.body);
    return {
      ...describePlan(await planFind(finder, request.params.db, query)),
      limit: query.limit ?? null,
      offset: query.offset,
      order_by: query.orderBy,
    };
  });

  indexRoutes(app, { base: '/db/:db', param: 'db', nameSchema: params.properties.db, requireDb });
};
