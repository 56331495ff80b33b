// Helpers shared by the document-database route files: the expected revision of a write
// and the `since` of a changes read, each from all the places a client may put it.
import { FirkinError } from '../../core/errors.js';
import { type Hlc, parseHlc } from '../../core/hlc.js';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Readable } from 'node:stream';
import type { AllDocsRow, DocEngine, GetDocOptions } from '../../docdb/engine.js';
import { LIMITS, checkDbName } from '../../docdb/names.js';
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

/** 400 for a malformed name, 404 for a database that does not exist. */
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
