// The Databases page's URLs for a database and a virtual database (console/src/doc-store.ts):
// one set of browsing code, the base and the feed's form chosen by the kind.
import fc from 'fast-check';
import t from 'tap';
import { type DocStore, allDocsPath, attachmentPath, changesStreamPath, docPath, explainPath, findPath, storeId, storeTitle } from '../../console/src/doc-store.js';
import { fcParams } from '../support/fc.js';

const db: DocStore = { kind: 'db', name: 'shop' };
const vdb: DocStore = { kind: 'vdb', name: 'orders' };

t.test('a database and a VDB differ in their base only, for every read they share', (t) => {
  t.equal(allDocsPath(db, 21, undefined), '/db/shop/_all_docs?limit=21');
  t.equal(allDocsPath(vdb, 101, 'o 7'), '/vdb/orders/_all_docs?limit=101&startkey=%22o%207%22');
  t.equal(docPath(vdb, 'cart', 'open_revs=all&revs=true'), '/vdb/orders/cart?open_revs=all&revs=true');
  t.equal(docPath(db, 'cart'), '/db/shop/cart');
  t.equal(attachmentPath(vdb, 'invoice', 'note.txt'), '/vdb/orders/invoice/_attachments/note.txt');
  t.equal(findPath(vdb), '/vdb/orders/_find');
  t.end();
});

t.test('the live feed: a database\'s stream route, a VDB\'s eventsource feed', (t) => {
  t.equal(changesStreamPath(db, 'now'), '/db/shop/_changes/stream?since=now');
  t.equal(changesStreamPath(vdb, 'c1-AAE'), '/vdb/orders/_changes?feed=eventsource&since=c1-AAE');
  t.equal(changesStreamPath(db, '{timestamp,1,0}'), '/db/shop/_changes/stream?since=%7Btimestamp%2C1%2C0%7D');
  t.end();
});

t.test('only a database has _explain', (t) => {
  t.equal(explainPath(db), '/db/shop/_explain');
  t.equal(explainPath(vdb), undefined);
  t.end();
});

t.test('titles and ids tell a database from a VDB of the same name', (t) => {
  t.same([storeTitle(db), storeTitle(vdb)], ['Database shop', 'Virtual database orders']);
  t.not(storeId({ kind: 'db', name: 'x' }), storeId({ kind: 'vdb', name: 'x' }));
  t.end();
});

t.test('any name, id and attachment name survive the URL as one path segment each', (t) => {
  fc.assert(
    fc.property(fc.constantFrom('db' as const, 'vdb' as const), fc.string({ minLength: 1 }), fc.string({ minLength: 1 }), fc.string({ minLength: 1 }), (kind, name, id, att) => {
      const segments = attachmentPath({ kind, name }, id, att).split('/').map(decodeURIComponent);
      const startkey = new URL(allDocsPath({ kind, name }, 5, id), 'http://x').searchParams.get('startkey');
      return JSON.stringify(segments) === JSON.stringify(['', kind, name, id, '_attachments', att]) && JSON.parse(startkey!) === id;
    }),
    fcParams(),
  );
  t.end();
});
