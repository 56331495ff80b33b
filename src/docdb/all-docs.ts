// `_all_docs` rows beyond the engine's listing: CouchDB's extras on each row's document, and a
// VDB shard's part of a merged listing (node-local shards and shard leaders read the same way).
import type { AllDocsRow, DocEngine } from './engine.js';
import { withInlineAttachments } from './inline-attachments.js';
import { conflicts } from './revtree.js';

/**
 * With `include_docs`, CouchDB's extras on each row's document (PouchDB's allDocs asks for
 * both): `conflicts=true` adds `_conflicts`, `attachments=true` puts content inline.
 */
export async function* withDocExtras(
  docs: DocEngine,
  db: string,
  q: { conflicts?: boolean; attachments?: boolean },
  rows: AsyncIterable<AllDocsRow> | Iterable<AllDocsRow>,
): AsyncGenerator<AllDocsRow> {
  for await (const row of rows) {
    if (row.doc !== undefined && row.doc !== null && row.id !== undefined) {
      if (q.conflicts === true) {
        const rec = await docs.getRecord(db, row.id);
        const others = rec === undefined ? [] : conflicts(rec.tree);
        if (others.length > 0) row.doc = { ...row.doc, _conflicts: others };
      }
      if (q.attachments === true) row.doc = await withInlineAttachments(docs, db, row.id, row.doc);
    }
    yield row;
  }
}

/** What one VDB shard reads for a page of `_all_docs` by range (the merge applies `skip`). */
export interface ShardAllDocsRange {
  readonly startkey?: string;
  readonly endkey?: string;
  readonly inclusiveEnd: boolean;
  readonly descending: boolean;
  /** The page's skip + limit: no shard contributes more rows than that. */
  readonly limit?: number;
  readonly includeDocs: boolean;
  readonly conflicts: boolean;
}

/** A shard's first rows of the range, only ids it owns (`owns`: during a split or merge). */
export async function shardAllDocs(docs: DocEngine, db: string, o: ShardAllDocsRange, owns?: (id: string) => boolean): Promise<AllDocsRow[]> {
  const out: AllDocsRow[] = [];
  const max = o.limit ?? Number.POSITIVE_INFINITY;
  if (max <= 0) return out;
  // With an ownership filter the engine cannot stop at the limit: copies it skips do not count.
  const rows = docs.allDocs(db, { startkey: o.startkey, endkey: o.endkey, inclusiveEnd: o.inclusiveEnd, descending: o.descending, includeDocs: o.includeDocs, skip: 0, limit: owns === undefined ? o.limit : undefined });
  for await (const row of withDocExtras(docs, db, { conflicts: o.conflicts }, rows)) {
    if (owns !== undefined && !owns(row.id!)) continue;
    out.push(row);
    if (out.length >= max) break;
  }
  return out;
}

/** A shard's rows for ids it owns, in the order given. */
export async function shardAllDocsByKeys(docs: DocEngine, db: string, ids: readonly string[], o: { includeDocs: boolean; conflicts: boolean }): Promise<AllDocsRow[]> {
  const out: AllDocsRow[] = [];
  for await (const row of withDocExtras(docs, db, { conflicts: o.conflicts }, await docs.allDocsByKeys(db, ids, o.includeDocs))) out.push(row);
  return out;
}
