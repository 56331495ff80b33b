// `_find` over real HTTP against a real node: every operator, counting, ordering, paging,
// errors; and an oracle property: any plan returns exactly what brute force returns.
import fc from 'fast-check';
import t from 'tap';
import type { Json } from '../../../src/docdb/query/ast.js';
import { fcParams } from '../../support/fc.js';
import { bruteForce } from '../../support/find-oracle.js';
import { type TestNode, startTestNode } from '../../support/node.js';
import { arbDoc } from '../../support/query-arbitraries.js';

const USERS = [
  { _id: 'u1', type: 'user', name: 'Ada', age: 36, tags: ['math', 'code'], profile: { city: 'London' }, active: true },
  { _id: 'u2', type: 'user', name: 'Alan', age: 41, tags: ['code'], profile: { city: 'Wilmslow' }, active: false },
  { _id: 'u3', type: 'user', name: 'Grace', age: 85, tags: ['navy', 'code'], profile: { city: 'Arlington' }, active: true },
  { _id: 'u4', type: 'admin', name: 'Edsger', age: 72, tags: [], profile: { city: 'Nuenen' } },
  { _id: 'u5', type: 'user', name: 'Barbara', age: '59', profile: null },
];

async function seed(node: TestNode, db: string, docs: Record<string, unknown>[]): Promise<void> {
  t.equal((await node.request('PUT', `/db/${db}`)).status, 201);
  const res = await node.request('POST', `/db/${db}/_bulk_docs`, { body: { docs } });
  t.equal(res.status, 201 <= res.status && res.status < 300 ? res.status : 201, 'bulk write accepted');
}

async function find(node: TestNode, db: string, body: unknown) {
  return node.request('POST', `/db/${db}/_find`, { body });
}

const ids = (res: { body: { docs: { _id: string }[] } }) => res.body.docs.map((d) => d._id);

/** A property round's database: `docs` written as d00, d01, …; the documents with their ids and the write's answer. */
async function roundDb<D extends object>(node: TestNode, db: string, docs: readonly D[]) {
  await node.request('PUT', `/db/${db}`);
  const withIds = docs.map((d, i) => ({ ...d, _id: `d${String(i).padStart(2, '0')}` }));
  const written = await node.request('POST', `/db/${db}/_bulk_docs`, { body: { docs: withIds } });
  return { withIds, written };
}

t.test('_find over HTTP', async (t) => {
  const node = await startTestNode();
  t.teardown(() => node.close());
  await seed(node, 'people', USERS);

  const cases: [unknown, string[]][] = [
    [{ where: [{ path: ['type'], value: 'user' }] }, ['u1', 'u2', 'u3', 'u5']],
    [{ where: [{ path: ['type'], op: '!=', value: 'user' }] }, ['u4']],
    [{ where: [{ path: ['age'], op: '>', value: 40 }] }, ['u2', 'u3', 'u4']],
    [{ where: [{ path: ['age'], op: '>=', value: 41 }, { path: ['age'], op: '<', value: 80 }] }, ['u2', 'u4']],
    [{ where: [{ path: ['age'], op: '<=', value: '60' }] }, ['u5']],
    [{ where: [{ path: ['name'], op: 'in', value: ['Ada', 'Grace', 'Nobody'] }] }, ['u1', 'u3']],
    [{ where: [{ path: ['tags'], op: 'contains', value: 'code' }] }, ['u1', 'u2', 'u3']],
    [{ where: [{ path: ['name'], op: 'prefix', value: 'A' }] }, ['u1', 'u2']],
    [{ where: [{ path: ['name'], op: 'regex', value: 'a$' }] }, ['u1', 'u5']],
    [{ where: [{ path: ['active'], op: 'exists' }] }, ['u1', 'u2', 'u3']],
    [{ where: [{ path: ['active'], op: 'missing' }] }, ['u4', 'u5']],
    [{ where: [{ path: ['profile', 'city'], value: 'London' }] }, ['u1']],
    [{ where: [{ path: ['tags', 0], value: 'navy' }] }, ['u3']],
    [{ where: [{ path: ['tags'], value: [] }] }, ['u4']],
    [{ where: [{ path: ['profile'], value: null }] }, ['u5']],
    [{ where: [{ or: [{ path: ['age'], value: 36 }, { path: ['name'], value: 'Edsger' }] }] }, ['u1', 'u4']],
    [{ where: [{ not: { path: ['type'], value: 'user' } }] }, ['u4']],
    [{ where: [{ path: ['_id'], op: '>', value: 'u3' }] }, ['u4', 'u5']],
    [{ selector: { type: 'user', 'profile.city': 'Arlington' } }, ['u3']],
    [{ selector: { age: { $gte: 41, $lt: 80 } } }, ['u2', 'u4']],
    [{}, ['u1', 'u2', 'u3', 'u4', 'u5']],
  ];
  for (const [body, expected] of cases) {
    const res = await find(node, 'people', body);
    t.equal(res.status, 200, JSON.stringify(body));
    t.same(ids(res), expected, JSON.stringify(body));
    t.equal(res.body.meta.total, expected.length);
  }

  const full = await find(node, 'people', { where: [{ path: ['name'], value: 'Ada' }] });
  t.match(full.body.docs[0], { _id: 'u1', name: 'Ada', profile: { city: 'London' } });
  t.match(full.body.docs[0]._rev, /^1-[0-9a-f]{64}$/);
  const cut = await find(node, 'people', { selector: { name: 'Ada' }, fields: ['name', 'profile.city', 'nope'] });
  t.same(cut.body.docs, [{ name: 'Ada', profile: { city: 'London' } }], 'fields: only the listed ones, nested kept nested, absent left out');
  const lastFirst = await find(node, 'people', { selector: { _id: { $gt: null } }, sort: [{ _id: 'desc' }], fields: ['_id'], limit: 2 });
  t.same(lastFirst.body.docs, [{ _id: 'u5' }, { _id: 'u4' }], 'CouchDB forms: every document by $gt null, _id descending');
  const bare = await find(node, 'people', { where: [{ path: ['name'], value: 'Ada' }], include_docs: false });
  t.same(Object.keys(bare.body.docs[0]).sort(), ['_id', '_rev']);

  t.test('counting form', async (t) => {
    const count = await find(node, 'people', { selector: { type: 'user' }, limit: 0 });
    t.same(count.body, { docs: [], meta: { total: 4, offset: 0, limit: 0 }, bookmark: 'nil' });
    const all = await find(node, 'people', { where: [], limit: 0 });
    t.equal(all.body.meta.total, 5);
  });

  t.test('order_by and paging', async (t) => {
    const byAge = await find(node, 'people', { where: [{ path: ['age'], op: 'exists' }], order_by: [{ path: ['age'], dir: 'desc' }] });
    t.same(ids(byAge), ['u5', 'u3', 'u4', 'u2', 'u1'], 'strings sort after numbers; desc reverses');
    const pages: string[] = [];
    for (let offset = 0; offset < 5; offset += 2) {
      const page = await find(node, 'people', { where: [], order_by: [{ path: ['name'] }], limit: 2, offset });
      t.equal(page.body.meta.total, 5);
      t.same(page.body.meta, { total: 5, offset, limit: 2 });
      pages.push(...ids(page));
    }
    t.same(pages, ['u1', 'u2', 'u5', 'u4', 'u3']);
  });

  t.test('updates and deletes are reflected', async (t) => {
    const ada = await node.request('GET', '/db/people/u1');
    const upd = await node.request('PUT', '/db/people/u1', { body: { ...ada.body, _id: undefined, id: undefined, age: 99 }, headers: { 'if-match': ada.body._rev } });
    t.equal(upd.status < 300, true);
    t.same(ids(await find(node, 'people', { where: [{ path: ['age'], value: 36 }] })), []);
    t.same(ids(await find(node, 'people', { where: [{ path: ['age'], value: 99 }] })), ['u1']);
    const alan = await node.request('GET', '/db/people/u2');
    t.equal((await node.request('DELETE', '/db/people/u2', { headers: { 'if-match': alan.body._rev } })).status, 200);
    t.same(ids(await find(node, 'people', { where: [{ path: ['tags'], op: 'contains', value: 'code' }] })), ['u1', 'u3']);
  });

  t.test('errors', async (t) => {
    for (const [body, message] of [
      [{ where: [{ path: ['a'], op: 'like', value: 1 }] }, /unknown operator/],
      [{ where: [{ path: 'a', op: 'regex', value: '(' }] }, /invalid regex/],
      [{ where: [{ path: [{}], value: 1 }] }, /bad segment/],
      [{ selector: { a: { $near: 1 } } }, /unsupported selector operator/],
      [{ limit: 'ten' }, /limit/],
      [{ limit: 100_001 }, /^limit must be at most 100000, got 100001: page with bookmark/],
    ] as const) {
      const res = await find(node, 'people', body);
      t.equal(res.status, 400, JSON.stringify(body));
      t.equal(res.body.error, 'bad_request');
      t.match(res.body.message, message);
    }
    t.equal((await find(node, 'nosuchdb', {})).status, 404);
    t.equal((await find(node, 'Bad!Name', {})).status, 400);
    t.equal((await find(node, 'people', { limit: 100_000 })).status, 200, 'a limit of 100,000 is taken');
  });

  t.test('_explain names the plan', async (t) => {
    const res = await node.request('POST', '/db/people/_explain', { body: { where: [{ path: ['type'], value: 'admin' }, { path: ['active'], op: 'missing' }] } });
    t.equal(res.status, 200);
    t.match(res.body.plan, { kind: 'index', scan: 'type = "admin"' });
    t.equal(res.body.exact, false, '`missing` is no scan: the bodies decide it');
    const scan = await node.request('POST', '/db/people/_explain', { body: { where: [{ path: ['a'], op: 'missing' }] } });
    t.match(scan.body.plan, { kind: 'full_scan' });
    // Several conditions: the smallest scan's ids, tested against the others' keys.
    await seed(node, 'explained', Array.from({ length: 40 }, (_, i) => ({ _id: `e${i}`, kind: i % 2 === 0 ? 'a' : 'b', n: i, ...(i === 7 ? { tag: 'x' } : {}) })));
    const explain = async (selector: unknown) => (await node.request('POST', '/db/explained/_explain', { body: { selector } })).body;
    t.match(await explain({ kind: 'a', n: { $gte: 38 } }), { plan: { scan: 'n >= 38' }, exact: true, narrowing: { candidates: 'n >= 38', tests: [{ scan: 'kind = "a"', postings: 20, test: 'look each candidate up' }] } });
    t.match(await explain({ kind: 'a', n: { $gte: 18 } }), { plan: { scan: 'kind = "a"' }, exact: true, narrowing: { tests: [{ scan: 'n >= 18', postings: 22, test: 'read its keys' }] } });
    t.match(await explain({ kind: 'a', tag: 'x', n: { $gt: 10 } }), {
      plan: { scan: 'tag = "x"' },
      exact: false,
      narrowing: { tests: [{ scan: 'kind = "a"', test: 'look each candidate up' }, { scan: 'n > 10', test: "check the candidates' bodies" }] },
    });
    t.equal((await explain({ kind: 'a', tag: { $regex: 'x$' } })).exact, false, 'a regex is decided by the bodies');
  });
});

t.test('oracle: _find returns exactly the brute-force answer, in order, with the right total', async (t) => {
  const node = await startTestNode();
  t.teardown(() => node.close());
  let round = 0;
  await fc.assert(
    fc.asyncProperty(
      fc.array(arbDoc, { minLength: 1, maxLength: 25 }),
      fc.array(fc.nat({ max: 24 }), { maxLength: 5 }),
      fc.array(fc.tuple(fc.nat({ max: 24 }), arbDoc), { maxLength: 4 }),
      fc.constantFrom<unknown[]>(
        [{ path: ['a'], value: 1 }],
        [{ path: ['a'], op: '>', value: 0 }],
        [{ path: ['tags'], op: 'contains', value: 'x' }],
        [{ path: ['b'], op: 'exists' }, { path: ['n'], op: '<=', value: 2 }],
        [{ path: ['a'], op: 'prefix', value: 'x' }],
        [{ path: ['a'], op: 'in', value: [null, 'x', 2] }],
        [{ or: [{ path: ['a'], value: 'y' }, { path: ['b'], op: 'missing' }] }],
        [{ path: ['a', 'b'], op: 'ne', value: 1 }],
        [{ path: ['n'], op: 'regex', value: '^x' }],
        [{ path: ['a'], op: 'regex', value: 'y$' }],
        [{ path: ['a'], value: 'x' }, { path: ['b'], value: 1 }],
        [{ path: ['b'], value: 1 }],
        [{ path: ['a'], op: 'in', value: ['x', 'x', 1, -1] }],
        // Several conditions: the smallest scan's ids narrowed by the others' keys.
        [{ path: ['a'], op: '>', value: 0 }, { path: ['b'], value: 1 }],
        [{ path: ['a'], op: 'in', value: ['x', 1] }, { path: ['n'], op: 'exists' }, { path: ['b'], op: '>=', value: 0 }],
        [{ path: ['tags'], op: 'contains', value: 'x' }, { path: ['a'], value: 'x' }],
        [{ path: ['a'], op: 'regex', value: '^x' }, { path: ['b'], op: 'exists' }],
        [{ path: ['b'], value: 1 }, { path: ['_id'], op: '>', value: 'd05' }],
        [],
      ),
      fc.record({
        limit: fc.option(fc.nat({ max: 6 }), { nil: undefined }),
        offset: fc.nat({ max: 4 }),
        // `_id` is not in a stored body: ordering by it once ignored the direction.
        order: fc.constantFrom<unknown[] | undefined>(undefined, [{ path: ['a'], dir: 'desc' }], [{ _id: 'desc' }], [{ _id: 'asc' }], [{ a: 'asc' }, { _id: 'desc' }], [{ path: ['_id'], dir: 'desc' }, { path: ['a'] }]),
      }),
      async (docs, deletes, updates, where, page) => {
        const db = `oracle${round++}`;
        const { withIds, written } = await roundDb(node, db, docs);
        const revs = new Map<string, string>((written.body as { id: string; rev: string }[]).map((r) => [r.id, r.rev]));
        // Updates move documents between values (the per-value counts must follow).
        const current = new Map(docs.map((d, i) => [`d${String(i).padStart(2, '0')}`, d]));
        for (const [i, doc] of updates) {
          const id = withIds[i % withIds.length]!._id;
          const res = await node.request('PUT', `/db/${db}/${id}`, { body: { ...doc, _rev: revs.get(id) } });
          if (res.status !== 201) return false;
          revs.set(id, res.body.rev);
          current.set(id, doc);
        }
        const deleted = new Set<string>();
        for (const i of deletes) {
          const id = withIds[i % withIds.length]!._id;
          if (deleted.has(id)) continue;
          deleted.add(id);
          await node.request('DELETE', `/db/${db}/${id}?rev=${revs.get(id)}`);
        }
        const body: Record<string, unknown> = { where, offset: page.offset, ...(page.limit === undefined ? {} : { limit: page.limit }) };
        if (page.order !== undefined) body.order_by = page.order;
        const expected = bruteForce(withIds.filter((d) => !deleted.has(d._id)).map((d) => ({ ...current.get(d._id), _id: d._id })), body);
        const res = await find(node, db, body);
        const want = expected.slice(page.offset, page.limit === undefined ? undefined : page.offset + page.limit).map((d) => d.id);
        await node.request('DELETE', `/db/${db}`);
        return res.status === 200 && res.body.meta.total === expected.length && JSON.stringify(ids(res)) === JSON.stringify(want);
      },
    ),
    fcParams(40),
  );
});

t.test('oracle: paging by bookmark returns every match once, in order, whatever the plan and order', async (t) => {
  const node = await startTestNode();
  t.teardown(() => node.close());
  let round = 0;
  await fc.assert(
    fc.asyncProperty(
      fc.array(arbDoc, { minLength: 1, maxLength: 25 }),
      fc.constantFrom<unknown[]>(
        [{ path: ['a'], value: 1 }],
        [{ path: ['a'], op: '>', value: 0 }],
        [{ path: ['b'], op: 'exists' }],
        [{ path: ['a'], op: 'in', value: [null, 'x', 2] }],
        [{ or: [{ path: ['a'], value: 'y' }, { path: ['b'], op: 'missing' }] }],
        [{ path: ['a', 'b'], op: 'ne', value: 1 }],
        [{ path: ['a'], op: '>', value: 0 }, { path: ['b'], op: 'exists' }],
        [],
      ),
      fc.integer({ min: 1, max: 4 }),
      fc.constantFrom<unknown[] | undefined>(undefined, [{ a: 'desc' }], [{ _id: 'desc' }], [{ a: 'asc' }, { _id: 'desc' }], [{ b: 'asc' }, { a: 'desc' }], [{ 'a.b': 'asc' }]),
      async (docs, where, limit, order) => {
        const db = `pages${round++}`;
        const { withIds } = await roundDb(node, db, docs);
        const body: Record<string, unknown> = { where, limit, ...(order === undefined ? {} : { sort: order }) };
        const expected = bruteForce(withIds, body).map((d) => d.id);
        const got: string[] = [];
        let bookmark: string | undefined;
        for (let pages = 0; pages <= expected.length / limit + 1; pages++) {
          const res = await find(node, db, { ...body, ...(bookmark === undefined ? {} : { bookmark }) });
          if (res.status !== 200 || typeof res.body.bookmark !== 'string') return false;
          got.push(...ids(res));
          bookmark = res.body.bookmark;
          if (res.body.docs.length < limit) break;
        }
        await node.request('DELETE', `/db/${db}`);
        return JSON.stringify(got) === JSON.stringify(expected);
      },
    ),
    fcParams(30),
  );
});

t.test('a bookmark after a document whose sort key is null starts after it (a null key is a value, not a missing field)', async (t) => {
  const node = await startTestNode();
  t.teardown(() => node.close());
  await seed(node, 'nullkey', [{ _id: 'x1', a: null }]);
  const query = { selector: {}, sort: [{ a: 'asc' }, { _id: 'desc' }], limit: 1 };
  const first = await find(node, 'nullkey', query);
  t.same(ids(first), ['x1']);
  const next = await find(node, 'nullkey', { ...query, bookmark: first.body.bookmark });
  t.same(ids(next), [], 'the next page is empty, not x1 again (found by the paging oracle, FC_SEED=189305295)');
});

t.test('bookmarks: stable while documents are written, refused when they are not one', async (t) => {
  const node = await startTestNode();
  t.teardown(() => node.close());
  await seed(node, 'bm', Array.from({ length: 6 }, (_, i) => ({ _id: `k${i * 2}`, n: i * 2 })));
  const first = await find(node, 'bm', { selector: { n: { $gte: 0 } }, sort: [{ n: 'asc' }], limit: 3 });
  t.same(ids(first), ['k0', 'k2', 'k4']);
  // A document sorting inside the first page arrives: an offset would show k4 again; a bookmark does not.
  t.equal((await node.request('PUT', '/db/bm/k1', { body: { n: 1 } })).status, 201);
  const byOffset = await find(node, 'bm', { selector: { n: { $gte: 0 } }, sort: [{ n: 'asc' }], limit: 3, skip: 3 });
  t.same(ids(byOffset), ['k4', 'k6', 'k8'], 'skip repeats k4');
  const next = await find(node, 'bm', { selector: { n: { $gte: 0 } }, sort: [{ n: 'asc' }], limit: 3, bookmark: first.body.bookmark });
  t.same(ids(next), ['k6', 'k8', 'k10'], 'the bookmark goes on after k4');
  const end = await find(node, 'bm', { selector: { n: { $gte: 0 } }, sort: [{ n: 'asc' }], limit: 3, bookmark: next.body.bookmark });
  t.same(ids(end), [], 'past the end: no documents');
  t.equal(end.body.bookmark, next.body.bookmark, 'and the same bookmark back');
  t.equal((await find(node, 'bm', { limit: 2, bookmark: 'nil' })).status, 200, '"nil" is the start');
  // A sort value can be a long field: its bookmark is long too, and still taken back.
  await seed(node, 'long', ['a', 'b', 'c'].map((c) => ({ _id: c, s: c.repeat(20_000) })));
  const longFirst = await find(node, 'long', { sort: [{ s: 'asc' }], limit: 1 });
  t.ok(longFirst.body.bookmark.length > 20_000);
  t.same(ids(await find(node, 'long', { sort: [{ s: 'asc' }], limit: 1, bookmark: longFirst.body.bookmark })), ['b'], 'a 20,000-character sort value');
  for (const bookmark of ['%%%', 'bm90IGpzb24', Buffer.from(JSON.stringify({ v: 1, k: [], id: 'k0' })).toString('base64url'), 7]) {
    const r = await find(node, 'bm', { sort: [{ n: 'asc' }], bookmark });
    t.equal(r.status, 400, `bookmark ${JSON.stringify(bookmark)}`);
    t.match(r.body.message, /^bookmark: /);
  }
});

// A sorted page of an exact plan is read in the first sort key's order from that path's own
// postings (execute.ts `orderedByIndex`); it must answer exactly what brute force answers,
// whatever the values there: ties, every type, long strings cut in their keys, arrays and
// objects (posted at deeper paths), documents missing the field.
const arbSortValue: fc.Arbitrary<Json> = fc.oneof(
  { weight: 6, arbitrary: fc.integer({ min: -3, max: 6 }) },
  // (A lone surrogate is stored as U+FFFD, so brute force over what was sent would disagree.)
  { weight: 2, arbitrary: fc.constantFrom('a', 'b', 'ab', '', 'z\uFFFD', 'z\uFFFF', 'z\u{1F600}') },
  { weight: 3, arbitrary: fc.constantFrom('x'.repeat(198) + 'a', 'x'.repeat(199) + 'b', 'x'.repeat(199) + 'a', 'x'.repeat(250), 'x'.repeat(199) + '\u{1F600}a', 'x'.repeat(201) + 'a') },
  { weight: 1, arbitrary: fc.constantFrom<Json>(null, true, false, -0, 2.5, [], {}, [1], [0, 'a'], { k: 1 }) },
);
const arbSortDoc = fc.record({ s: arbSortValue, g: fc.integer({ min: 0, max: 2 }), t: fc.integer({ min: 0, max: 3 }) }, { requiredKeys: ['g', 't'] });

t.test('oracle: sorted pages read in the sort key\'s index order equal brute force', async (t) => {
  const node = await startTestNode();
  t.teardown(() => node.close());
  let round = 0;
  await fc.assert(
    fc.asyncProperty(
      fc.array(arbSortDoc, { minLength: 1, maxLength: 60 }),
      fc.constantFrom<unknown[]>(
        [{ path: ['g'], value: 1 }],
        [{ path: ['g'], op: 'in', value: [0, 2] }],
        [{ path: ['s'], op: '>', value: 0 }],
        [{ path: ['s'], op: 'exists' }],
        [{ path: ['s'], op: 'prefix', value: 'x' }],
        [{ path: ['s'], op: '>=', value: 'a' }],
        [{ path: ['s'], value: 2 }],
        [{ path: ['t'], op: '<=', value: 1 }],
        [{ path: ['s'], op: '>', value: null }],
        [{ path: ['s'], op: 'in', value: [0, 'a', 2, 5, 'x'.repeat(199) + 'a', null] }],
        [{ path: ['g'], value: 1 }, { path: ['t'], op: '<=', value: 1 }],
        [{ path: ['g'], op: 'in', value: [0, 2] }, { path: ['s'], op: '>', value: 0 }],
        [{ path: ['s'], op: 'exists' }, { path: ['g'], value: 1 }],
        [{ path: ['s'], op: '>', value: null }, { path: ['t'], value: 2 }, { path: ['g'], op: '>=', value: 1 }],
        [{ path: ['g'], value: 1 }, { path: ['s'], op: 'prefix', value: 'x' }],
        [{ path: ['g'], value: 1 }, { path: ['s'], op: 'regex', value: 'a$' }],
        // A rare value with common ones: the rare value's ids looked up in the others' postings.
        [{ path: ['s'], value: 2 }, { path: ['g'], op: 'in', value: [0, 1] }],
        [{ path: ['s'], value: 'a' }, { path: ['t'], op: '<=', value: 1 }, { path: ['g'], value: 1 }],
        [{ path: ['t'], op: '>=', value: 1 }, { path: ['_id'], op: '<', value: 'd30' }],
        [],
      ),
      fc.constantFrom<unknown[]>([{ s: 'desc' }], [{ s: 'asc' }], [{ s: 'desc' }, { t: 'asc' }], [{ s: 'asc' }, { _id: 'desc' }], [{ s: 'desc' }, { t: 'desc' }, { _id: 'desc' }]),
      fc.integer({ min: 0, max: 8 }),
      fc.nat({ max: 3 }),
      async (docs, where, sort, limit, skip) => {
        const db = `sorted${round++}`;
        const { withIds } = await roundDb(node, db, docs);
        const body = { where, sort, limit, skip };
        const expected = bruteForce(withIds, body);
        const res = await find(node, db, body);
        await node.request('DELETE', `/db/${db}`);
        const want = expected.slice(skip, skip + limit).map((d) => d.id);
        return res.status === 200 && res.body.meta.total === expected.length && JSON.stringify(ids(res)) === JSON.stringify(want);
      },
    ),
    fcParams(60),
  );
});

t.test('oracle: bookmark pages of a sorted query walked in index order: every match once, in order, each total the matches after the bookmark', async (t) => {
  const node = await startTestNode();
  t.teardown(() => node.close());
  let round = 0;
  await fc.assert(
    fc.asyncProperty(
      fc.array(arbSortDoc, { minLength: 1, maxLength: 40 }),
      fc.constantFrom<unknown[]>(
        [{ path: ['g'], value: 1 }],
        [{ path: ['s'], op: '>', value: 0 }],
        [{ path: ['s'], op: 'exists' }],
        [{ path: ['s'], op: '>', value: null }],
        [{ path: ['s'], op: 'in', value: [0, 'a', 2, 5, null] }],
        [{ path: ['g'], value: 1 }, { path: ['s'], op: '>', value: 0 }],
        [{ path: ['t'], op: '<=', value: 2 }, { path: ['g'], op: 'in', value: [0, 1] }],
        [],
      ),
      fc.constantFrom<unknown[]>([{ s: 'desc' }], [{ s: 'asc' }], [{ s: 'desc' }, { t: 'asc' }], [{ s: 'asc' }, { t: 'desc' }, { _id: 'desc' }]),
      fc.integer({ min: 1, max: 5 }),
      fc.nat({ max: 1 }),
      async (docs, where, sort, limit, skip) => {
        const db = `sortedpages${round++}`;
        const { withIds } = await roundDb(node, db, docs);
        const body = { where, sort, limit, skip };
        const expected = bruteForce(withIds, body).map((d) => d.id);
        // Each page skips `skip` after the bookmark (CouchDB's `skip` applies after it).
        const want: string[] = [];
        let remaining = expected;
        const got: string[] = [];
        let bookmark: string | undefined;
        let ok = true;
        for (let pages = 0; pages <= expected.length + 1; pages++) {
          const res = await find(node, db, { ...body, ...(bookmark === undefined ? {} : { bookmark }) });
          if (res.status !== 200 || res.body.meta.total !== remaining.length) {
            ok = false;
            break;
          }
          const page = remaining.slice(skip, skip + limit);
          want.push(...page);
          got.push(...ids(res));
          if (res.body.docs.length < limit) break;
          bookmark = res.body.bookmark;
          remaining = remaining.slice(remaining.indexOf(page.at(-1)!) + 1);
        }
        await node.request('DELETE', `/db/${db}`);
        return ok && JSON.stringify(got) === JSON.stringify(want);
      },
    ),
    fcParams(40),
  );
});

t.test('a sorted page of an indexed selector reads the bodies near the page, not every match', async (t) => {
  const node = await startTestNode();
  t.teardown(() => node.close());
  const docs = Array.from({ length: 400 }, (_, i) => ({ _id: `p${String(i).padStart(3, '0')}`, kind: i % 2 === 0 ? 'even' : 'odd', at: (i * 7919) % 400 }));
  await seed(node, 'sorted', docs);
  const evens = docs.filter((d) => d.kind === 'even');
  for (const dir of ['desc', 'asc'] as const) {
    const query = dir === 'asc' ? { selector: { at: { $gte: 100 } }, sort: [{ at: 'asc' }], limit: 5, execution_stats: true } : { selector: { kind: 'even' }, sort: [{ at: 'desc' }], limit: 5, execution_stats: true };
    const res = await find(node, 'sorted', query);
    const pool = dir === 'asc' ? docs.filter((d) => d.at >= 100) : evens;
    const want = [...pool].sort((a, b) => (dir === 'asc' ? a.at - b.at : b.at - a.at)).slice(0, 5).map((d) => d._id);
    t.same(ids(res), want, `${dir}: the page`);
    t.equal(res.body.meta.total, pool.length, `${dir}: the total counts every match`);
    t.ok(res.body.execution_stats.total_docs_examined <= 32, `${dir}: ${res.body.execution_stats.total_docs_examined} bodies read for ${pool.length} matches`);
  }
  // Several values of the sort path: walked from the last value's range down.
  const several = Array.from({ length: 60 }, (_, i) => i * 5);
  const picked = await find(node, 'sorted', { selector: { at: { $in: several } }, sort: [{ at: 'desc' }], limit: 5, execution_stats: true });
  t.same(ids(picked), docs.filter((d) => several.includes(d.at)).sort((a, b) => b.at - a.at).slice(0, 5).map((d) => d._id));
  t.ok(picked.body.execution_stats.total_docs_examined <= 32, `$in: ${picked.body.execution_stats.total_docs_examined} bodies read`);

  // A bookmark's page starts at its value: the matches before it are counted from keys, not read.
  const pageOne = await find(node, 'sorted', { selector: { kind: 'even' }, sort: [{ at: 'desc' }], limit: 50 });
  const pageTwo = await find(node, 'sorted', { selector: { kind: 'even' }, sort: [{ at: 'desc' }], limit: 5, bookmark: pageOne.body.bookmark, execution_stats: true });
  t.same(ids(pageTwo), [...evens].sort((a, b) => b.at - a.at).slice(50, 55).map((d) => d._id));
  t.equal(pageTwo.body.meta.total, evens.length - 50, 'a bookmark page counts the matches after it');
  t.ok(pageTwo.body.execution_stats.total_docs_examined <= 32, `bookmark page: ${pageTwo.body.execution_stats.total_docs_examined} bodies read`);

  // CouchDB's idiom for "has the field": `$gt: null`.
  const present = await find(node, 'sorted', { selector: { at: { $gt: null } }, sort: [{ at: 'asc' }], limit: 3, execution_stats: true });
  t.same(ids(present), [...docs].sort((a, b) => a.at - b.at).slice(0, 3).map((d) => d._id));
  t.equal(present.body.meta.total, docs.length);
  t.ok(present.body.execution_stats.total_docs_examined <= 32, `$gt null: ${present.body.execution_stats.total_docs_examined} bodies read`);

  // Without a condition implying the field, ascending cannot know where the documents missing it go: every match is read.
  const missingFirst = await find(node, 'sorted', { selector: { kind: 'even' }, sort: [{ at: 'asc' }], limit: 5, execution_stats: true });
  t.equal(missingFirst.body.execution_stats.total_docs_examined, evens.length);

  // `_id` descending: the matches' ids read backwards, the bodies of the page only.
  const lastEvens = await find(node, 'sorted', { selector: { kind: 'even' }, sort: [{ _id: 'desc' }], limit: 3, execution_stats: true });
  const evenIds = evens.map((d) => d._id).sort().reverse();
  t.same(ids(lastEvens), evenIds.slice(0, 3));
  t.equal(lastEvens.body.execution_stats.total_docs_examined, 3);
  t.same(ids(await find(node, 'sorted', { selector: { kind: 'even' }, sort: [{ _id: 'desc' }], limit: 3, bookmark: lastEvens.body.bookmark })), evenIds.slice(3, 6), 'and after a bookmark');
  const lastAll = await find(node, 'sorted', { selector: {}, sort: [{ _id: 'desc' }], limit: 2, execution_stats: true });
  t.same(ids(lastAll), ['p399', 'p398'], 'every document: the records read backwards');
  t.ok(lastAll.body.execution_stats.total_docs_examined < 300, `every document: ${lastAll.body.execution_stats.total_docs_examined} read`);

  // Ties at the page's end go on being read: the id (or a later key) decides among them.
  await seed(node, 'ties', Array.from({ length: 12 }, (_, i) => ({ _id: `d${String(i).padStart(2, '0')}`, s: 1, g: 1 })));
  const tied = await find(node, 'ties', { selector: { g: 1 }, sort: [{ s: 'desc' }], limit: 3 });
  t.same(ids(tied), ['d00', 'd01', 'd02'], 'equal values: ids ascending, though the walk meets them descending');

  // Every document, newest first: the walk needs no selector (a design document is never a match).
  t.equal((await node.request('PUT', '/db/sorted/_design/app', { body: { views: {} } })).status, 201);
  const newest = await find(node, 'sorted', { selector: {}, sort: [{ at: 'desc' }], limit: 4, execution_stats: true });
  t.same(ids(newest), [...docs].sort((a, b) => b.at - a.at).slice(0, 4).map((d) => d._id));
  t.equal(newest.body.meta.total, docs.length, 'the design document is not counted');
  t.equal((await find(node, 'sorted', { selector: {}, limit: 0 })).body.meta.total, docs.length, 'nor without a sort');
  t.ok(newest.body.execution_stats.total_docs_examined <= 32, `every document: ${newest.body.execution_stats.total_docs_examined} bodies read`);

  // A key holds a string's first 200 code units (199 when that would split a surrogate pair):
  // walking down, a cut key is no bound of what follows it.
  const cut = ['x'.repeat(250), 'x'.repeat(250), 'x'.repeat(201) + 'a', 'x'.repeat(199) + 'a', 'x'.repeat(199) + '\u{1F600}a'];
  await seed(node, 'cut', cut.map((s, i) => ({ _id: `c${i}`, s, g: 1 })));
  t.same(ids(await find(node, 'cut', { selector: { g: 1 }, sort: [{ s: 'desc' }], limit: 1 })), ['c4'], 'the emoji sorts above every x, though its key is the shortest');
  await seed(node, 'cut2', [{ _id: 'a', s: 'x'.repeat(199) + 'a', g: 1 }, { _id: 'b', s: 'x'.repeat(199) + '\u{1F600}a', g: 1 }]);
  t.same(ids(await find(node, 'cut2', { selector: { g: 1 }, sort: [{ s: 'desc' }], limit: 1 })), ['b'], 'a full page is not done while the next key may be cut');
});

t.test('a selector of several conditions counts and pages from keys: bodies for the page only', async (t) => {
  const node = await startTestNode();
  t.teardown(() => node.close());
  const COLORS = ['red', 'green', 'blue'];
  const docs = Array.from({ length: 600 }, (_, i) => ({ _id: `q${String(i).padStart(3, '0')}`, kind: i % 2 === 0 ? 'even' : 'odd', color: COLORS[i % 3]!, at: (i * 7919) % 600 }));
  await seed(node, 'several', docs);
  const stats = (res: { body: { execution_stats: { total_docs_examined: number } } }) => res.body.execution_stats.total_docs_examined;

  const redEvens = docs.filter((d) => d.kind === 'even' && d.color === 'red');
  const page = await find(node, 'several', { selector: { kind: 'even', color: 'red' }, limit: 5, skip: 2, execution_stats: true });
  t.same(ids(page), redEvens.slice(2, 7).map((d) => d._id), 'two equalities: the page in id order');
  t.equal(page.body.meta.total, redEvens.length, 'counted from keys');
  t.equal(stats(page), 5, 'bodies of the page only');

  const late = docs.filter((d) => d.color !== 'blue' && d.at >= 450);
  const ranged = await find(node, 'several', { selector: { color: { $in: ['red', 'green'] }, at: { $gte: 450 } }, sort: [{ at: 'asc' }], limit: 4, execution_stats: true });
  t.same(ids(ranged), [...late].sort((a, b) => a.at - b.at).slice(0, 4).map((d) => d._id), '$in and a range, sorted by the range\'s path');
  t.equal(ranged.body.meta.total, late.length);
  t.ok(stats(ranged) <= 32, `sorted: ${stats(ranged)} bodies read for ${late.length} matches`);

  const newest = await find(node, 'several', { selector: { kind: 'odd', color: 'green' }, sort: [{ at: 'desc' }], limit: 3, execution_stats: true });
  const greenOdds = docs.filter((d) => d.kind === 'odd' && d.color === 'green');
  t.same(ids(newest), [...greenOdds].sort((a, b) => b.at - a.at).slice(0, 3).map((d) => d._id), 'two equalities, sorted descending');
  t.equal(newest.body.meta.total, greenOdds.length);
  t.ok(stats(newest) <= 32, `sorted descending: ${stats(newest)} bodies read for ${greenOdds.length} matches`);

  // One match among many: its id is looked up in the other condition's postings, or a range
  // too long to read for one candidate is left to its body.
  type Doc = (typeof docs)[number];
  const other = (kind: string) => (kind === 'even' ? 'odd' : 'even');
  const one = docs.find((d) => d.at === 42)!;
  const selective: [Record<string, unknown>, (d: Doc) => boolean][] = [
    [{ at: 42, kind: one.kind }, (d) => d.at === 42 && d.kind === one.kind],
    [{ at: 42, kind: other(one.kind) }, () => false],
    [{ at: 42, color: { $gt: 'a' } }, (d) => d.at === 42],
    [{ at: 42, color: { $in: [one.color, 'nope'] }, kind: { $in: ['even', 'odd'] } }, (d) => d.at === 42],
  ];
  for (const [selector, keep] of selective) {
    const res = await find(node, 'several', { selector, execution_stats: true });
    const want = docs.filter(keep).map((d) => d._id);
    t.same(ids(res), want, JSON.stringify(selector));
    t.equal(res.body.meta.total, want.length);
    t.ok(stats(res) <= 1, `${JSON.stringify(selector)}: ${stats(res)} bodies read`);
  }

  // A condition the keys cannot decide (a regex's pattern may hold past what a key keeps) still
  // narrows the candidates; the bodies of those left decide.
  const patterned = await find(node, 'several', { selector: { kind: 'even', color: { $regex: '^gr' }, at: { $lt: 300 } }, limit: 100, execution_stats: true });
  const want = docs.filter((d) => d.kind === 'even' && d.color === 'green' && d.at < 300);
  t.same(ids(patterned), want.map((d) => d._id));
  t.equal(patterned.body.meta.total, want.length);
  t.ok(stats(patterned) <= want.length * 2, `with a regex: ${stats(patterned)} bodies for ${want.length} matches (the regex's own candidates only)`);

  // Keys hold a string's first 200 code units: a regex's scan keeps what its key cannot decide,
  // so with it the narrowed ids are candidates, not matches.
  await seed(node, 'cutregex', [{ _id: 'c1', s: 'x'.repeat(250), g: 1 }, { _id: 'c2', s: 'x'.repeat(201) + 'a', g: 1 }, { _id: 'c3', s: 'xa', g: 1 }, { _id: 'c4', s: 'xa', g: 2 }]);
  for (const sort of [undefined, [{ s: 'desc' }]]) {
    const cutMatches = await find(node, 'cutregex', { selector: { g: 1, s: { $regex: 'a$' } }, limit: 5, ...(sort === undefined ? {} : { sort }) });
    t.same(ids(cutMatches).sort(), ['c2', 'c3'], `a regex on cut strings, sort ${JSON.stringify(sort)}`);
    t.equal(cutMatches.body.meta.total, 2);
  }

  // Updates and deletes move documents between the conditions' postings.
  const moved = redEvens[0]!;
  const got = await node.request('GET', `/db/several/${moved._id}`);
  t.equal((await node.request('PUT', `/db/several/${moved._id}`, { body: { ...got.body, color: 'blue' } })).status, 201);
  const gone = redEvens[1]!;
  t.equal((await node.request('DELETE', `/db/several/${gone._id}?rev=${(await node.request('GET', `/db/several/${gone._id}`)).body._rev}`)).status, 200);
  const after = await find(node, 'several', { selector: { kind: 'even', color: 'red' }, limit: 3 });
  t.same(ids(after), redEvens.slice(2, 5).map((d) => d._id));
  t.equal(after.body.meta.total, redEvens.length - 2);
});

t.test('a page in id order is in code point order, whatever characters the ids hold', async (t) => {
  const node = await startTestNode();
  t.teardown(() => node.close());
  const idsIn = ['b', 'a', '\uE000x', '\u{1F600}', 'A', 'é', '\uFFFDz', 'zz'];
  await seed(node, 'ids', idsIn.map((_id) => ({ _id, n: 1 })));
  const codePoints = [...idsIn].sort((a, b) => {
    const x = [...a].map((c) => c.codePointAt(0)!);
    const y = [...b].map((c) => c.codePointAt(0)!);
    for (let i = 0; i < Math.min(x.length, y.length); i++) if (x[i] !== y[i]) return x[i]! - y[i]!;
    return x.length - y.length;
  });
  t.same(ids(await find(node, 'ids', { selector: { n: { $gte: 0 } }, limit: 20 })), codePoints, 'a range plan sorts its ids');
  const ascii = idsIn.filter((id) => /^[a-z]+$/.test(id));
  t.same(ids(await find(node, 'ids', { selector: { n: { $gte: 0 }, _id: { $in: ascii } }, limit: 20 })), [...ascii].sort());
});

t.test('a sorted page of few matches spread over a long sort path gives way to reading the matches', async (t) => {
  const node = await startTestNode();
  t.teardown(() => node.close());
  // Two matches at the low end of 5,000 values: walking down from the top would pass them all.
  const docs = Array.from({ length: 5_000 }, (_, i) => ({ _id: `r${String(i).padStart(4, '0')}`, at: i, ...(i < 2 ? { rare: true } : {}) }));
  await seed(node, 'spread', docs);
  const res = await find(node, 'spread', { selector: { rare: true }, sort: [{ at: 'desc' }], limit: 10, execution_stats: true });
  t.same(ids(res), ['r0001', 'r0000']);
  t.equal(res.body.meta.total, 2);
  t.ok(res.body.execution_stats.total_keys_examined < 4_200, `the walk stopped at its bound (${res.body.execution_stats.total_keys_examined} keys read, 5,000 on the path)`);
});

t.test('sorted queries with any sort, selector and bookmark answer 200 or 400, never 5xx', async (t) => {
  const node = await startTestNode();
  t.teardown(() => node.close());
  await seed(node, 'anysort', Array.from({ length: 30 }, (_, i) => ({ _id: `a${i}`, s: [i, `v${i}`, null, [i], { k: i }, 'x'.repeat(199 + (i % 3))][i % 6], g: i % 3 })));
  const valid = await find(node, 'anysort', { selector: { s: { $gt: null } }, sort: [{ s: 'desc' }], limit: 4 });
  const arbPathText = fc.oneof(fc.constantFrom('s', 'g', 's.k', 's.0', '_id', '_rev', '_x', '', 'a..b', 'nope'), fc.string({ maxLength: 6 }));
  await fc.assert(
    fc.asyncProperty(
      fc.array(fc.dictionary(arbPathText, fc.constantFrom('asc', 'desc', 'up', 1)), { maxLength: 3 }),
      fc.oneof(fc.constant({}), fc.record({ s: fc.oneof(fc.constant({ $gt: null }), fc.constant({ $exists: true }), fc.constant({ $gte: 2 }), fc.jsonValue({ maxDepth: 2 })) }), fc.record({ g: fc.integer({ min: 0, max: 3 }) })),
      fc.oneof(fc.constant(undefined), fc.constant(valid.body.bookmark), fc.string({ maxLength: 20 }), fc.jsonValue({ maxDepth: 2 }).map((v) => Buffer.from(JSON.stringify({ v: 1, k: [[1, v]], id: 'a1' })).toString('base64url'))),
      fc.option(fc.integer({ min: -1, max: 40 }), { nil: undefined }),
      async (sort, selector, bookmark, limit) => {
        const res = await find(node, 'anysort', { selector, sort, ...(bookmark === undefined ? {} : { bookmark }), ...(limit === undefined ? {} : { limit }) });
        return res.status === 200 || res.status === 400;
      },
    ),
    fcParams(150),
  );
  t.equal((await node.request('GET', '/db/anysort')).status, 200, 'the node still answers');
});
