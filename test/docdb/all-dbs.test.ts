// CouchDB's key ranges over a list (`pageKeys`: `_all_dbs` over names, `_local_docs` over
// ids), checked against the document engine's `_all_docs` range, and the `_all_dbs` route,
// which lists only the databases the key may read.
import fc from 'fast-check';
import t from 'tap';
import { pageKeys } from '../../src/docdb/names.js';
import { tempDocEngine } from '../support/doc-engine.js';
import { fcParams } from '../support/fc.js';
import { request, startTestNode } from '../support/node.js';

const all = { descending: false, inclusiveEnd: true, skip: 0 };

t.test('examples', (t) => {
  const names = ['c', 'a', 'e', 'b', 'd'];
  t.same(pageKeys(names, all), ['a', 'b', 'c', 'd', 'e'], 'by name');
  t.same(pageKeys(names, { ...all, descending: true }), ['e', 'd', 'c', 'b', 'a']);
  t.same(pageKeys(names, { ...all, startkey: 'b', endkey: 'd' }), ['b', 'c', 'd']);
  t.same(pageKeys(names, { ...all, startkey: 'b', endkey: 'd', inclusiveEnd: false }), ['b', 'c']);
  t.same(pageKeys(names, { ...all, descending: true, startkey: 'd', endkey: 'b' }), ['d', 'c', 'b'], 'descending: startkey is the high end');
  t.same(pageKeys(names, { ...all, startkey: 'bb', skip: 1, limit: 2 }), ['d', 'e']);
  t.same(pageKeys(names, { ...all, startkey: 'd', endkey: 'b' }), [], 'bounds the wrong way round: nothing');
  t.same(pageKeys(names, { ...all, limit: 0 }), []);
  t.end();
});

const arbNames = fc.uniqueArray(fc.stringMatching(/^[a-d]{1,3}$/), { maxLength: 12 });
const arbKey = fc.option(fc.stringMatching(/^[a-d]{1,3}$/), { nil: undefined });

t.test('property: descending is the ascending page of the swapped bounds, reversed; a page is a run of the walk', (t) => {
  fc.assert(
    fc.property(arbNames, arbKey, arbKey, fc.boolean(), fc.nat(5), fc.option(fc.nat(5), { nil: undefined }), (names, lo, hi, inclusiveEnd, skip, limit) => {
      const up = pageKeys(names, { startkey: lo, endkey: hi, descending: false, inclusiveEnd: true, skip: 0 });
      const down = pageKeys(names, { startkey: hi, endkey: lo, descending: true, inclusiveEnd: true, skip: 0 });
      if (JSON.stringify(down) !== JSON.stringify([...up].reverse())) return false;
      const walk = pageKeys(names, { startkey: lo, endkey: hi, descending: false, inclusiveEnd, skip: 0 });
      const page = pageKeys(names, { startkey: lo, endkey: hi, descending: false, inclusiveEnd, skip, limit });
      return JSON.stringify(page) === JSON.stringify(walk.slice(skip, limit === undefined ? undefined : skip + limit));
    }),
    fcParams(),
  );
  t.end();
});

t.test("property: a page of the list is the page the engine's _all_docs reads from its key range", async (t) => {
  const { docs } = await tempDocEngine(t, { prefix: 'firkin-pagekeys-' });
  // Code points either side of the surrogates and an astral one: code point order, not UTF-16's.
  const char = fc.constantFrom('a', 'b', 'z', 'é', '\uffef', '𝄞');
  const id = fc.array(char, { minLength: 1, maxLength: 3 }).map((cs) => cs.join(''));
  let run = 0;
  await fc.assert(
    fc.asyncProperty(fc.uniqueArray(id, { maxLength: 10 }), fc.option(id, { nil: undefined }), fc.option(id, { nil: undefined }), fc.boolean(), fc.boolean(), fc.nat(4), fc.option(fc.nat(6), { nil: undefined }), async (ids, startkey, endkey, descending, inclusiveEnd, skip, limit) => {
      const db = `k${run++}`;
      await docs.createDb(db);
      await docs.bulkDocs(db, ids.map((i) => ({ _id: i })), true, () => 'unused');
      const page = { startkey, endkey, descending, inclusiveEnd, skip, limit };
      const read: string[] = [];
      for await (const row of docs.allDocs(db, { ...page, includeDocs: false })) read.push(row.id!);
      return JSON.stringify(pageKeys(ids, page)) === JSON.stringify(read);
    }),
    fcParams(100),
  );
});

t.test('GET /_all_dbs and /db/_all_dbs: the databases the key may read', async (t) => {
  const node = await startTestNode();
  t.teardown(() => node.close());
  for (const db of ['users', 'orders', 'audit']) t.equal((await node.request('PUT', `/db/${db}`)).status, 201);
  t.same((await node.request('GET', '/_all_dbs')).body, ['audit', 'orders', 'users'], 'the admin key: every database');
  t.same((await node.request('GET', '/db/_all_dbs')).body, ['audit', 'orders', 'users'], 'under /db too, for clients whose server root is /db');
  t.same((await node.request('GET', '/_all_dbs?descending=true&limit=2')).body, ['users', 'orders']);
  t.same((await node.request('GET', '/_all_dbs?startkey=%22b%22')).body, ['orders', 'users'], 'a JSON-encoded startkey, as CouchDB clients send it');
  t.same((await node.request('GET', '/_all_dbs?start_key=orders&end_key=orders')).body, ['orders']);
  t.equal((await node.request('GET', '/_all_dbs?startkey=7')).status, 400, 'a key that is not a name');
  t.equal((await node.request('GET', '/_all_dbs?limit=-1')).status, 400);

  const scoped = (await node.request('POST', '/_keys', { body: { permissions: ['read'], databases: ['users', 'audit', 'gone'] } })).body.key as string;
  t.same((await request(node.url, 'GET', '/_all_dbs', { key: scoped })).body, ['audit', 'users'], 'a scoped key sees only its databases (and only those that exist)');
  t.same((await request(node.url, 'GET', '/db/_all_dbs', { key: scoped })).body, ['audit', 'users']);
  t.equal((await request(node.url, 'GET', '/_all_dbs', { key: false })).status, 401, 'no key: 401');

  t.equal((await node.request('DELETE', '/db/audit')).status, 200);
  t.same((await node.request('GET', '/_all_dbs')).body, ['orders', 'users'], 'a deleted database is gone from the list');
});
