// CouchDB's `_bulk_get` over one database: every revision asked for, with `_revisions` and
// attachments inline on request; an entry without a rev asks for every leaf. Shared by a
// database's route, a standalone VDB (per shard database) and a replicated VDB shard's read.
import type { DocEngine } from '../engine.js';
import { isDocId } from '../names.js';
import { isRev, leaves } from '../revtree.js';
import { byRoute } from '../all-docs.js';
import { type RevsDiff, readRevisions } from './endpoints.js';

/** Entries one `_bulk_get` may ask for: every one may carry attachments inline. */
export const BULK_GET_MAX = 1_000;

export interface BulkGetRequest {
  readonly id: string;
  readonly rev?: string;
  readonly atts_since?: readonly string[];
}

export type BulkGetEntry = { ok: Record<string, unknown> } | { error: { id: string; rev: string; error: string; reason: string } };

export interface BulkGetResult {
  readonly id: string;
  readonly docs: BulkGetEntry[];
}

/** One result per entry, in order. */
export async function bulkGet(docs: DocEngine, db: string, entries: readonly BulkGetRequest[], options: { revs: boolean; attachments: boolean }): Promise<BulkGetResult[]> {
  // Ids no document can have (reserved, too long) are read as missing, never looked up.
  const readable = isDocId;
  // An entry without a rev asks for every leaf: their records in one read.
  const unversioned = entries.filter((e) => e.rev === undefined && readable(e.id)).map((e) => e.id);
  const records = await docs.getRecords(db, unversioned);
  const leafRevs = new Map(unversioned.map((id, i) => [id, records[i] === undefined ? [] : leaves(records[i]!.tree).map((n) => n.rev)]));
  const revsOf = entries.map(({ id, rev }) => (rev !== undefined ? [rev] : (leafRevs.get(id) ?? [])));
  // Then every wanted revision's record and body in one read each.
  const wanted = entries.flatMap(({ id, rev, atts_since }, i) => (readable(id) && (rev === undefined || isRev(rev)) ? revsOf[i]!.map((r) => ({ id, rev: r, attsSince: atts_since })) : []));
  const found = await readRevisions(docs, db, wanted, options);
  let next = 0;
  return entries.map(({ id, rev }, i): BulkGetResult => {
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
}

/** The request body's schema (a database's and a VDB's route). */
export const bulkGetBody = {
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

export const bulkGetQuery = { type: 'object', properties: { revs: { type: 'boolean' }, attachments: { type: 'boolean' }, latest: { type: 'boolean' } } } as const;

/** Every leaf revision of each id (CouchDB's `style=all_docs`), in the order given; none for an id without a record. */
export async function leafRevs(docs: DocEngine, db: string, ids: readonly { id: string }[]): Promise<string[][]> {
  const records = await docs.getRecords(db, ids.map((e) => e.id));
  return records.map((r) => (r === undefined ? [] : leaves(r.tree).map((n) => n.rev)));
}

/** A `_revs_diff` answered shard by shard: each id asked of the shard it routes to, in parallel. */
export async function diffByRoute<S>(request: Readonly<Record<string, readonly string[]>>, shardOf: (id: string) => S, diff: (shard: S, part: Record<string, readonly string[]>) => Promise<RevsDiff>): Promise<RevsDiff> {
  const ids = Object.keys(request);
  const found = await byRoute(ids, shardOf, async (shard, some) => {
    const answer = await diff(shard, Object.fromEntries(some.map((id) => [id, request[id]!])));
    return some.map((id) => answer[id]);
  });
  const out: RevsDiff = {};
  ids.forEach((id, i) => {
    if (found[i] !== undefined) out[id] = found[i]!;
  });
  return out;
}
