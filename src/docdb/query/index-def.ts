// CouchDB's index routes, for clients that declare an index before they `_find` (PouchDB's
// `createIndex`, nano's `db.createIndex`, Fauxton). Firkin indexes every scalar field of every
// document as it is written (the automatic index, docs/query.md), so a JSON index a client
// declares already exists: nothing is stored, the declaration is checked as CouchDB checks it
// and answered `"exists"`, and the built-in indexes are listed. Pure: no I/O.
import { FirkinError } from '../../core/errors.js';
import { QUERY_LIMITS, parsePath, parseSelector } from './parse.js';
import { isPlainObject } from '../../core/values.js';

const bad = (message: string) => new FirkinError('bad_request', message);

/** The name and design document `POST _index` answers with, and `GET _index` lists. */
export const AUTOMATIC_INDEX = { ddoc: '_design/_auto', name: '_auto' } as const;

export interface IndexAnswer {
  result: 'exists';
  id: string;
  name: string;
}

const REQUEST_FIELDS = ['index', 'name', 'ddoc', 'type', 'partitioned'];
const INDEX_FIELDS = ['fields', 'partial_filter_selector'];

/** Checks a CouchDB index declaration (`POST /{db}/_index`); a 400 names what is wrong. */
export function declareIndex(raw: unknown): IndexAnswer {
  if (!isPlainObject(raw)) throw bad('the _index body must be an object: {"index": {"fields": [...]}}');
  for (const k of Object.keys(raw)) if (!REQUEST_FIELDS.includes(k)) throw bad(`unknown _index field ${JSON.stringify(k)}`);
  const type = raw.type ?? 'json';
  if (type === 'text' || type === 'nouveau') throw bad(`"type": ${JSON.stringify(type)} (CouchDB's full-text search) is not offered here: a vector collection's BM25 search (POST /vectordb/collections/:c/search/bm25) ranks text`);
  if (type !== 'json') throw bad(`"type" must be "json", got ${JSON.stringify(type)}`);
  for (const k of ['name', 'ddoc'] as const) {
    if (raw[k] !== undefined && (typeof raw[k] !== 'string' || raw[k] === '')) throw bad(`"${k}" must be a non-empty string`);
  }
  if (raw.partitioned !== undefined && raw.partitioned !== false) throw bad('partitioned indexes need a partitioned database, which Firkin does not have');
  const index = raw.index;
  if (!isPlainObject(index)) throw bad('"index" must be an object: {"fields": ["field", ...]}');
  for (const k of Object.keys(index)) if (!INDEX_FIELDS.includes(k)) throw bad(`unknown index field ${JSON.stringify(k)}`);
  checkFields(index.fields);
  // Checked so a mistake is a 400 here, not a surprise later; every document stays indexed.
  if (index.partial_filter_selector !== undefined) parseSelector(index.partial_filter_selector);
  return { result: 'exists', id: AUTOMATIC_INDEX.ddoc, name: AUTOMATIC_INDEX.name };
}

/** CouchDB's index fields: field names (dotted) or `{"field": "asc" | "desc"}`, one direction for all. */
function checkFields(raw: unknown): void {
  if (!Array.isArray(raw) || raw.length === 0) throw bad('index.fields must be a non-empty list of field names');
  if (raw.length > QUERY_LIMITS.fieldsMax) throw bad(`index.fields has more than ${QUERY_LIMITS.fieldsMax} names`);
  const dirs = new Set<string>();
  raw.forEach((f, i) => {
    const where = `index.fields[${i}]`;
    let name: unknown = f;
    if (isPlainObject(f)) {
      const entries = Object.entries(f);
      if (entries.length !== 1) throw bad(`${where} must be a field name or {"field": "asc" | "desc"}`);
      const [key, dir] = entries[0]!;
      if (dir !== 'asc' && dir !== 'desc') throw bad(`${where}: the direction must be "asc" or "desc", got ${JSON.stringify(dir)}`);
      dirs.add(dir);
      name = key;
    } else dirs.add('asc');
    if (typeof name !== 'string' || name === '') throw bad(`${where} must be a field name or {"field": "asc" | "desc"}`);
    parsePath(name, where);
  });
  if (dirs.size > 1) throw bad('index.fields mixes "asc" and "desc": CouchDB sorts an index in one direction');
}

/** `GET /{db}/_index`: CouchDB's listing, with the automatic index beside `_all_docs`. */
export function listIndexes(): { total_rows: number; indexes: Record<string, unknown>[] } {
  const indexes = [
    { ddoc: null, name: '_all_docs', type: 'special', def: { fields: [{ _id: 'asc' }] } },
    { ddoc: AUTOMATIC_INDEX.ddoc, name: AUTOMATIC_INDEX.name, type: 'json', def: { fields: [] }, covers: 'every scalar field of every document, kept as documents are written' },
  ];
  return { total_rows: indexes.length, indexes };
}

/** `DELETE /{db}/_index/{ddoc}/json/{name}`: the built-ins stay (403); nothing else exists (404). */
export function refuseIndexDelete(ddoc: string, name: string): FirkinError {
  const bare = ddoc.startsWith('_design/') ? ddoc.slice('_design/'.length) : ddoc;
  if (name === '_all_docs' || (name === AUTOMATIC_INDEX.name && bare === AUTOMATIC_INDEX.ddoc.slice('_design/'.length))) {
    return new FirkinError('forbidden', `${JSON.stringify(name)} is built in and cannot be deleted: every field is indexed as documents are written`);
  }
  return new FirkinError('not_found', `no index ${JSON.stringify(`_design/${bare}`)} / ${JSON.stringify(name)}: Firkin keeps no declared indexes (every field is indexed automatically; POST _index answers "exists")`);
}
