// Names and limits of the document database, checked at the door.
import { FirkinError } from '../core/errors.js';
import { compareStrings } from '../core/keys.js';

export const LIMITS = {
  dbNameChars: 63,
  docIdBytes: 512,
  attachmentNameBytes: 255,
  /** CBOR size of one stored body; a bigger document is a 413. */
  docBytesMax: 8 * 1024 * 1024,
  bulkDocsMax: 10_000,
  /** Edits one group commit may gather from several requests of one database. */
  groupEditsMax: 4_096,
  allDocsLimitMax: 100_000,
  changesLimitMax: 100_000,
  longPollTimeoutMsDefault: 60_000,
  longPollTimeoutMsMax: 600_000,
  /** Changes read per page by the SSE stream. */
  streamPageSize: 256,
} as const;

// CouchDB's rule: a lowercase letter first, then lowercase letters, digits and _$()+-/.
const DB_NAME = /^[a-z][a-z0-9_$()+/-]*$/;

export function isDbName(name: string): boolean {
  return name.length <= LIMITS.dbNameChars && DB_NAME.test(name);
}

export function checkDbName(name: string): void {
  if (!isDbName(name)) {
    throw new FirkinError(
      'bad_request',
      `invalid database name ${JSON.stringify(name)}: use 1 to ${LIMITS.dbNameChars} characters, a lowercase letter first, then a-z 0-9 _ $ ( ) + - /`,
    );
  }
}

const DESIGN_PREFIX = '_design/';

/**
 * A CouchDB design document's id (`_design/<name>`). Kept as a plain document, so clients
 * that make them (pouchdb-find's local indexes, couchapps) replicate through unchanged; no
 * view or function in one runs here, and `_find` never returns one.
 */
export function isDesignDocId(id: string): boolean {
  return id.length > DESIGN_PREFIX.length && id.startsWith(DESIGN_PREFIX);
}

/** Whether a document can have this id: `checkDocId`'s rule, for reads that answer "missing". */
export function isDocId(id: string): boolean {
  return id !== '' && (!id.startsWith('_') || isDesignDocId(id)) && Buffer.byteLength(id) <= LIMITS.docIdBytes;
}

export function checkDocId(id: unknown): string {
  if (typeof id !== 'string' || id === '') throw new FirkinError('bad_request', 'document id must be a non-empty string');
  if (id.startsWith('_') && !isDesignDocId(id)) throw new FirkinError('bad_request', `document id ${JSON.stringify(id)} is reserved: ids may not start with _ (but for _design/<name>)`);
  if (Buffer.byteLength(id) > LIMITS.docIdBytes) throw new FirkinError('bad_request', `document id is longer than ${LIMITS.docIdBytes} bytes`);
  return id;
}

export function checkAttachmentName(name: string): string {
  if (name === '' || /[\u0000\\/]/.test(name) || Buffer.byteLength(name) > LIMITS.attachmentNameBytes) {
    throw new FirkinError('bad_request', `invalid attachment name ${JSON.stringify(name)}: 1 to ${LIMITS.attachmentNameBytes} bytes, no / \\ or NUL`);
  }
  // Stored as a key of a CBOR map, which cbor-x reads back as "__proto_": the attachment was lost.
  if (name === '__proto__') throw new FirkinError('bad_request', 'invalid attachment name "__proto__": reserved');
  return name;
}

/** A page of a key range: CouchDB's `startkey`, `endkey`, `inclusive_end`, `descending`, `skip`, `limit`. */
export interface KeyPage {
  startkey?: string;
  endkey?: string;
  descending: boolean;
  inclusiveEnd: boolean;
  skip: number;
  limit?: number;
}

/**
 * CouchDB's range over a list of keys (pure; `_all_dbs` over names, `_local_docs` over ids): in
 * code point order, walked backwards when `descending` (then `startkey` is the high end, as in
 * CouchDB), from `startkey` to `endkey`, then `skip` and `limit`.
 */
export function pageKeys(keys: readonly string[], page: KeyPage): string[] {
  const sorted = [...keys].sort(compareStrings);
  if (page.descending) sorted.reverse();
  // Before the start or past the end, in the walk's direction.
  const before = (key: string) => page.startkey !== undefined && (page.descending ? compareStrings(key, page.startkey) > 0 : compareStrings(key, page.startkey) < 0);
  const past = (key: string) => {
    if (page.endkey === undefined) return false;
    if (key === page.endkey) return !page.inclusiveEnd;
    return page.descending ? compareStrings(key, page.endkey) < 0 : compareStrings(key, page.endkey) > 0;
  };
  const inRange = sorted.filter((key) => !before(key) && !past(key));
  return inRange.slice(page.skip, page.limit === undefined ? undefined : page.skip + page.limit);
}
