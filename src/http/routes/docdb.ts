// Databases, documents, _bulk_docs, _all_docs, _revs_diff and _sync_hlc.
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { FirkinError } from '../../core/errors.js';
import { type HybridClock, hlcToBase64, hlcToText, parseHlc } from '../../core/hlc.js';
import { parseDoc } from '../../docdb/doc-input.js';
import type { AllDocsOptions, AllDocsRow, DocEngine } from '../../docdb/engine.js';
import { LIMITS, checkDbName, checkDocId, isDesignDocId, pageKeys } from '../../docdb/names.js';
import { compareStrings } from '../../core/keys.js';
import { withDocExtras } from '../../docdb/all-docs.js';
import { leaves, openRevsLatest, pathFromRevisions } from '../../docdb/revtree.js';
import {
  type AllDocsQuery,
  type DocSource,
  type GetDocQuery,
  allDocsBody,
  allDocsQuery,
  allDocsRequest,
  answerCopy,
  answerDelete,
  answerDocGet,
  dbParams,
  docParams,
  existingDb,
  expectedRev,
  getDocQuery,
  hasLiveRecord,
  keyParam,
  refuseDocumentDeleteOnDatabase,
  revsDiffBody,
  keyRangeParams,
  sendRows,
} from './docdb-shared.js';
import { READ, keyAllows } from '../hooks/auth.js';

export interface DocdbRouteDeps {
  docs: DocEngine;
  hlc: HybridClock;
  /** Generates ids for documents posted without one. */
  newId: () => string;
  /** Where a document lives when tiered storage moved it (default: its own database). */
  /** The database holding `docId` now (its tier's, if it moved): a string when known at once. */
  locate?: (db: string, docId: string) => string | Promise<string>;
}

const designParams = {
  type: 'object',
  properties: { db: dbParams.properties.db, name: { type: 'string' } },
} as const;

const writeQuery = {
  type: 'object',
  properties: { rev: { type: 'string' }, new_edits: { type: 'boolean' } },
} as const;

const bulkBody = {
  type: 'object',
  required: ['docs'],
  additionalProperties: false,
  properties: {
    docs: { type: 'array', maxItems: LIMITS.bulkDocsMax },
    new_edits: { type: 'boolean' },
  },
} as const;

const syncHlcBody = {
  type: 'object',
  required: ['hlc'],
  additionalProperties: false,
  properties: { hlc: { type: 'string', maxLength: 64 } },
} as const;

const allDbsQuery = { type: 'object', properties: { ...keyRangeParams, limit: { type: 'integer', minimum: 0 } } } as const;

type AllDbsQuery = Pick<AllDocsQuery, 'startkey' | 'start_key' | 'endkey' | 'end_key' | 'limit' | 'skip' | 'descending' | 'inclusive_end'>;

/** Every design document's id sorts in [_design/, _design0): `_design0` is no valid id. */
const DESIGN_IDS = { low: '_design/', high: '_design0' } as const;

/** `_all_docs` options cut to the design documents' ids (CouchDB's `_design_docs`). */
function designRange(o: AllDocsOptions): AllDocsOptions {
  const max = (a: string | undefined, b: string) => (a === undefined || compareStrings(a, b) < 0 ? b : a);
  const min = (a: string | undefined, b: string) => (a === undefined || compareStrings(a, b) > 0 ? b : a);
  const { low, high } = DESIGN_IDS;
  return o.descending ? { ...o, startkey: min(o.startkey, high), endkey: max(o.endkey, low) } : { ...o, startkey: max(o.startkey, low), endkey: min(o.endkey, high) };
}

export const docdbRoutes: FastifyPluginAsync<DocdbRouteDeps> = async (app, { docs, hlc, newId, locate = (db) => db }) => {
  // ---- databases
  // CouchDB's list (nano's `db.list()`; `/db/_all_dbs` for clients whose server root is `/db`):
  // the names the key may read, in order. A cluster node's shard replicas are not listed, as a
  // CouchDB cluster lists its databases and not their shards: they are their VDB's (GET /vdb).
  for (const url of ['/_all_dbs', '/db/_all_dbs']) {
    app.get<{ Querystring: AllDbsQuery }>(url, { schema: { querystring: allDbsQuery } }, async (request) => {
      const q = request.query;
      const readable = docs.userDbs().filter((db) => docs.has(db) && keyAllows(request, 'read', db));
      return pageKeys(readable, {
        startkey: keyParam('startkey', q.startkey ?? q.start_key, 'a database name'),
        endkey: keyParam('endkey', q.endkey ?? q.end_key, 'a database name'),
        descending: q.descending === true,
        inclusiveEnd: q.inclusive_end !== false,
        skip: q.skip ?? 0,
        limit: q.limit,
      });
    });
  }
  app.put<{ Params: { db: string } }>('/db/:db', { schema: { params: dbParams } }, async (request, reply) => {
    await docs.createDb(request.params.db);
    reply.code(201);
    return { ok: true, db_name: request.params.db };
  });

  app.get<{ Params: { db: string } }>('/db/:db', { schema: { params: dbParams } }, async (request) => docs.dbInfo(existingDb(docs, request.params.db)));

  // CouchDB's answer: 202 at once, the pass runs in the background (`compact_running` in GET /db/:db).
  app.post<{ Params: { db: string } }>('/db/:db/_compact', { schema: { params: dbParams }, config: { permission: 'admin' } }, async (request, reply) => {
    const db = existingDb(docs, request.params.db);
    void docs.compact(db).catch((err: unknown) => request.log.error({ db, err }, 'compaction failed'));
    reply.code(202);
    return { ok: true };
  });

  // Dropping a database is an admin's act (a CouchDB server admin's), as a VDB's is: a key
  // that may write documents must not be able to lose them all at once.
  app.delete<{ Params: { db: string } }>('/db/:db', { schema: { params: dbParams }, config: { permission: 'admin' } }, async (request) => {
    checkDbName(request.params.db);
    refuseDocumentDeleteOnDatabase(request);
    await docs.deleteDb(request.params.db);
    return { ok: true };
  });

  // With a body: a new document with a generated id. Without one: create the database.
  app.post<{ Params: { db: string }; Body: unknown }>('/db/:db', { schema: { params: dbParams } }, async (request, reply) => {
    if (request.body === undefined || request.body === null || request.body === '') {
      await docs.createDb(request.params.db);
      reply.code(201);
      return { ok: true, db_name: request.params.db };
    }
    const db = existingDb(docs, request.params.db);
    const doc = parseDoc(request.body);
    const docId = doc.id === undefined ? newId() : checkDocId(doc.id);
    const result = await docs.putDoc(db, docId, doc, doc.rev);
    reply.code(201).header('etag', `"${result.rev}"`);
    return result;
  });

  // ---- documents
  // A design document is stored and served as any other (http/design-url.ts routes
  // `/_design/<name>` here), but nothing in one runs: say so plainly for its functions.
  app.all<{ Params: { db: string; name: string } }>('/db/:db/_design/:name/*', { schema: { params: designParams } }, async (request) => {
    existingDb(docs, request.params.db);
    const what = 'views, shows, lists, update and validate functions do not run here: query with _find (every field is indexed automatically)';
    if (request.method === 'GET' || request.method === 'HEAD') throw new FirkinError('not_found', `${request.url.split('?', 1)[0]}: ${what}`);
    throw new FirkinError('bad_request', what);
  });

  /** A database's document as GET and COPY read it (through its tier, if it moved). */
  const dbDocSource = (db: string, docId: string): DocSource => ({
    getDoc: (options) => docs.getDoc(db, docId, options),
    getDocNow: (options) => docs.getDocNow(db, docId, options),
    attachment: (name, rev) => docs.getAttachment(db, docId, name, rev),
    openRevs: async (wanted, latest) => {
      const rec = await docs.getRecord(db, docId);
      if (wanted === 'all') {
        if (rec === undefined) throw new FirkinError('not_found', `document ${JSON.stringify(docId)} not found`);
        return leaves(rec.tree).map((n) => n.rev);
      }
      // Each asked revision's descending leaves in its place (a leaf is its own), once each.
      if (latest && rec !== undefined) return openRevsLatest(rec.tree, wanted);
      return [...wanted];
    },
  });

  app.get<{ Params: { db: string; docid: string }; Querystring: GetDocQuery }>('/db/:db/:docid', { schema: { params: docParams, querystring: getDocQuery } }, (request, reply) => {
    // Not async: a cached document is answered with no promise made (answerDocGet).
    const docId = checkDocId(request.params.docid);
    const located = locate(existingDb(docs, request.params.db), docId);
    return typeof located === 'string' ? answerDocGet(dbDocSource(located, docId), request.query, reply) : located.then((db) => answerDocGet(dbDocSource(db, docId), request.query, reply));
  });

  app.put<{ Params: { db: string; docid: string }; Querystring: { rev?: string; new_edits?: boolean }; Body: unknown }>(
    '/db/:db/:docid',
    { schema: { params: docParams, querystring: writeQuery } },
    async (request, reply) => {
      const docId = checkDocId(request.params.docid);
      const db = await locate(existingDb(docs, request.params.db), docId);
      const doc = parseDoc(request.body);
      if (request.query.new_edits === false) {
        // A replicated revision: `_rev` plus optional `_revisions` history.
        if (doc.rev === undefined) throw new FirkinError('bad_request', 'with new_edits=false the document needs _rev');
        const path = doc.revisions === undefined ? { revs: [doc.rev], deleted: doc.deleted } : pathFromRevisions(doc.revisions, doc.deleted);
        if (path.revs[0] !== doc.rev) throw new FirkinError('bad_request', '_revisions must start with _rev');
        const result = await docs.putRevision(db, docId, doc, path);
        if (!result.ok) throw new FirkinError(result.error as FirkinError['code'], result.message);
        reply.code(201).header('etag', `"${result.rev}"`);
        return result;
      }
      const rev = expectedRev({ ifMatch: request.headers['if-match'], query: request.query.rev, body: doc.rev });
      const result = await docs.putDoc(db, docId, doc, rev);
      reply.code(201).header('etag', `"${result.rev}"`);
      return result;
    },
  );

  app.delete<{ Params: { db: string; docid: string }; Querystring: { rev?: string } }>(
    '/db/:db/:docid',
    { schema: { params: docParams, querystring: writeQuery } },
    async (request, reply) => {
      const docId = checkDocId(request.params.docid);
      const db = await locate(existingDb(docs, request.params.db), docId);
      const rev = expectedRev({ ifMatch: request.headers['if-match'], query: request.query.rev });
      const result = await answerDelete(docId, rev, () => hasLiveRecord(docs, db, docId), (r) => docs.deleteDoc(db, docId, r));
      reply.header('etag', `"${result.rev}"`);
      return result;
    },
  );

  // CouchDB's COPY: the winner (or `?rev=`) with its attachments, written to the document the
  // Destination header names; a write on the database, answered as a PUT of the copy.
  app.route<{ Params: { db: string; docid: string }; Querystring: { rev?: string } }>({
    method: 'COPY',
    url: '/db/:db/:docid',
    schema: { params: docParams, querystring: writeQuery },
    handler: async (request, reply) => {
      const sourceId = checkDocId(request.params.docid);
      const name = existingDb(docs, request.params.db);
      const source = dbDocSource(await locate(name, sourceId), sourceId);
      return answerCopy(source, request.query.rev, request.headers.destination, async (destId, doc, rev) => docs.putDoc(await locate(name, destId), destId, doc, rev), reply);
    },
  });

  // ---- bulk
  app.post<{ Params: { db: string }; Body: { docs: unknown[]; new_edits?: boolean } }>(
    '/db/:db/_bulk_docs',
    { schema: { params: dbParams, body: bulkBody } },
    async (request, reply) => {
      const db = existingDb(docs, request.params.db);
      const results = await docs.bulkDocs(db, request.body.docs, request.body.new_edits !== false, newId);
      reply.code(201);
      return results;
    },
  );

  // ---- _all_docs, and CouchDB's _design_docs (the same over the design documents' ids)
  /** One answer for GET and POST (keys in the body win over the query's). */
  const allDocsAnswer = async (request: FastifyRequest, reply: FastifyReply, q: AllDocsQuery, bodyKeys: readonly string[] | undefined, designOnly: boolean) => {
    const db = existingDb(docs, (request.params as { db: string }).db);
    const info = docs.dbInfo(db);
    const { keys, range: asked } = allDocsRequest(q, bodyKeys);
    if (keys !== undefined) {
      const rows = await docs.allDocsByKeys(db, keys, asked.includeDocs);
      // A key that is no design document's id is not found in _design_docs.
      const shown = designOnly ? rows.map((row): AllDocsRow => (isDesignDocId(row.key) ? row : { key: row.key, error: 'not_found' })) : rows;
      return sendRows(request, reply, { total_rows: info.doc_count, offset: 0 }, withDocExtras(docs, db, q, shown));
    }
    const options = designOnly ? designRange(asked) : asked;
    return sendRows(request, reply, { total_rows: info.doc_count, offset: options.skip }, withDocExtras(docs, db, q, docs.allDocs(db, options)));
  };

  for (const [url, designOnly] of [['/db/:db/_all_docs', false], ['/db/:db/_design_docs', true]] as const) {
    app.get<{ Params: { db: string }; Querystring: AllDocsQuery }>(url, { schema: { params: dbParams, querystring: allDocsQuery } }, (request, reply) =>
      allDocsAnswer(request, reply, request.query, undefined, designOnly),
    );
    app.post<{ Params: { db: string }; Querystring: AllDocsQuery; Body: { keys?: string[] } | undefined }>(
      url,
      { schema: { params: dbParams, querystring: allDocsQuery, body: allDocsBody }, config: READ },
      (request, reply) => allDocsAnswer(request, reply, request.query, request.body?.keys, designOnly),
    );
  }

  // ---- replication helpers
  app.post<{ Params: { db: string }; Body: Record<string, string[]> }>(
    '/db/:db/_revs_diff',
    { schema: { params: dbParams, body: revsDiffBody }, config: READ },
    async (request) => docs.revsDiff(existingDb(docs, request.params.db), request.body),
  );

  // CouchDB's `_ensure_full_commit` (older replicators call it on their target): every write
  // is durable before it is acknowledged, so there is nothing left to flush.
  app.post<{ Params: { db: string } }>('/db/:db/_ensure_full_commit', { schema: { params: dbParams } }, async (request, reply) => {
    const db = existingDb(docs, request.params.db);
    reply.code(201);
    return { ok: true, instance_start_time: docs.dbInfo(db).instance_start_time };
  });

  // ---- clock
  app.post<{ Params: { db: string }; Body: { hlc: string } }>(
    '/db/:db/_sync_hlc',
    { schema: { params: dbParams, body: syncHlcBody } },
    async (request) => {
      const db = existingDb(docs, request.params.db);
      const raw = request.body.hlc.trim();
      const remote = parseHlc(raw);
      if (remote === undefined) throw new FirkinError('bad_request', `hlc must be base64 of the 12-byte clock or {timestamp,W,L}, got ${JSON.stringify(raw)}`);
      const merged = hlc.update(remote);
      if (merged === undefined) throw new FirkinError('conflict', `clock skew rejected: ${hlcToText(remote)} is too far ahead of this node`);
      return { ok: true, db, hlc: hlcToText(merged), hlc_base64: hlcToBase64(merged) };
    },
  );
};
