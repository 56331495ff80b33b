import t from 'tap';
import { encodeKey, prefixRange } from '../../src/core/keys.js';
import { Store } from '../../src/storage/db.js';
import { tempDir } from '../support/node.js';

t.test('column families are separate, batches are atomic, iteration is ordered, ranges clear', async (t) => {
  const dir = tempDir();
  let store = await Store.open(dir);
  t.teardown(() => store.close());
  const k = (...parts: (string | number)[]) => encodeKey(parts);
  await store.batch(
    [
      { type: 'put', cf: 'docs', key: k('db1', 'b'), value: Buffer.from('B') },
      { type: 'put', cf: 'docs', key: k('db1', 'a'), value: Buffer.from('A') },
      { type: 'put', cf: 'docs', key: k('db2', 'a'), value: Buffer.from('X') },
      { type: 'put', cf: 'revs', key: k('db1', 'a'), value: Buffer.from('R') },
    ],
    { sync: true },
  );
  t.equal((await store.get('docs', k('db1', 'a')))?.toString(), 'A');
  t.equal((await store.get('revs', k('db1', 'a')))?.toString(), 'R');
  t.equal(await store.get('seq', k('db1', 'a')), undefined);
  const seen: string[] = [];
  for await (const [, v] of store.entries('docs', prefixRange(['db1']))) seen.push(v.toString());
  t.same(seen, ['A', 'B']);
  const reversed: string[] = [];
  for await (const [, v] of store.entries('docs', { ...prefixRange(['db1']), reverse: true, limit: 1 })) reversed.push(v.toString());
  t.same(reversed, ['B']);
  await store.clearRange('docs', prefixRange(['db1']));
  t.equal(await store.get('docs', k('db1', 'a')), undefined);
  t.equal((await store.get('docs', k('db2', 'a')))?.toString(), 'X');

  await store.close();
  t.equal(store.state, 'closed');
  await t.rejects(store.get('docs', k('db2', 'a')), { code: 'unavailable' });
  store = await Store.open(dir);
  t.equal((await store.get('docs', k('db2', 'a')))?.toString(), 'X', 'synced data survives reopen');
});

t.test('a second open of the same dir fails with a clear error', async (t) => {
  const dir = tempDir();
  const store = await Store.open(dir);
  t.teardown(() => store.close());
  await t.rejects(Store.open(dir), { code: 'unavailable', message: /cannot open RocksDB/ });
});

t.test('with the write worker: writes land, stay ordered, and survive reopen', async (t) => {
  const dir = tempDir();
  let store = await Store.open(dir, { writeWorker: true });
  t.teardown(() => store.close());
  const key = (i: number) => encodeKey(['w', i]);
  await Promise.all(Array.from({ length: 200 }, (_, i) => store.put('docs', key(i % 10), Buffer.from(String(i)), { sync: i % 2 === 0 })));
  for (let k = 0; k < 10; k++) t.equal((await store.get('docs', key(k)))?.toString(), String(190 + k), 'the last write to a key wins');
  await store.batch([{ type: 'del', cf: 'docs', key: key(0) }], { sync: true });
  t.equal(await store.get('docs', key(0)), undefined);
  await store.close();
  await t.rejects(store.put('docs', key(1), Buffer.from('x'), { sync: true }), { code: 'unavailable' });
  store = await Store.open(dir, { writeWorker: true });
  t.equal((await store.get('docs', key(9)))?.toString(), '199');
});
