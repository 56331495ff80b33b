// `_find` over real HTTP with conditions drawn from the whole query grammar (every operator,
// nested `$and`/`$or`/`$not`/`$elemMatch`, several top-level conditions so plans narrow one
// scan by the others' keys), as a selector or as a `where` list, sorted or not, paged by offset
// or by bookmark: the answer, its order and its total must be brute force's, and `_explain` must
// answer. find.test.ts's oracles draw from fixed lists; this one reaches plans they do not.
import fc from 'fast-check';
import t from 'tap';
import type { Condition, Json, Path } from '../../../src/docdb/query/ast.js';
import { compareForOrder, matches } from '../../../src/docdb/query/match.js';
import { parseFind } from '../../../src/docdb/query/parse.js';
import { fcParams } from '../../support/fc.js';
import { startTestNode } from '../../support/node.js';
import { arbDoc, conditionsOn, toSelector, toWhere } from '../../support/query-arbitraries.js';

type Doc = { _id: string } & Record<string, Json>;

/** Brute force: the ids matching a `_find` body, in its order. */
function bruteForce(docs: readonly Doc[], body: unknown): string[] {
  const q = parseFind(body);
  return docs
    .map((d) => ({ id: d._id, body: d as unknown as Json }))
    .filter((d) => matches(d.body, q.where as Condition))
    .sort((a, b) => compareForOrder(a, b, q.orderBy))
    .map((d) => d.id);
}

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

/** Where the documents live: a database, or a VDB whose shards' pages `_find` merges. */
const TARGETS = [
  { kind: 'database', base: '/db', create: (name: string) => ({ method: 'PUT', path: `/db/${name}` }) },
  { kind: 'VDB of 3 shards', base: '/vdb', create: (name: string) => ({ method: 'POST', path: '/vdb', body: { name, shard_count: 3 } }) },
] as const;

for (const target of TARGETS) t.test(`oracle (${target.kind}): any condition of the grammar, as a selector or a where list, answers what brute force answers`, async (t) => {
  const node = await startTestNode();
  t.teardown(() => node.close());
  let round = 0;
  let asWhere = 0;
  let hits = 0;
  await fc.assert(
    fc.asyncProperty(
      fc.array(arbDoc, { minLength: 1, maxLength: 40 }),
      fc.array(fc.nat({ max: 39 }), { maxLength: 4 }),
      fc.oneof({ weight: 3, arbitrary: fc.tuple(arbCondition) }, { weight: 2, arbitrary: fc.array(arbCondition, { minLength: 2, maxLength: 3 }) }),
      fc.boolean(),
      arbOrder,
      fc.record({ limit: fc.option(fc.integer({ min: 1, max: 6 }), { nil: undefined }), offset: fc.nat({ max: 3 }), byBookmark: fc.boolean() }),
      async (raw, deletes, conditions, preferWhere, order, page) => {
        const db = `grammar${round++}`;
        const docs: Doc[] = raw.map((d, i) => ({ ...d, _id: `d${String(i).padStart(2, '0')}` }));
        const create = target.create(db);
        const made = await node.request(create.method, create.path, 'body' in create ? { body: create.body } : {});
        if (made.status !== 201) throw new Error(`creating ${db} answered ${made.status}`);
        const at = `${target.base}/${db}`;
        const written = await node.request('POST', `${at}/_bulk_docs`, { body: { docs } });
        if (written.status !== 201) throw new Error(`bulk write answered ${written.status}`);
        // A database answers CouchDB's bare array, a VDB `{results}`.
        const results = (Array.isArray(written.body) ? written.body : written.body.results) as { id: string; rev: string }[];
        const revs = new Map(results.map((r) => [r.id, r.rev]));
        const deleted = new Set<string>();
        for (const i of deletes) {
          const id = docs[i % docs.length]!._id;
          if (deleted.has(id)) continue;
          deleted.add(id);
          await node.request('DELETE', `${at}/${id}?rev=${revs.get(id)}`);
        }
        const where = preferWhere ? conditions.map(toWhere) : [];
        const query: Record<string, unknown> =
          where.length > 0 && where.every((w) => w !== undefined) ? { where } : { selector: conditions.length === 1 ? toSelector(conditions[0]!) : { $and: conditions.map(toSelector) } };
        if ('where' in query) asWhere++;
        if (order !== undefined) query.sort = order;
        const live = docs.filter((d) => !deleted.has(d._id));
        const expected = bruteForce(live, query);
        try {
          if (target.base === '/db') {
            const explained = await node.request('POST', `${at}/_explain`, { body: query });
            if (explained.status !== 200) throw new Error(`_explain answered ${explained.status}: ${JSON.stringify(explained.body)}`);
          }
          if (page.byBookmark && page.limit !== undefined) {
            const got: string[] = [];
            let bookmark: string | undefined;
            for (let pages = 0; pages <= expected.length / page.limit + 1; pages++) {
              const res = await node.request('POST', `${at}/_find`, { body: { ...query, limit: page.limit, ...(bookmark === undefined ? {} : { bookmark }) } });
              if (res.status !== 200) throw new Error(`_find answered ${res.status}: ${JSON.stringify(res.body)}`);
              got.push(...(res.body.docs as Doc[]).map((d) => d._id));
              bookmark = res.body.bookmark;
              if (res.body.docs.length < page.limit) break;
            }
            if (expected.length > 0) hits++;
            return JSON.stringify(got) === JSON.stringify(expected);
          }
          const body = { ...query, skip: page.offset, ...(page.limit === undefined ? {} : { limit: page.limit }) };
          const res = await node.request('POST', `${at}/_find`, { body });
          if (res.status !== 200) throw new Error(`_find answered ${res.status}: ${JSON.stringify(res.body)}`);
          if (expected.length > 0) hits++;
          const want = expected.slice(page.offset, page.limit === undefined ? undefined : page.offset + page.limit);
          const got = (res.body.docs as Doc[]).map((d) => d._id);
          return res.body.meta.total === expected.length && JSON.stringify(got) === JSON.stringify(want);
        } finally {
          await node.request('DELETE', at);
        }
      },
    ),
    fcParams(150),
  );
  t.ok(asWhere > 0, `some queries went as where lists (${asWhere})`);
  t.ok(hits > 0, `some queries matched documents (${hits})`);
});
