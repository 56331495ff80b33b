import t from 'tap';
import fc from 'fast-check';
import { readFileSync } from 'node:fs';
import { bytesPrefixRange, decodeKey, encodeKey, extendKey, keyStringLength, prefixRange, stringPartAfter } from '../../src/core/keys.js';
import { Store, openFailure } from '../../src/storage/db.js';
import { fcParams } from '../support/fc.js';
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
  // RocksDB's own reason, not the binding's "Database is not open", and what to do.
  await t.rejects(Store.open(dir), { code: 'unavailable', message: /^cannot open RocksDB at .*LOCK.*\(another process holds the data directory: is a node already running on it\?\)$/ });
});

t.test("a failed open names RocksDB's own reason, found under the binding's wrapper", async (t) => {
  // The shapes the binding gives (seen here: a directory of root's opened by another user).
  const wrapped = (reason: string) => new Error('Database is not open', { cause: new Error(reason) });
  t.equal(
    openFailure('/d', wrapped('IO error: while open a file for lock: /d/LOCK: Permission denied')),
    'cannot open RocksDB at /d: IO error: while open a file for lock: /d/LOCK: Permission denied (the user running the node must be able to write the data directory)',
  );
  t.match(openFailure('/d', wrapped('IO error: While lock file: /d/LOCK: Resource temporarily unavailable')), /another process holds the data directory/);
  t.match(openFailure('/d', wrapped('IO error: No space left on device: While appending to file: /d/MANIFEST-000009: No space left on device')), /\(free space on the data directory's disk/);
  t.equal(openFailure('/d', wrapped('Corruption: bad record')), 'cannot open RocksDB at /d: Corruption: bad record');
  t.equal(openFailure('/d', new Error('plain')), 'cannot open RocksDB at /d: plain');
  t.equal(openFailure('/d', 'not an error'), 'cannot open RocksDB at /d: not an error');
  t.end();
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

t.test('with the write worker: any mix of synced, unsynced, awaited and not leaves the last write of each key', async (t) => {
  // Unsynced small batches are written on the calling thread when nothing is queued on the
  // worker; they must never overtake a write still on its way there.
  const store = await Store.open(tempDir(), { writeWorker: true });
  t.teardown(() => store.close());
  let round = 0;
  await fc.assert(
    fc.asyncProperty(fc.array(fc.record({ key: fc.integer({ min: 0, max: 4 }), sync: fc.boolean(), wait: fc.boolean(), big: fc.boolean() }), { minLength: 1, maxLength: 40 }), async (writes) => {
      const prefix = `p${round++}`;
      const key = (k: number) => encodeKey([prefix, k]);
      const model = new Map<number, string>();
      const inFlight: Promise<void>[] = [];
      for (const [i, w] of writes.entries()) {
        // A big batch (over the inline limit) always goes to the worker.
        const extra = w.big ? Array.from({ length: 80 }, (_, j) => ({ type: 'put' as const, cf: 'docs' as const, key: encodeKey([prefix, 'x', j]), value: Buffer.from('x') })) : [];
        const p = store.batch([...extra, { type: 'put', cf: 'docs', key: key(w.key), value: Buffer.from(String(i)) }], { sync: w.sync });
        model.set(w.key, String(i));
        if (w.wait) await p;
        else inFlight.push(p);
      }
      await Promise.all(inFlight);
      for (const [k, v] of model) if ((await store.get('docs', key(k)))?.toString() !== v) return false;
      return true;
    }),
    fcParams(60),
  );
});

t.test('entriesSync reads what entries reads, up to its limit, and says whether that was all', async (t) => {
  const store = await Store.open(tempDir());
  t.teardown(() => store.close());
  let round = 0;
  await fc.assert(
    fc.asyncProperty(fc.uniqueArray(fc.integer({ min: 0, max: 50 }), { maxLength: 30 }), fc.integer({ min: 0, max: 40 }), async (ids, limit) => {
      const prefix = `e${round++}`;
      await store.batch(ids.map((id) => ({ type: 'put' as const, cf: 'docs' as const, key: encodeKey([prefix, id]), value: Buffer.from(String(id)) })), { sync: false });
      // A neighbouring prefix must not leak into the range.
      await store.batch([{ type: 'put', cf: 'docs', key: encodeKey([`${prefix}x`, 0]), value: Buffer.from('other') }], { sync: false });
      const all: [Buffer, Buffer][] = [];
      for await (const entry of store.entries('docs', prefixRange([prefix]))) all.push(entry);
      const got = store.entriesSync('docs', prefixRange([prefix]), limit);
      t.equal(all.length, ids.length);
      t.strictSame(got.entries.map(([k, v]) => [k.toString('hex'), v.toString()]), all.slice(0, limit).map(([k, v]) => [k.toString('hex'), v.toString()]));
      t.equal(got.complete, all.length <= limit, `${all.length} entries, limit ${limit}`);
    }),
    fcParams(60),
  );
});

t.test('the data columns take a block cache size, none (0) included', async (t) => {
  for (const cacheMb of [0, 16]) {
    const dir = tempDir();
    const store = await Store.open(dir, { cacheMb });
    await store.batch([{ type: 'put', cf: 'vec', key: encodeKey(['c', 1]), value: Buffer.from('v') }, { type: 'put', cf: 'seq', key: encodeKey(['c', 1]), value: Buffer.from('s') }], { sync: true });
    t.same(store.getManySync('vec', [encodeKey(['c', 1])]).map(String), ['v'], `cache ${cacheMb} MB: data column`);
    t.equal((await store.get('seq', encodeKey(['c', 1])))?.toString(), 's', `cache ${cacheMb} MB: other column`);
    await store.close();
  }
});

t.test('with the write worker: batches that queue up while one is written share one write, each still atomic and in order', async (t) => {
  const store = await Store.open(tempDir(), { writeWorker: true });
  t.teardown(() => store.close());
  const before = store.stats();
  // Handed over in one turn: the first is written alone, the rest queue behind it.
  const writes = Array.from({ length: 50 }, (_, i) =>
    store.batch(
      [
        { type: 'put', cf: 'docs', key: encodeKey(['g', 'last']), value: Buffer.from(String(i)) },
        { type: 'put', cf: 'docs', key: encodeKey(['g', i]), value: Buffer.from('a') },
        { type: 'put', cf: 'revs', key: encodeKey(['g', i]), value: Buffer.from('b') },
      ],
      { sync: i % 3 === 0 },
    ),
  );
  await Promise.all(writes);
  const after = store.stats();
  t.equal(after.threadBatches - before.threadBatches, 50, 'every batch went to the thread');
  t.ok(after.threadWrites - before.threadWrites < 50, `fewer writes than batches (${after.threadWrites - before.threadWrites})`);
  t.equal((await store.get('docs', encodeKey(['g', 'last'])))?.toString(), '49', 'in order: the last batch wrote last');
  for (let i = 0; i < 50; i++) t.same([(await store.get('docs', encodeKey(['g', i])))?.toString(), (await store.get('revs', encodeKey(['g', i])))?.toString()], ['a', 'b']);
});

t.test('keyStringBatches walks what keyBatches walks, keys as UTF-8 strings; a walk cut by close ends with unavailable', async (t) => {
  const store = await Store.open(tempDir());
  let round = 0;
  await fc.assert(
    fc.asyncProperty(fc.array(fc.oneof(fc.double({ noNaN: true }), fc.string({ unit: 'binary', maxLength: 6 })), { maxLength: 2 }), fc.uniqueArray(fc.string({ unit: 'binary', maxLength: 8 }), { maxLength: 40 }), fc.integer({ min: 1, max: 7 }), fc.boolean(), async (middle, ids, batchSize, reverse) => {
      const prefix = encodeKey([`k${round++}`, ...middle]);
      await store.batch(ids.map((id) => ({ type: 'put' as const, cf: 'paths' as const, key: extendKey(prefix, [id]), value: Buffer.alloc(0) })), { sync: false });
      const range = { ...bytesPrefixRange(prefix), reverse };
      const asBuffers: string[] = [];
      for await (const batch of store.keyBatches('paths', range)) for (const key of batch) asBuffers.push(decodeKey(key).at(-1) as string);
      const asStrings: string[] = [];
      const prefixChars = keyStringLength(prefix);
      for await (const batch of store.keyStringBatches('paths', range, batchSize)) {
        t.ok(batch.length <= batchSize);
        for (const key of batch) asStrings.push(stringPartAfter(key, prefixChars));
      }
      t.strictSame(asStrings, asBuffers);
      t.equal(await store.count('paths', range), ids.length);
      t.equal(await store.count('paths', { ...range, limit: 3 }), Math.min(3, ids.length));
    }),
    fcParams(60),
  );
  // A walk cut by the close (which waits for a native read in flight) ends with 'unavailable'.
  await store.batch(Array.from({ length: 5000 }, (_, i) => ({ type: 'put' as const, cf: 'paths' as const, key: encodeKey(['big', i]), value: Buffer.alloc(0) })), { sync: false });
  const walk = store.keyStringBatches('paths', prefixRange(['big']), 100);
  t.equal((await walk.next()).value.length, 100);
  const rest = walk.next();
  await store.close();
  await t.rejects(async () => {
    await rest;
    for (;;) if ((await walk.next()).done) break;
  }, { code: 'unavailable' });
  await t.rejects(store.count('paths', prefixRange(['big'])), { code: 'unavailable' }, 'no walk starts on a closed store');
});

t.test("files: every column's table files and the WAL, counted from the data directory, with the open-files limit", async (t) => {
  const dir = tempDir();
  let store = await Store.open(dir, { writeWorker: true });
  const value = Buffer.alloc(200, 7);
  await store.batch(Array.from({ length: 5_000 }, (_, i) => ({ type: 'put' as const, cf: 'docs' as const, key: encodeKey(['f', i]), value })), { sync: true });
  const before = await store.files();
  t.ok(before.walBytes > 5_000 * 200, `the synced write is in the WAL (${before.walBytes} bytes)`);
  await store.close();
  // Reopening replays the WAL into a table file of the `docs` column, which the binding's
  // properties (the `default` column's) never counted.
  store = await Store.open(dir, { writeWorker: true });
  t.teardown(() => store.close());
  const after = await store.files();
  t.ok(after.tableFiles >= 1, `a table file (${after.tableFiles})`);
  t.ok(after.tableBytes > 10_000, `with the documents in it (${after.tableBytes} bytes)`);
  const limit = Number(/^Max open files\s+(\d+)/m.exec(readFileSync('/proc/self/limits', 'utf8'))?.[1]);
  t.equal(after.openFilesLimit, Number.isSafeInteger(limit) ? limit : undefined, "this process's soft limit");
  t.equal(await store.files(), after, 'asked again at once: the same scan');
});
