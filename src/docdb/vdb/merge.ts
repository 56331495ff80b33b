// Merging the shards' answers of a VDB read (pure): the same for node-local shards and for
// shards that are Raft groups on other nodes.
import { type FindQuery, pageEnd } from '../query/ast.js';
import { type FindStats, sumStats } from '../query/stats.js';
import { compareForOrder, project } from '../query/match.js';
import { bookmarkAfter } from '../query/bookmark.js';

/**
 * Shard pages of one `_find` (each the first offset+limit of its matches, whole documents:
 * the order may need fields the projection drops), merged in the query's order, cut to its
 * window, then projected to `fields`.
 */
/** A VDB's `_find` answer, with what its shards read (`execution_stats`). */
export interface MergedFind {
  docs: Record<string, unknown>[];
  meta: { total: number; offset: number; limit: number | null };
  bookmark: string;
  stats: FindStats;
}

export function mergeFind(
  q: FindQuery,
  results: readonly { readonly docs: readonly Record<string, unknown>[]; readonly total: number; readonly stats?: FindStats | undefined }[],
): MergedFind {
  const total = results.reduce((n, r) => n + r.total, 0);
  const merged = results
    .flatMap((r) => r.docs)
    .map((d) => ({ id: d._id as string, rev: d._rev as string, body: d as never, doc: d }))
    .sort((a, b) => compareForOrder(a, b, q.orderBy));
  const page = merged.slice(q.offset, pageEnd(q));
  return {
    docs: page.map((m) => (q.includeDocs ? project(m.doc, q.fields) : { _id: m.doc._id, _rev: m.doc._rev })),
    meta: { total, offset: q.offset, limit: q.limit ?? null },
    // From the whole documents, before `fields` cuts them (the order may need a field it drops).
    bookmark: bookmarkAfter(page, q),
    stats: sumStats(results.map((r) => r.stats)),
  };
}
