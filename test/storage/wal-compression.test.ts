import t from 'tap';
import { spawnSync } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { COLUMN_FAMILIES, Store } from '../../src/storage/db.js';
import { tempDir } from '../support/node.js';

// The store writes its WAL uncompressed since 2026-12-03; builds before compressed it (zstd,
// the binding's default). A node killed by an older build leaves acknowledged writes only in a
// compressed WAL, and the next build must replay them.
const WRITER = `
const { RocksLevel } = require('@nxtedition/rocksdb');
const [dir, names] = [process.argv[1], JSON.parse(process.argv[2])];
const db = new RocksLevel(dir, { keyEncoding: 'buffer', valueEncoding: 'buffer' });
db.open({ columns: Object.fromEntries(names.map((n) => [n, {}])), createIfMissing: true, walCompression: true }).then(async () => {
  const batch = db.batch();
  for (let i = 0; i < 1000; i++) batch.put(Buffer.from(process.argv[3] + i), Buffer.from('value ' + i), { column: db.columns.docs });
  await batch.write({ sync: true });
  process.kill(process.pid, 'SIGKILL');
});
`;

t.test('writes left only in a WAL an older build compressed are replayed at open', async (t) => {
  const dir = tempDir();
  const prefix = 'key-';
  const child = spawnSync(process.execPath, ['-e', WRITER, dir, JSON.stringify(['default', ...COLUMN_FAMILIES]), prefix], { encoding: 'utf8' });
  t.equal(child.signal, 'SIGKILL', `the writer was killed after its synced write (stderr: ${child.stderr})`);
  const store = await Store.open(dir);
  t.teardown(() => store.close());
  let found = 0;
  for (let i = 0; i < 1000; i++) if ((await store.get('docs', Buffer.from(prefix + i)))?.toString() === `value ${i}`) found++;
  t.equal(found, 1000, 'every synced write is there');
});

t.test("the store's own WAL is written uncompressed (zstd cost the write thread a fifth of its CPU)", async (t) => {
  const dir = tempDir();
  const store = await Store.open(dir, { writeWorker: true });
  t.teardown(() => store.close());
  const value = Buffer.from('a value to find in the WAL as written '.repeat(4));
  await store.batch([{ type: 'put', cf: 'docs', key: Buffer.from('key'), value }], { sync: true });
  const wals = readdirSync(dir).filter((name) => name.endsWith('.log'));
  t.ok(wals.length > 0, 'a WAL file is there');
  t.ok(wals.some((name) => readFileSync(join(dir, name)).includes(value)), 'the value is in it as written');
});
