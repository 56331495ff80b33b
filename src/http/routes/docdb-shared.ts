// Helpers shared by the document-database route files: the expected revision of a write
// and the `since` of a changes read, each from all the places a client may put it.
import { FirkinError } from '../../core/errors.js';
import { type Hlc, parseHlc } from '../../core/hlc.js';
import type { DocEngine, GetDocOptions } from '../../docdb/engine.js';
import { checkDbName } from '../../docdb/names.js';
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
