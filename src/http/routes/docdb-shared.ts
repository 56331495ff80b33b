// Helpers shared by the document-database route files (databases and VDBs): the expected
// revision of a write and the `since` of a changes read, each from all the places a client may
// put it; `_all_docs` requests; a document's GET, COPY and DELETE over where it is read.
import { FirkinError, isFirkinError } from '../../core/errors.js';
import { type Hlc, parseHlc } from '../../core/hlc.js';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Readable } from 'node:stream';
import type { AllDocsOptions, AllDocsRow, DocEngine, GetDocOptions } from '../../docdb/engine.js';
import { type ParsedDoc, parseDoc } from '../../docdb/doc-input.js';
import { inlineWith } from '../../docdb/inline-attachments.js';
import { LIMITS, checkDbName, checkDocId } from '../../docdb/names.js';
import { wantsCbor } from '../codec.js';
import { isRev } from '../../docdb/revtree.js';

export const dbParams = {
  type: 'object',
  required: ['db'],
  properties: { db: { type: 'string' } },
} as const;

export const docParams = {
  type: 'object',
  required: ['db', 'docid'],
  properties: { db: { type: 'string' }, docid: { type: 'string' } },
} as const;

/** A document GET's CouchDB read options, as databases and VDBs take them (docs/docdb.md). */
export const readOptionParams = {
  rev: { type: 'string' },
  revs: { type: 'boolean' },
  conflicts: { type: 'boolean' },
  deleted_conflicts: { type: 'boolean' },
  revs_info: { type: 'boolean' },
  meta: { type: 'boolean' },
  latest: { type: 'boolean' },
  attachments: { type: 'boolean' },
} as const;

export interface ReadOptionsQuery {
  rev?: string;
  revs?: boolean;
  conflicts?: boolean;
  deleted_conflicts?: boolean;
  revs_info?: boolean;
  /** CouchDB's shorthand for conflicts, deleted_conflicts and revs_info. */
  meta?: boolean;
  latest?: boolean;
  attachments?: boolean;
}

/** A document GET's query: the read options, and those a database and a VDB answer in the route. */
export const getDocQuery = {
  type: 'object',
  properties: { ...readOptionParams, deleted: { type: 'boolean' }, open_revs: { type: 'string' }, atts_since: { type: 'string' } },
} as const;

export interface GetDocQuery extends ReadOptionsQuery {
  deleted?: boolean;
  open_revs?: string;
  atts_since?: string;
}

/** `open_revs=all`, or a JSON array of revs (CouchDB); undefined for anything else. */
export function parseOpenRevs(text: string): 'all' | string[] | undefined {
  return text === 'all' ? 'all' : parseRevList(text);
}

/** A JSON array of at most bulkDocsMax revisions; undefined for anything else. */
export function parseRevList(text: string): string[] | undefined {
  try {
    const revs: unknown = JSON.parse(text);
    return Array.isArray(revs) && revs.length <= LIMITS.bulkDocsMax && revs.every(isRev) ? revs : undefined;
  } catch {
    return undefined;
  }
}

/** The engine's options for a read (`revs` is the caller's: attachments may need the history). */
export function readOptions(q: ReadOptionsQuery): Pick<GetDocOptions, 'rev' | 'conflicts' | 'deletedConflicts' | 'revsInfo' | 'latest'> {
  const meta = q.meta === true;
  return {
    rev: q.rev === undefined ? undefined : expectedRev({ query: q.rev }),
    conflicts: q.conflicts === true || meta,
    deletedConflicts: q.deleted_conflicts === true || meta,
    revsInfo: q.revs_info === true || meta,
    latest: q.latest,
  };
}

/**
 * A database's DELETE names no revision; one that does is a document's DELETE whose id came out
 * empty (`DELETE /db/${id}?rev=...` with `id` ''): CouchDB refuses it rather than drop the
 * whole database, and so does Firkin, for `?rev=` and for `If-Match`.
 */
export function refuseDocumentDeleteOnDatabase(request: FastifyRequest): void {
  const query = request.query as Record<string, unknown> | undefined;
  if ((query !== undefined && Object.hasOwn(query, 'rev')) || request.headers['if-match'] !== undefined) {
    throw new FirkinError('bad_request', 'You tried to DELETE a database with a ?=rev parameter (or If-Match). Did you mean to DELETE a document instead?');
  }
  // The router takes `/db/name/` for `/db/name`; a DELETE spelt so is a document's whose id came
  // out empty, or `.` (`/db/name/.`, which fetch and curl normalise to `/db/name/`). Found by
  // test/docdb/fuzz.test.ts: it dropped the database.
  const path = request.url.split('?', 1)[0] ?? '';
  if (path.endsWith('/')) {
    throw new FirkinError('bad_request', 'You tried to DELETE a database with a trailing slash (a document whose id came out empty or "."?). Did you mean to DELETE a document instead? Drop the database without the slash.');
  }
}

/**
 * A document's DELETE (or an attachment's), answered as CouchDB does: it opens the document
 * first, so one that does not exist or is deleted is a 404 whatever the rev (before, a DELETE
 * without a rev of a missing document was a 409 "deleting needs the current revision"); a live
 * one without a rev, or with a rev that is no current leaf, a 409. The document is read only
 * on the way to an error: a DELETE that succeeds costs no extra read (a clustered VDB's read is
 * a ReadIndex round). `exists`: whether the document has a live winner.
 */
export async function answerDelete<T>(docId: string, rev: string | undefined, exists: () => Promise<boolean>, remove: (rev: string) => Promise<T>, what: 'a document' | 'an attachment' = 'a document'): Promise<T> {
  const gone = () => new FirkinError('not_found', `document ${JSON.stringify(docId)} not found (missing or deleted)`);
  if (rev === undefined) {
    if (!(await exists())) throw gone();
    throw new FirkinError('conflict', `document update conflict: deleting ${what === 'a document' ? '' : 'an attachment '}needs the current revision (If-Match or ?rev=)`);
  }
  try {
    return await remove(rev);
  } catch (err) {
    if (isFirkinError(err) && err.code === 'conflict' && !(await exists())) throw gone();
    throw err;
  }
}

/** `exists` for answerDelete on a database: its record says whether the winner is live (no body read). */
export async function hasLiveRecord(docs: DocEngine, db: string, docId: string): Promise<boolean> {
  const rec = await docs.getRecord(db, docId);
  return rec !== undefined && !rec.deleted;
}

/** `exists` for answerDelete where only a document read is offered (a VDB): false on not_found. */
export async function hasLiveWinner(read: () => Promise<unknown>): Promise<boolean> {
  try {
    await read();
    return true;
  } catch (err) {
    if (isFirkinError(err) && err.code === 'not_found') return false;
    throw err;
  }
}

export function existingDb(docs: DocEngine, db: string): string {
  checkDbName(db);
  docs.assertDb(db);
  return db;
}

function unquote(etag: string): string {
  const m = /^(?:W\/)?"(.*)"$/.exec(etag.trim());
  return m === null ? etag.trim() : m[1]!;
}

/**
 * The revision a write names, from `If-Match`, `?rev=` and the body's `_rev` (that order).
 * Each must be a well-formed rev; two that differ are a 400.
 */
export function expectedRev(sources: { ifMatch?: string | string[]; query?: string; body?: string }): string | undefined {
  const found: [string, string][] = [];
  if (sources.ifMatch !== undefined) {
    const header = Array.isArray(sources.ifMatch) ? sources.ifMatch.join(',') : sources.ifMatch;
    if (header.trim() !== '*') found.push(['If-Match', unquote(header)]);
  }
  if (sources.query !== undefined) found.push(['?rev', sources.query]);
  if (sources.body !== undefined) found.push(['_rev', sources.body]);
  for (const [where, rev] of found) {
    if (!isRev(rev)) throw new FirkinError('bad_request', `${where} ${JSON.stringify(rev)} is not a revision (<generation>-<hash>)`);
  }
  const distinct = new Set(found.map(([, rev]) => rev));
  if (distinct.size > 1) {
    throw new FirkinError('bad_request', `conflicting revisions: ${found.map(([where, rev]) => `${where}=${rev}`).join(', ')}`);
  }
  return found[0]?.[1];
}

/**
 * `since` of a changes read: `first`/`0`/absent = the beginning (undefined), `now` = the
 * database's last sequence, else a sequence as `{timestamp,W,L}`, `W:L`, `W-L` or base64.
 */
export function parseSince(docs: DocEngine, db: string, raw: unknown): Hlc | undefined {
  if (raw === undefined || raw === null || raw === 'first' || raw === '0' || raw === 0 || raw === '') return undefined;
  if (raw === 'now') return docs.lastSeq(db);
  if (typeof raw === 'string') {
    const parsed = parseHlc(raw);
    if (parsed !== undefined) return parsed;
  }
  throw new FirkinError('bad_request', `since must be first, 0, now or a sequence like {timestamp,W,L}, got ${JSON.stringify(raw)}`);
}

/** `doc_ids` as a JSON array or a comma-separated list. */
export function parseDocIds(raw: unknown): Set<string> | undefined {
  if (raw === undefined) return undefined;
  let ids: unknown = raw;
  if (typeof raw === 'string') {
    try {
      ids = raw.trim().startsWith('[') ? JSON.parse(raw) : raw.split(',').filter((s) => s !== '');
    } catch {
      throw new FirkinError('bad_request', 'doc_ids must be a JSON array of strings or a comma-separated list');
    }
  }
  if (!Array.isArray(ids) || !ids.every((id) => typeof id === 'string')) throw new FirkinError('bad_request', 'doc_ids must be an array of strings');
  return new Set(ids as string[]);
}

// ---- `_all_docs` requests, of databases and of VDBs

/** CouchDB's range over names or ids, as `_all_docs` and `_all_dbs` take it. */
export const keyRangeParams = {
  startkey: { type: 'string' },
  start_key: { type: 'string' },
  endkey: { type: 'string' },
  end_key: { type: 'string' },
  skip: { type: 'integer', minimum: 0 },
  descending: { type: 'boolean' },
  inclusive_end: { type: 'boolean' },
} as const;

export const allDocsQuery = {
  type: 'object',
  properties: {
    ...keyRangeParams,
    key: { type: 'string' },
    keys: { type: 'string' },
    limit: { type: 'integer', minimum: 0, maximum: LIMITS.allDocsLimitMax },
    include_docs: { type: 'boolean' },
    conflicts: { type: 'boolean' },
    attachments: { type: 'boolean' },
  },
} as const;

export const allDocsBody = {
  type: 'object',
  additionalProperties: false,
  properties: {
    keys: { type: 'array', maxItems: LIMITS.bulkDocsMax, items: { type: 'string' } },
  },
} as const;

export type AllDocsQuery = {
  startkey?: string;
  start_key?: string;
  endkey?: string;
  end_key?: string;
  key?: string;
  keys?: string;
  limit?: number;
  skip?: number;
  descending?: boolean;
  include_docs?: boolean;
  inclusive_end?: boolean;
  conflicts?: boolean;
  attachments?: boolean;
};

/** CouchDB sends keys JSON-encoded (`startkey="a"`); a bare string is taken as it is. */
export function keyParam(name: string, raw: string | undefined, what = 'a document id'): string | undefined {
  if (raw === undefined) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch {
    return raw;
  }
  if (typeof value !== 'string') throw new FirkinError('bad_request', `${name} must be ${what} (a JSON string)`);
  return value;
}

export function keysParam(raw: string): string[] {
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch {
    throw new FirkinError('bad_request', 'keys must be a JSON array of document ids');
  }
  if (!Array.isArray(value) || !value.every((k) => typeof k === 'string') || value.length > LIMITS.bulkDocsMax) {
    throw new FirkinError('bad_request', `keys must be a JSON array of at most ${LIMITS.bulkDocsMax} document ids`);
  }
  return value as string[];
}

/**
 * An `_all_docs` request as the listing reads it: the ids asked for (body keys win over the
 * query's `keys` and `key`), else the range of the query's options.
 */
export function allDocsRequest(q: AllDocsQuery, bodyKeys: readonly string[] | undefined): { keys: readonly string[] | undefined; range: AllDocsOptions } {
  return {
    keys: bodyKeys ?? (q.keys !== undefined ? keysParam(q.keys) : q.key !== undefined ? [keyParam('key', q.key)!] : undefined),
    range: {
      startkey: keyParam('startkey', q.startkey ?? q.start_key),
      endkey: keyParam('endkey', q.endkey ?? q.end_key),
      inclusiveEnd: q.inclusive_end !== false,
      limit: q.limit,
      skip: q.skip ?? 0,
      descending: q.descending === true,
      includeDocs: q.include_docs === true,
    },
  };
}

/** Rows streamed as JSON text (a large listing never sits in memory); CBOR clients get one buffer. */
export async function sendRows(request: FastifyRequest, reply: FastifyReply, head: { total_rows: number; offset: number }, rows: AsyncIterable<AllDocsRow> | AllDocsRow[]) {
  if (wantsCbor(request.headers.accept)) {
    const all: AllDocsRow[] = [];
    for await (const row of rows) all.push(row);
    return { ...head, rows: all };
  }
  async function* json() {
    yield `{"total_rows":${head.total_rows},"offset":${head.offset},"rows":[`;
    let first = true;
    for await (const row of rows) {
      yield (first ? '\n' : ',\n') + JSON.stringify(row);
      first = false;
    }
    yield '\n]}\n';
  }
  reply.type('application/json; charset=utf-8');
  return reply.send(Readable.from(json()));
}

// ---- a document's GET and COPY, of a database and of a VDB

/** Where a document is read: a database (the engine) or a VDB (the shard that owns the id). */
export interface DocSource {
  getDoc(options: GetDocOptions): Promise<Record<string, unknown>>;
  /** `getDoc` answered from what the source has cached, or undefined when it must read. */
  getDocNow?(options: GetDocOptions): Record<string, unknown> | undefined;
  /** What `inlineWith` reads an attachment of revision `rev` through. */
  attachment(name: string, rev: string): Promise<{ chunks: () => AsyncIterable<Buffer> }>;
  /** The revisions `open_revs` serves: every leaf (`all`), or each asked one (with `latest`, its leaves). */
  openRevs(wanted: 'all' | readonly string[], latest: boolean): Promise<string[]>;
}

/**
 * A document GET with every CouchDB read option (docs/docdb.md). A document the source has
 * cached (`getDocNow`) is answered at once, not as a promise: fastify sends a route's plain
 * value without a microtask turn.
 */
export function answerDocGet(source: DocSource, q: GetDocQuery, reply: FastifyReply): unknown {
  const attsSince = q.atts_since === undefined ? undefined : parseRevList(q.atts_since);
  if (attsSince === undefined && q.atts_since !== undefined) throw new FirkinError('bad_request', 'atts_since must be a JSON array of revisions');
  const withHistory = q.revs === true || (q.attachments === true && attsSince !== undefined);
  if (q.open_revs !== undefined) return answerOpenRevs(source, q, attsSince, withHistory);
  // Not `{ ...readOptions(q), revs, deleted }`: on node 20's V8 a literal that starts with a
  // spread and adds properties after it costs ~1-3 µs (a new map each time; docs/benchmarks.md).
  const options: GetDocOptions = Object.assign(readOptions(q), { revs: withHistory, deleted: q.deleted });
  const answer = (doc: Record<string, unknown>) => {
    reply.header('etag', `"${doc._rev as string}"`);
    return asAsked(source, q, attsSince, doc);
  };
  const now = source.getDocNow?.(options);
  return now !== undefined ? answer(now) : source.getDoc(options).then(answer);
}

/** `open_revs`, in CouchDB's JSON form: one `{ok: doc}` or `{missing: rev}` per revision asked for. */
async function answerOpenRevs(source: DocSource, q: GetDocQuery, attsSince: string[] | undefined, withHistory: boolean): Promise<unknown> {
  const wanted = parseOpenRevs(q.open_revs!);
  if (wanted === undefined) throw new FirkinError('bad_request', 'open_revs must be "all" or a JSON array of revisions');
  const out: ({ ok: Record<string, unknown> } | { missing: string })[] = [];
  for (const rev of await source.openRevs(wanted, q.latest === true)) {
    try {
      out.push({ ok: await asAsked(source, q, attsSince, await source.getDoc({ rev, revs: withHistory })) });
    } catch (err) {
      if (!(err instanceof FirkinError) || err.code !== 'not_found') throw err;
      out.push({ missing: rev });
    }
  }
  return out;
}

/**
 * A read revision as asked: attachments inline (whose `atts_since` needs the history), then
 * `_revisions` only when asked. It waits only for inline attachments.
 */
function asAsked(source: DocSource, q: GetDocQuery, attsSince: string[] | undefined, doc: Record<string, unknown>): Record<string, unknown> | Promise<Record<string, unknown>> {
  const asked = () => {
    if (q.revs !== true) delete doc._revisions;
    return doc;
  };
  if (q.attachments !== true || doc._attachments === undefined) return asked();
  const at = doc._rev as string;
  return inlineWith((name) => source.attachment(name, at), doc, attsSince).then((inlined) => {
    doc._attachments = inlined;
    return asked();
  });
}

/**
 * CouchDB's COPY: the winner (or `rev`) with its attachments, written by `write` as the
 * document the `Destination` header names (`<id>?rev=R` replaces that document's revision R).
 */
export async function answerCopy(
  source: DocSource,
  rev: string | undefined,
  destination: string | string[] | undefined,
  write: (destId: string, doc: ParsedDoc, destRev: string | undefined) => Promise<{ rev: string }>,
  reply: FastifyReply,
): Promise<unknown> {
  const dest = parseDestination(destination);
  const destId = checkDocId(dest.id);
  if (rev !== undefined && !isRev(rev)) throw new FirkinError('bad_request', `rev ${JSON.stringify(rev)} is not a revision`);
  const doc = await source.getDoc({ rev });
  if (doc._deleted === true) throw new FirkinError('not_found', `revision ${doc._rev as string} of ${JSON.stringify(doc._id)} is deleted`);
  const at = doc._rev as string;
  const atts = doc._attachments === undefined ? undefined : await inlineWith((name) => source.attachment(name, at), doc);
  const { _id, id: _alias, _rev, _attachments, _revisions, ...body } = doc;
  const result = await write(destId, parseDoc({ ...body, _id: destId, ...(atts === undefined ? {} : { _attachments: atts }) }), dest.rev);
  reply.code(201).header('etag', `"${result.rev}"`);
  return result;
}

/**
 * CouchDB's `Destination` header: the target document's id (percent-encoded or not), with
 * `?rev=R` to replace that document's revision R (without it, the target must not exist).
 */
export function parseDestination(header: string | string[] | undefined): { id: string; rev: string | undefined } {
  if (typeof header !== 'string' || header.trim() === '') throw new FirkinError('bad_request', 'COPY needs a Destination header naming the new document (Destination: <id>, or <id>?rev=<rev> to replace one)');
  const [rawId, query] = header.trim().split('?', 2) as [string, string | undefined];
  let id: string;
  try {
    id = decodeURIComponent(rawId);
  } catch {
    throw new FirkinError('bad_request', `Destination ${JSON.stringify(header)} is not a valid percent-encoded document id`);
  }
  const rev = query === undefined ? undefined : (new URLSearchParams(query).get('rev') ?? undefined);
  if (rev !== undefined && !isRev(rev)) throw new FirkinError('bad_request', `Destination's rev ${JSON.stringify(rev)} is not a revision (<generation>-<hash>)`);
  return { id, rev };
}

/** `_revs_diff`'s body: revisions by document id (a database's and a VDB's). */
export const revsDiffBody = {
  type: 'object',
  maxProperties: LIMITS.bulkDocsMax,
  additionalProperties: { type: 'array', maxItems: 1000, items: { type: 'string', maxLength: 200 } },
} as const;
