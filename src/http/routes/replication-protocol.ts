// The replication protocol endpoints a peer (another Firkin node, or a CouchDB client such
// as PouchDB) needs beside `_revs_diff`, `_bulk_docs` and `_changes` (docdb routes):
// `POST /db/:db/_bulk_get`, the non-replicated `_local/:id` documents and their listing,
// CouchDB's `_local_docs`.
import type { FastifyPluginAsync } from 'fastify';
import { FirkinError } from '../../core/errors.js';
import type { DocEngine } from '../../docdb/engine.js';
import { checkDbName } from '../../docdb/names.js';
import { bulkGet, bulkGetBody, bulkGetQuery } from '../../docdb/replication/bulk-get.js';
import { type LocalDocs, collectLocals, localDocsRows } from '../../docdb/replication/local-docs.js';
import { READ } from '../hooks/auth.js';
import { type AllDocsQuery, allDocsBody, allDocsQuery, allDocsRequest } from './docdb-shared.js';

export interface ReplicationProtocolDeps {
  docs: DocEngine;
  localDocs: LocalDocs;
}

const dbParams = { type: 'object', required: ['db'], properties: { db: { type: 'string' } } } as const;
const localParams = { type: 'object', required: ['db', 'id'], properties: { db: { type: 'string' }, id: { type: 'string' } } } as const;
const revQuery = { type: 'object', properties: { rev: { type: 'string' } } } as const;

function existing(docs: DocEngine, db: string): string {
  checkDbName(db);
  docs.assertDb(db);
  return db;
}

export const replicationProtocolRoutes: FastifyPluginAsync<ReplicationProtocolDeps> = async (app, { docs, localDocs }) => {
  // Every revision asked for, with `_revisions` and attachments inline; no rev = every leaf.
  app.post<{ Params: { db: string }; Querystring: { revs?: boolean; attachments?: boolean }; Body: { docs: { id: string; rev?: string; atts_since?: string[] }[] } }>(
    '/db/:db/_bulk_get',
    { schema: { params: dbParams, body: bulkGetBody, querystring: bulkGetQuery }, config: READ },
    async (request) => ({
      results: await bulkGet(docs, existing(docs, request.params.db), request.body.docs, { revs: request.query.revs === true, attachments: request.query.attachments === true }),
    }),
  );

  // CouchDB's listing of the local documents: `_all_docs`'s parameters over the full ids
  // (`_local/<id>`), `keys` in the query or a POST body; `total_rows` and `offset` null, as CouchDB answers.
  const localDocsAnswer = async (db: string, q: AllDocsQuery, bodyKeys: readonly string[] | undefined) => {
    const { keys, range } = allDocsRequest(q, bodyKeys);
    return { total_rows: null, offset: null, rows: localDocsRows(await collectLocals(localDocs.stored(existing(docs, db))), range, keys) };
  };
  app.get<{ Params: { db: string }; Querystring: AllDocsQuery }>('/db/:db/_local_docs', { schema: { params: dbParams, querystring: allDocsQuery } }, (request) =>
    localDocsAnswer(request.params.db, request.query, undefined),
  );
  app.post<{ Params: { db: string }; Querystring: AllDocsQuery; Body: { keys?: string[] } | undefined }>(
    '/db/:db/_local_docs',
    { schema: { params: dbParams, querystring: allDocsQuery, body: allDocsBody }, config: READ },
    (request) => localDocsAnswer(request.params.db, request.query, request.body?.keys),
  );

  app.get<{ Params: { db: string; id: string } }>('/db/:db/_local/:id', { schema: { params: localParams } }, async (request) => {
    const db = existing(docs, request.params.db);
    const doc = await localDocs.get(db, request.params.id);
    if (doc === undefined) throw new FirkinError('not_found', `local document _local/${request.params.id} not found`);
    return doc;
  });

  app.put<{ Params: { db: string; id: string }; Querystring: { rev?: string }; Body: unknown }>(
    '/db/:db/_local/:id',
    { schema: { params: localParams, querystring: revQuery } },
    async (request, reply) => {
      const db = existing(docs, request.params.db);
      const result = await localDocs.put(db, request.params.id, request.body, { rev: request.query.rev });
      reply.code(201);
      return result;
    },
  );

  app.delete<{ Params: { db: string; id: string }; Querystring: { rev?: string } }>(
    '/db/:db/_local/:id',
    { schema: { params: localParams, querystring: revQuery } },
    async (request) => localDocs.delete(existing(docs, request.params.db), request.params.id, request.query.rev),
  );
};
