// CouchDB's index routes (`_index`) on a database or a VDB: every field is indexed as documents
// are written, so a declaration is checked and answered "exists" (docdb/query/index-def.ts).
import type { FastifyContextConfig, FastifyInstance, FastifyRequest } from 'fastify';
import { declareIndex, listIndexes, refuseIndexDelete } from '../../docdb/query/index-def.js';

export interface IndexRouteOptions {
  /** `/db/:db` or `/vdb/:vdb`. */
  base: string;
  /** The path parameter naming the database: `db` or `vdb`. */
  param: string;
  nameSchema: Record<string, unknown>;
  config?: FastifyContextConfig;
  /** Throws when there is no such database (404). */
  requireDb: (name: string) => unknown;
}

export function indexRoutes(app: FastifyInstance, o: IndexRouteOptions): void {
  const params = { type: 'object', required: [o.param], properties: { [o.param]: o.nameSchema } };
  const deleteParams = {
    type: 'object',
    required: [o.param, 'ddoc', 'type', 'name'],
    properties: { [o.param]: o.nameSchema, ddoc: { type: 'string' }, type: { type: 'string' }, name: { type: 'string' } },
  };
  const paramsOf = (r: FastifyRequest) => r.params as Record<string, string>;
  const config = o.config ?? {};
  app.post(`${o.base}/_index`, { schema: { params }, config }, async (r) => {
    await o.requireDb(paramsOf(r)[o.param]!);
    return declareIndex(r.body);
  });
  app.get(`${o.base}/_index`, { schema: { params }, config }, async (r) => {
    await o.requireDb(paramsOf(r)[o.param]!);
    return listIndexes();
  });
  // CouchDB's path names the design document with or without its `_design/` prefix.
  for (const url of [`${o.base}/_index/:ddoc/:type/:name`, `${o.base}/_index/_design/:ddoc/:type/:name`]) {
    app.delete(url, { schema: { params: deleteParams }, config }, async (r) => {
      const p = paramsOf(r);
      await o.requireDb(p[o.param]!);
      throw refuseIndexDelete(p.ddoc!, p.name!);
    });
  }
}
