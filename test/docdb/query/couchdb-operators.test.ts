// CouchDB's selector operators beyond the basic ones — $nin, $all, $size, $mod, $type,
// $elemMatch, $allMatch, $keyMapMatch, $nor, $beginsWith — through `_find` over HTTP, each against the
// documents it should pick (they were 400 "unsupported selector operator"). The planner's
// side (every scan a superset of the matches) is the property in plan.test.ts.
import t from 'tap';
import { startTestNode } from '../../support/node.js';

const DOCS = [
  { _id: 'a', n: 7, tags: ['red', 'big'], parts: [{ name: 'x', qty: 2 }, { name: 'y', qty: 5 }], title: 'apple' },
  { _id: 'b', n: 10, tags: ['red'], parts: [{ name: 'x', qty: 9 }], title: 'banana', meta: { language: 'en' } },
  { _id: 'c', n: -3, tags: [], parts: [], title: 'apricot', meta: { size: 'l' } },
  { _id: 'd', n: 2.5, tags: ['blue', 'big', 'red'], scores: [3, 8, 9], title: null },
  { _id: 'e', n: '7', tags: 'red', scores: [1, 2], title: 'Avocado' },
  { _id: 'f', title: 'fig', scores: [] },
];

t.test('CouchDB selector operators', async (t) => {
  const node = await startTestNode();
  t.teardown(() => node.close());
  t.equal((await node.request('PUT', '/db/ops')).status, 201);
  t.equal((await node.request('POST', '/db/ops/_bulk_docs', { body: { docs: DOCS } })).status, 201);
  const ids = async (selector: unknown) => {
    const r = await node.request('POST', '/db/ops/_find', { body: { selector, fields: ['_id'] } });
    t.equal(r.status, 200, r.text);
    return (r.body.docs as { _id: string }[]).map((d) => d._id);
  };
  const cases: [string, unknown, string[]][] = [
    ['$nin: the field is there, with none of the values', { n: { $nin: [7, 10] } }, ['c', 'd', 'e']],
    ['$all: an array with every value', { tags: { $all: ['red', 'big'] } }, ['a', 'd']],
    ['$all of nothing matches nothing', { tags: { $all: [] } }, []],
    ['$size', { tags: { $size: 1 } }, ['b']],
    ['$size 0: the empty array', { tags: { $size: 0 } }, ['c']],
    ['$mod: integers only; the remainder takes the dividend\'s sign', { n: { $mod: [5, 2] } }, ['a']],
    ['$mod with a negative dividend', { n: { $mod: [2, -1] } }, ['c']],
    ['$type string', { n: { $type: 'string' } }, ['e']],
    ['$type null', { title: { $type: 'null' } }, ['d']],
    ['$type array', { tags: { $type: 'array' } }, ['a', 'b', 'c', 'd']],
    ['$elemMatch on objects', { parts: { $elemMatch: { name: 'x', qty: { $gt: 5 } } } }, ['b']],
    ['$elemMatch on the element itself', { scores: { $elemMatch: { $gte: 8 } } }, ['d']],
    ['$elemMatch never matches an empty array', { scores: { $elemMatch: { $exists: true } } }, ['d', 'e']],
    ['$allMatch', { scores: { $allMatch: { $lt: 5 } } }, ['e']],
    ['$allMatch on objects', { parts: { $allMatch: { qty: { $gt: 1 } } } }, ['a', 'b']],
    ['$nor', { $nor: [{ n: 7 }, { title: { $regex: '^a' } }] }, ['b', 'd', 'e', 'f']],
    ['$keyMapMatch: some key of an object', { meta: { $keyMapMatch: { $regex: '^lang' } } }, ['b']],
    ['$beginsWith (case-sensitive)', { title: { $beginsWith: 'ap' } }, ['a', 'c']],
    ['combined with an index condition', { tags: { $elemMatch: { $eq: 'big' } }, n: { $type: 'number' } }, ['a', 'd']],
  ];
  for (const [what, selector, want] of cases) t.same(await ids(selector), want, what);

  for (const [selector, message] of [
    [{ n: { $mod: [0, 1] } }, /\$mod needs \[divisor, remainder\]/],
    [{ n: { $mod: [2.5, 1] } }, /\$mod needs/],
    [{ n: { $size: -1 } }, /\$size needs a non-negative integer/],
    [{ n: { $type: 'date' } }, /\$type must be one of null, boolean, number, string, array, object/],
    [{ n: { $all: 'red' } }, /\$all needs a list/],
    [{ n: { $nin: 3 } }, /in needs a list/],
    [{ parts: { $elemMatch: 3 } }, /must be an object/],
    [{ $nor: {} }, /\$nor must be a list/],
    [{ n: { $where: 'x' } }, /unsupported selector operator "\$where"/],
  ] as const) {
    const r = await node.request('POST', '/db/ops/_find', { body: { selector } });
    t.equal(r.status, 400, JSON.stringify(selector));
    t.match(r.body.message, message);
  }

  // The same selectors filter a changes feed (and so a replication).
  const changes = await node.request('POST', '/db/ops/_changes?filter=_selector', { body: { selector: { tags: { $size: 1 } } } });
  t.same(changes.body.results.map((c: { id: string }) => c.id), ['b'], '_changes with a selector');
});
