// `_all_docs` rows beyond the engine's listing: CouchDB's extras on each row's document, and a
// VDB's listing: each shard's pages (node-local shards and shard leaders read the same way)
// merged by id.
import type { AllDocsRow, DocEngine } from './engine.js';
import { withInlineAttachments } from './inline-attachments.js';
import { FirkinError, isFirkinError } from '../core/errors.js';
import { compareStrings } from '../core/keys.js';
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

/** One page of a VDB shard's `_all_docs` by range. */
export interface ShardAllDocsRange {
  readonly startkey?: string;
  readonly endkey?: string;
  readonly inclusiveEnd: boolean;
  readonly descending: boolean;
  /** The next page starts after this id (the last one the shard gave), not at `startkey`. */
  readonly after?: string;
  readonly limit: number;
  readonly includeDocs: boolean;
  readonly conflicts: boolean;
}

/** A shard's page of the range, only ids it owns (`owns`: its range in the map the reader holds). */
export async function shardAllDocs(docs: DocEngine, db: string, o: ShardAllDocsRange, owns?: (id: string) => boolean): Promise<AllDocsRow[]> {
  const out: AllDocsRow[] = [];
  if (o.limit <= 0) return out;
  const startkey = o.after ?? o.startkey;
  // Rows the engine may give that do not count: the `after` row itself, and ids not owned.
  const rows = docs.allDocs(db, { startkey, endkey: o.endkey, inclusiveEnd: o.inclusiveEnd, descending: o.descending, includeDocs: o.includeDocs, skip: 0, limit: owns === undefined && o.after === undefined ? o.limit : undefined });
  for await (const row of withDocExtras(docs, db, { conflicts: o.conflicts }, rows)) {
    if (row.id === o.after || (owns !== undefined && !owns(row.id!))) continue;
    out.push(row);
    if (out.length >= o.limit) break;
  }
  return out;
}

/** Reads a shard's next page of a listing: ids after `after` (undefined: from the range's start). */
export type ListingPageReader = (after: string | undefined, limit: number) => Promise<AllDocsRow[]>;

/** A VDB's shards as a listing reads them now; `version` changes when a split or merge switches the map. */
export interface ListingShards {
  readonly version: unknown;
  readonly readers: readonly ListingPageReader[];
}

/** Rows a listing asks each shard for at a time. */
export const LISTING_PAGE_ROWS = 500;
/** Times a listing starts again on a newer map before it gives up. */
const LISTING_REMAPS_MAX = 8;

/**
 * Every shard's rows of a listing merged by id, read a page at a time, then cut to `skip` and
 * `limit`: what one database holding every shard's documents would list, in bounded memory.
 * When the map changes under it (`shardsNow` answers a new version, or a reader says
 * `stale_epoch`), every shard's cursor starts again after the last row merged, on the new
 * map's shards: each id is listed once, in order. `shardsNow(true)` waits for a newer map.
 */
export async function* mergedListing(
  shardsNow: (afterStale: boolean) => ListingShards | Promise<ListingShards>,
  o: { descending: boolean; skip: number; limit?: number; pageRows?: number },
): AsyncGenerator<AllDocsRow> {
  const pageRows = o.pageRows ?? LISTING_PAGE_ROWS;
  const before = (a: string, b: string) => (o.descending ? compareStrings(a, b) > 0 : compareStrings(a, b) < 0);
  type Cursor = { read: ListingPageReader; rows: AllDocsRow[]; at: number; after: string | undefined; done: boolean };
  let lastMerged: string | undefined;
  let shards = await shardsNow(false);
  const open = (s: ListingShards): Cursor[] => s.readers.map((read) => ({ read, rows: [], at: 0, after: lastMerged, done: false }));
  let cursors = open(shards);
  let merged = 0;
  let given = 0;
  let remaps = 0;
  while (o.limit === undefined || given < o.limit) {
    const empty = cursors.filter((c) => c.at >= c.rows.length && !c.done);
    if (empty.length > 0) {
      let next: ListingShards | undefined = await shardsNow(false);
      if (next.version === shards.version) {
        next = undefined;
        try {
          await Promise.all(
            empty.map(async (c) => {
              c.rows = await c.read(c.after, pageRows);
              c.at = 0;
              c.done = c.rows.length < pageRows;
              if (c.rows.length > 0) c.after = c.rows[c.rows.length - 1]!.id;
            }),
          );
        } catch (err) {
          // The map moved during the read (a shard switched away, or was dropped): go on on the new one.
          const now = await shardsNow(false);
          if (now.version !== shards.version) next = now;
          else if (isFirkinError(err) && err.code === 'stale_epoch') next = await shardsNow(true);
          else throw err;
        }
      }
      if (next !== undefined) {
        if (++remaps > LISTING_REMAPS_MAX) throw new FirkinError('unavailable', `the shard map kept changing under the listing (${LISTING_REMAPS_MAX} times): list again`);
        shards = next;
        cursors = open(shards);
        continue;
      }
    }
    let best: Cursor | undefined;
    for (const c of cursors) if (c.at < c.rows.length && (best === undefined || before(c.rows[c.at]!.id!, best.rows[best.at]!.id!))) best = c;
    if (best === undefined) return;
    const row = best.rows[best.at++]!;
    lastMerged = row.id;
    if (merged++ < o.skip) continue;
    given++;
    yield row;
  }
}

/**
 * `_all_docs` rows of ids asked for by key, each read on the shard it routes to (`shardOf`),
 * one read per shard, the rows back in the order asked.
 */
export async function rowsByRoute<S>(ids: readonly string[], shardOf: (id: string) => S, read: (shard: S, ids: string[]) => Promise<AllDocsRow[]>): Promise<AllDocsRow[]> {
  return byRoute(ids, shardOf, read);
}

/** Items grouped by the shard each routes to, each group read in one call (in parallel); answers in the items' order. */
export async function byRoute<I, S, R>(items: readonly I[], shardOf: (item: I) => S, read: (shard: S, items: I[]) => Promise<readonly R[]>): Promise<R[]> {
  const byShard = new Map<S, number[]>();
  items.forEach((item, i) => {
    const shard = shardOf(item);
    byShard.set(shard, [...(byShard.get(shard) ?? []), i]);
  });
  const out: R[] = new Array(items.length);
  await Promise.all([...byShard].map(async ([shard, idx]) => (await read(shard, idx.map((i) => items[i]!))).forEach((r, j) => (out[idx[j]!] = r))));
  return out;
}

/** A shard's rows for ids it owns, in the order given. */
export async function shardAllDocsByKeys(docs: DocEngine, db: string, ids: readonly string[], o: { includeDocs: boolean; conflicts: boolean }): Promise<AllDocsRow[]> {
  const out: AllDocsRow[] = [];
  for await (const row of withDocExtras(docs, db, { conflicts: o.conflicts }, await docs.allDocsByKeys(db, ids, o.includeDocs))) out.push(row);
  return out;
}

/** The rows with the first one read: what fails at once is an HTTP error, not a cut stream. */
export async function primed<T>(rows: AsyncGenerator<T>): Promise<AsyncIterable<T>> {
  const first = await rows.next();
  return (async function* () {
    if (first.done === true) return;
    yield first.value;
    yield* rows;
  })();
}
