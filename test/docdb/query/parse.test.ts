import t from 'tap';
import { matches } from '../../../src/docdb/query/match.js';
import { encodeBookmark } from '../../../src/docdb/query/bookmark.js';
import { parseFind, parseSelector, parseWhere } from '../../../src/docdb/query/parse.js';

const doc = { type: 'user', age: 42, name: 'Ada', tags: ['x', 'y'], profile: { city: 'Paris' }, score: 2.5, none: null };

t.test('every operator and alias of the where list', (t) => {
  const cases: [unknown, boolean][] = [
    [{ path: ['type'], value: 'user' }, true],
    [{ path: ['type'], op: '=', value: 'user' }, true],
    [{ path: ['type'], op: '==', value: 'admin' }, false],
    [{ path: ['type'], op: 'eq', value: 'user' }, true],
    [{ path: ['type'], op: '!=', value: 'admin' }, true],
    [{ path: ['nope'], op: 'ne', value: 'admin' }, false],
    [{ path: ['age'], op: '>', value: 41 }, true],
    [{ path: ['age'], op: 'gt', value: 42 }, false],
    [{ path: ['age'], op: '>=', value: 42 }, true],
    [{ path: ['age'], op: 'lt', value: 42 }, false],
    [{ path: ['age'], op: '<=', value: 42 }, true],
    [{ path: ['age'], op: 'lte', value: '42' }, false],
    [{ path: ['name'], op: '>', value: 'A' }, true],
    [{ path: ['type'], op: 'in', value: ['admin', 'user'] }, true],
    [{ path: ['tags'], op: 'contains', value: 'y' }, true],
    [{ path: ['tags'], value: 'y' }, false],
    [{ path: ['name'], op: 'prefix', value: 'Ad' }, true],
    [{ path: ['name'], op: 'regex', value: '^a', }, false],
    [{ path: ['name'], op: 'regex', value: '(?i)^a' }, true],
    [{ path: ['none'], op: 'exists' }, true],
    [{ path: ['nope'], op: 'missing' }, true],
    [{ path: ['profile', 'city'], value: 'Paris' }, true],
    [{ path: 'profile.city', value: 'Paris' }, true],
    [{ path: ['tags', 1], value: 'y' }, true],
    [{ or: [{ path: ['age'], value: 1 }, { path: ['age'], value: 42 }] }, true],
    [{ and: [{ path: ['age'], value: 42 }, { not: { path: ['type'], value: 'user' } }] }, false],
  ];
  for (const [raw, expected] of cases) t.equal(matches(doc, parseWhere([raw])), expected, JSON.stringify(raw));
  t.end();
});

t.test('selector form', (t) => {
  t.ok(matches(doc, parseSelector({ type: 'user', 'profile.city': 'Paris' })));
  t.ok(matches(doc, parseSelector({ profile: { city: 'Paris' } })));
  t.ok(matches(doc, parseSelector({ age: { $gt: 40, $lte: 42 }, name: { $regex: '^Ad' }, nope: { $exists: false } })));
  t.notOk(matches(doc, parseSelector({ age: { $in: [1, 2] } })));
  t.ok(matches(doc, parseSelector({ $or: [{ age: 1 }, { type: 'user' }] })));
  t.notOk(matches(doc, parseSelector({ $not: { type: 'user' } })));
  t.end();
});

t.test('bad queries are 400 with a message naming the problem', (t) => {
  const bad: [() => unknown, RegExp][] = [
    [() => parseWhere([{ path: ['a'], op: 'like', value: 1 }]), /unknown operator "like"/],
    [() => parseWhere([{ path: [], value: 1 }]), /must not be empty/],
    [() => parseWhere([{ path: [-1], value: 1 }]), /bad segment -1/],
    [() => parseWhere([{ path: ['a'], op: 'regex', value: '(' }]), /invalid regex/],
    [() => parseWhere([{ path: ['a'], op: 'regex', value: '(a)\\1' }]), /invalid regex/],
    [() => parseWhere([{ path: ['a'], op: 'in', value: 1 }]), /in needs a list/],
    [() => parseWhere([{ path: ['a'], op: '>', value: [1] }]), /compares numbers, strings or null/],
    [() => parseWhere([{ path: ['a'], op: 'prefix', value: 1 }]), /prefix needs a string/],
    [() => parseWhere([{ path: ['a'], op: '=' }]), /needs a value/],
    [() => parseWhere([{ path: ['a'], vaule: 1 }]), /unknown field "vaule"/],
    [() => parseWhere([{ and: 1 }]), /list of conditions/],
    [() => parseSelector({ a: { $foo: 1 } }), /unsupported selector operator "\$foo"/],
    [() => parseSelector({ a: { $gt: 1, b: 2 } }), /mixes operators and fields/],
    [() => parseFind({ limit: -1 }), /limit must be a non-negative integer/],
    [() => parseFind({ order_by: [{ path: ['a'], dir: 'up' }] }), /dir must be asc or desc/],
    [() => parseFind({ whatever: 1 }), /unknown _find field/],
    [() => parseFind([]), /must be an object/],
  ];
  for (const [fn, message] of bad) t.throws(fn, { code: 'bad_request', message });
  t.end();
});

t.test('catastrophic patterns run in linear time (RE2)', (t) => {
  const cond = parseWhere([{ path: ['s'], op: 'regex', value: '^(a+)+$' }]);
  t.notOk(matches({ s: 'a'.repeat(50_000) + 'b' }, cond));
  t.end();
});

t.test('parseFind defaults', (t) => {
  t.same(parseFind({}), { where: { kind: 'and', all: [] }, limit: undefined, offset: 0, orderBy: [], includeDocs: true, fields: undefined });
  const q = parseFind({ selector: { a: 1 }, limit: 0, sort: [{ age: 'desc' }] });
  t.equal(q.limit, 0);
  t.same(q.orderBy, [{ path: ['age'], dir: 'desc' }]);
  t.end();
});

t.test('comparisons with null, as CouchDB collates it (null below every other value)', (t) => {
  const cases: [unknown, Record<string, unknown>, boolean][] = [
    [{ _id: { $gt: null } }, { _id: 'a' }, true],
    [{ a: { $gt: null } }, { a: null }, false],
    [{ a: { $gt: null } }, { a: false }, true],
    [{ a: { $gt: null } }, {}, false],
    [{ a: { $gte: null } }, { a: null }, true],
    [{ a: { $gte: null } }, {}, false],
    [{ a: { $lte: null } }, { a: null }, true],
    [{ a: { $lte: null } }, { a: 0 }, false],
    [{ a: { $lt: null } }, { a: null }, false],
    [{ a: { $lt: null } }, {}, false],
  ];
  for (const [selector, body, expected] of cases) t.equal(matches(body as never, parseSelector(selector)), expected, `${JSON.stringify(selector)} on ${JSON.stringify(body)}`);
  t.end();
});

t.test('order: keys after _id never decide, and a last _id ascending is the default', (t) => {
  t.same(parseFind({ sort: [{ _id: 'asc' }] }).orderBy, []);
  t.same(parseFind({ sort: ['_id'] }).orderBy, []);
  t.same(parseFind({ sort: [{ _id: 'desc' }, { age: 'asc' }] }).orderBy, [{ path: ['_id'], dir: 'desc' }]);
  t.same(parseFind({ sort: [{ age: 'desc' }, { _id: 'asc' }] }).orderBy, [{ path: ['age'], dir: 'desc' }]);
  t.same(parseFind({ order_by: [{ path: ['age'] }, { path: ['_id'], dir: 'desc' }] }).orderBy, [{ path: ['age'], dir: 'asc' }, { path: ['_id'], dir: 'desc' }]);
  t.end();
});

t.test('fields: object keys, dotted or as lists; bad ones are 400', (t) => {
  t.same(parseFind({ fields: ['_id', 'profile.city', ['a', 'b']] }).fields, [['_id'], ['profile', 'city'], ['a', 'b']]);
  t.throws(() => parseFind({ fields: 'name' }), /fields must be a list/);
  t.throws(() => parseFind({ fields: [['tags', 0]] }), /object keys only/);
  t.throws(() => parseFind({ fields: [''] }), /bad segment/);
  t.throws(() => parseFind({ fields: Array.from({ length: 101 }, (_, i) => `f${i}`) }), /more than 100/);
  t.end();
});

t.test("CouchDB's read options: checked, accepted; allow_fallback kept; a bookmark decoded for its order", (t) => {
  const q = parseFind({ selector: { a: 1 }, r: 2, update: false, stable: true, stale: 'ok', execution_stats: true, allow_fallback: true });
  t.equal(q.allowFallback, undefined, 'allow_fallback true is the default');
  t.equal(parseFind({ allow_fallback: false }).allowFallback, false);
  t.equal(parseFind({ stale: false }).limit, undefined);
  const at = { keys: [3, undefined, null], id: 'd7' };
  t.same(parseFind({ sort: ['a', 'b', 'c'], bookmark: encodeBookmark(at) }).after, at, 'a bookmark round-trips, a missing field apart from null');
  t.equal(parseFind({ bookmark: 'nil' }).after, undefined, '"nil" is the start');
  t.throws(() => parseFind({ sort: ['a'], bookmark: encodeBookmark(at) }), /made for a query sorted by 3 key\(s\), this one sorts by 1/);
  const bad: [Record<string, unknown>, RegExp][] = [
    [{ r: 0 }, /r must be a positive integer/],
    [{ r: '1' }, /r must be a positive integer/],
    [{ update: 'yes' }, /update must be true or false/],
    [{ stable: 1 }, /stable must be true or false/],
    [{ allow_fallback: 'no' }, /allow_fallback must be true or false/],
    [{ execution_stats: 'x' }, /execution_stats must be true or false/],
    [{ stale: 'update_after' }, /stale must be "ok" or false/],
    [{ bookmark: 'g1AAAA' }, /^bookmark: not a bookmark/],
  ];
  for (const [body, message] of bad) t.throws(() => parseFind(body), { code: 'bad_request', message }, JSON.stringify(body));
  t.end();
});
