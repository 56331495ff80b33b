// One round of the `_find` grammar oracle, for any place that answers `_find` over HTTP (a
// database, a standalone VDB, a VDB across cluster nodes): write random documents, delete some,
// ask a query drawn from the whole grammar (as a selector or a `where` list, sorted or not, paged
// by offset or by bookmark) and compare with brute force: the ids, their order and the total;
// `_explain` must answer the query too.
import fc from 'fast-check';
import type { Condition, Json, Path } from '../../src/docdb/query/ast.js';
import { compareForOrder, matches } from '../../src/docdb/query/match.js';
import { parseFind } from '../../src/docdb/query/parse.js';
import { arbDoc, conditionsOn, toSelector, toWhere } from './query-arbitraries.js';

type Doc = { _id: string } & Record<string, Json>;

/** Sends one request (a body is JSON) and answers its status and parsed body. */
export type Send = (method: string, path: string, body?: unknown) => Promise<{ status: number; body: any }>;

// Mostly the documents' own fields, so most conditions select some documents and not all.
const arbCondition = conditionsOn(
  fc.oneof(
    { weight: 6, arbitrary: fc.constantFrom<Path>(['a'], ['b'], ['n'], ['tags']) },
    { weight: 2, arbitrary: fc.constantFrom<Path>(['a', 'b'], ['tags', 0], ['a', 0], ['n', 'a'], ['b', 1]) },
    { weight: 1, arbitrary: fc.constantFrom<Path>(['tags', 'x'], ['a', 'b', 'n'], ['_id']) },
  ),
);

const arbOrder = fc.constantFrom<unknown[] | undefined>(
  undefined,
  [{ a: 'asc' }],
  [{ a: 'desc' }],
  [{ b: 'desc' }, { a: 'asc' }],
  [{ n: 'asc' }, { _id: 'desc' }],
  [{ _id: 'desc' }],
  [{ 'a.b': 'asc' }],
);

export interface FindCase {
  readonly docs: readonly Record<string, Json>[];
  readonly deletes: readonly number[];
  readonly conditions: readonly Condition[];
  readonly preferWhere: boolean;
  readonly order: unknown[] | undefined;
  readonly page: { readonly limit: number | undefined; readonly offset: number; readonly byBookmark: boolean };
}

export const arbFindCase: fc.Arbitrary<FindCase> = fc.record({
  docs: fc.array(arbDoc, { minLength: 1, maxLength: 40 }),
  deletes: fc.array(fc.nat({ max: 39 }), { maxLength: 4 }),
  conditions: fc.oneof({ weight: 3, arbitrary: fc.tuple(arbCondition) }, { weight: 2, arbitrary: fc.array(arbCondition, { minLength: 2, maxLength: 3 }) }),
  preferWhere: fc.boolean(),
  order: arbOrder,
  page: fc.record({ limit: fc.option(fc.integer({ min: 1, max: 6 }), { nil: undefined }), offset: fc.nat({ max: 3 }), byBookmark: fc.boolean() }),
});

/** Brute force: the documents matching a `_find` body, in its order. */
export function bruteForce(docs: readonly { _id: string }[], body: unknown): { id: string; body: Json }[] {
  const q = parseFind(body);
  return docs
    .map((d) => ({ id: d._id, body: d as unknown as Json }))
    .filter((d) => matches(d.body, q.where as Condition))
    .sort((a, b) => compareForOrder(a, b, q.orderBy));
}

export interface FindRound {
  /** What differed from brute force (undefined: nothing). */
  readonly mismatch: string | undefined;
  readonly asWhere: boolean;
  readonly matched: number;
  /** The round's live documents and their revisions (to clear them for the next round). */
  readonly live: ReadonlyMap<string, string>;
}

/**
 * One round under `at` (`/db/x` or `/vdb/x`, which must hold no live document): the case's
 * documents get ids `${prefix}d00`…, so rounds sharing a place do not collide. `_explain` of
 * the query must answer too.
 */
export async function findRound(send: Send, at: string, c: FindCase, prefix: string): Promise<FindRound> {
  const docs: Doc[] = c.docs.map((d, i) => ({ ...d, _id: `${prefix}d${String(i).padStart(2, '0')}` }));
  const written = await send('POST', `${at}/_bulk_docs`, { docs });
  if (written.status !== 201) throw new Error(`bulk write answered ${written.status}: ${JSON.stringify(written.body)}`);
  // A database answers CouchDB's bare array, a VDB `{results}`.
  const results = (Array.isArray(written.body) ? written.body : written.body.results) as { id: string; rev: string }[];
  const revs = new Map(results.map((r) => [r.id, r.rev]));
  for (const i of c.deletes) {
    const id = docs[i % docs.length]!._id;
    if (!revs.has(id)) continue;
    const r = await send('DELETE', `${at}/${id}?rev=${revs.get(id)}`);
    if (r.status !== 200) throw new Error(`delete ${id} answered ${r.status}: ${JSON.stringify(r.body)}`);
    revs.delete(id);
  }
  const where = c.preferWhere ? c.conditions.map(toWhere) : [];
  const query: Record<string, unknown> =
    where.length > 0 && where.every((w) => w !== undefined) ? { where } : { selector: c.conditions.length === 1 ? toSelector(c.conditions[0]!) : { $and: c.conditions.map(toSelector) } };
  if (c.order !== undefined) query.sort = c.order;
  const expected = bruteForce(docs.filter((d) => revs.has(d._id)), query).map((d) => d.id);
  const round = (mismatch: string | undefined): FindRound => ({ mismatch, asWhere: 'where' in query, matched: expected.length, live: revs });
  const explained = await send('POST', `${at}/_explain`, query);
  if (explained.status !== 200) return round(`_explain of ${JSON.stringify(query)} answered ${explained.status}: ${JSON.stringify(explained.body)}`);
  const { limit, offset, byBookmark } = c.page;
  if (byBookmark && limit !== undefined) {
    const got: string[] = [];
    let bookmark: string | undefined;
    for (let pages = 0; pages <= expected.length / limit + 1; pages++) {
      const res = await send('POST', `${at}/_find`, { ...query, limit, ...(bookmark === undefined ? {} : { bookmark }) });
      if (res.status !== 200) return round(`_find of ${JSON.stringify(query)} answered ${res.status}: ${JSON.stringify(res.body)}`);
      got.push(...(res.body.docs as Doc[]).map((d) => d._id));
      bookmark = res.body.bookmark;
      if (res.body.docs.length < limit) break;
    }
    return round(JSON.stringify(got) === JSON.stringify(expected) ? undefined : `pages of ${limit} of ${JSON.stringify(query)}: ${JSON.stringify(got)}, brute force ${JSON.stringify(expected)}`);
  }
  const body = { ...query, skip: offset, ...(limit === undefined ? {} : { limit }) };
  const res = await send('POST', `${at}/_find`, body);
  if (res.status !== 200) return round(`_find of ${JSON.stringify(body)} answered ${res.status}: ${JSON.stringify(res.body)}`);
  const want = expected.slice(offset, limit === undefined ? undefined : offset + limit);
  const got = (res.body.docs as Doc[]).map((d) => d._id);
  if (res.body.meta.total !== expected.length) return round(`_find of ${JSON.stringify(body)}: total ${res.body.meta.total}, brute force ${expected.length}`);
  return round(JSON.stringify(got) === JSON.stringify(want) ? undefined : `_find of ${JSON.stringify(body)}: ${JSON.stringify(got)}, brute force ${JSON.stringify(want)}`);
}
