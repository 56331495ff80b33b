// The replication protocol endpoints a peer (another Firkin node, or a CouchDB client such
// as PouchDB) needs beside `_revs_diff`, `_bulk_docs` and `_changes` (docdb routes):
// `POST /db/:db/_bulk_get` and the non-replicated `_local/:id` documents.
import type { FastifyPluginAsync } from 'fastify';
import { FirkinError } from '../../core/errors.js';
import type { DocEngine } from '../../docdb/engine.js';
import { LIMITS, checkDbName, isDocId } from '../../docdb/names.js';
import { readRevisions } from '../../docdb/replication/endpoints.js';
import type { LocalDocs } from '../../docdb/replication/local-docs.js';
import { isRev, leaves } from '../../docdb/revtree.js';
import { READ } from '../hooks/auth.js';

export interface ReplicationProtocolDeps {
  docs: DocEngine;
  localDocs: LocalDocs;
}

const dbParams = { type: 'object', required: ['db'], properties: { db: { type: 'string' } } } as const;
const localParams = { type: 'object', required: ['db', 'id'], properties: { db: { type: 'string' }, id: { type: 'string' } } } as const;
const revQuery = { type: 'object', properties: { rev: { type: 'string' } } } as const;

/** Entries one `_bulk_get` may ask for: every one may carry attachments inline. */
const BULK_GET_MAX = 1_000;

const bulkGetBody = {
  type: 'object',
  required: ['docs'],
  properties: {
    docs: {
      type: 'array',
      maxItems: BULK_GET_MAX,
      items: {
        type: 'object',
        required: ['id'],
        properties: { id: { type: 'string', minLength: 1 }, rev: { type: 'string' }, atts_since: { type: 'array', maxItems: 1000, items: { type: 'string' } } },
      },
    },
  },
} as const;

const bulkGetQuery = { type: 'object', properties: { revs: { type: 'boolean' }, attachments: { type: 'boolean' }, latest: { type: 'boolean' } } } as const;

function existing(docs: DocEngine, db: string): string {
  checkDbName(db);
  docs.assertDb(db);
  return db;
}

type BulkGetEntry = { ok: Record<string, unknown> } | { error: { id: string; rev: string; error: string; reason: string } };

export const replicationProtocolRoutes: FastifyPluginAsync<ReplicationProtocolDeps> = async (app, { docs, localDocs }) => {
  // Every revision asked for, with `_revisions` and attachments inline; no rev = every leaf.
  app.post<{ Params: { db: string }; Querystring: { revs?: boolean; attachments?: boolean }; Body: { docs: { id: string; rev?: string; atts_since?: string[] }[] } }>(
    '/db/:db/_bulk_get',
    { schema: { params: dbParams, body: bulkGetBody, querystring: bulkGetQuery }, config: READ },
    async (request) => {
      const db = existing(docs, request.params.db);
      const entries = request.body.docs;
      // Ids no document can have (reserved, too long) are read as missing, never looked up.
      const readable = isDocId;
      // An entry without a rev asks for every leaf: their records in one read.
      const unversioned = entries.filter((e) => e.rev === undefined && readable(e.id)).map((e) => e.id);
      const records = await docs.getRecords(db, unversioned);
      const leafRevs = new Map(unversioned.map((id, i) => [id, records[i] === undefined ? [] : leaves(records[i]!.tree).map((n) => n.rev)]));
      const revsOf = entries.map(({ id, rev }) => (rev !== undefined ? [rev] : (leafRevs.get(id) ?? [])));
      // Then every wanted revision's record and body in one read each.
      const wanted = entries.flatMap(({ id, rev, atts_since }, i) => (readable(id) && (rev === undefined || isRev(rev)) ? revsOf[i]!.map((r) => ({ id, rev: r, attsSince: atts_since })) : []));
      const found = await readRevisions(docs, db, wanted, { revs: request.query.revs === true, attachments: request.query.attachments === true });
      let next = 0;
      const results = entries.map(({ id, rev }, i): { id: string; docs: BulkGetEntry[] } => {
        if (rev !== undefined && !isRev(rev)) return { id, docs: [{ error: { id, rev, error: 'bad_request', reason: 'invalid revision' } }] };
        const missing = (r: string): BulkGetEntry => ({ error: { id, rev: r, error: 'not_found', reason: 'missing' } });
        const revs = revsOf[i]!;
        if (revs.length === 0) return { id, docs: [missing('undefined')] };
        if (!readable(id)) return { id, docs: revs.map(missing) };
        return {
          id,
          docs: revs.map((r) => {
            const doc = found[next++];
            return doc === undefined ? missing(r) : { ok: doc };
          }),
        };
      });
      return { results };
    },
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
