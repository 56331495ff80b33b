import t from 'tap';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { RocksLevel } from '@nxtedition/rocksdb';
import { COLUMN_FAMILIES, Store } from '../../src/storage/db.js';
import { tempDir } from '../support/node.js';

/** Each column family's options as RocksDB wrote them in the newest OPTIONS file of `dir`. */
function columnOptions(dir: string): Map<string, Map<string, string>> {
  const newest = readdirSync(dir)
    .filter((name) => name.startsWith('OPTIONS-'))
    .sort((a, b) => Number(a.slice(8)) - Number(b.slice(8)))
    .at(-1);
  if (newest === undefined) throw new Error('no OPTIONS file');
  const columns = new Map<string, Map<string, string>>();
  let current: Map<string, string> | undefined;
  for (const line of readFileSync(join(dir, newest), 'utf8').split('\n')) {
    const section = /^\[CFOptions "(.+)"\]/.exec(line);
    if (section !== null) columns.set(section[1]!, (current = new Map()));
    else if (/^\[/.test(line)) current = undefined;
    else if (current !== undefined) {
      const at = line.indexOf('=');
      if (at > 0) current.set(line.slice(0, at).trim(), line.slice(at + 1).trim());
    }
  }
  return columns;
}

t.test('every column has 16 MB memtables, 8 MB table files and uncompressed levels 0 and 1', async (t) => {
  const dir = tempDir();
  const store = await Store.open(dir, { cacheMb: 16 });
  await store.close();
  const columns = columnOptions(dir);
  for (const cf of ['default', ...COLUMN_FAMILIES]) {
    const options = columns.get(cf);
    t.ok(options, `${cf} is in the OPTIONS file`);
    t.equal(options?.get('write_buffer_size'), String(16 * 1024 * 1024), `${cf}: memtable size`);
    t.equal(options?.get('min_write_buffer_number_to_merge'), '2', `${cf}: flushed two memtables at a time`);
    t.equal(options?.get('target_file_size_base'), String(8 * 1024 * 1024), `${cf}: table file size`);
    t.equal(options?.get('max_bytes_for_level_base'), String(64 * 1024 * 1024), `${cf}: level 1 size`);
    t.match(options?.get('compression_per_level') ?? '', /^kNoCompression:kNoCompression:kZSTD(:kZSTD)*$/, `${cf}: zstd from level 2`);
  }
});

t.test('a data directory written with the binding defaults (builds before 2026-12-03) opens and reads', async (t) => {
  const dir = tempDir();
  const old = new RocksLevel(dir, { keyEncoding: 'buffer', valueEncoding: 'buffer' });
  await old.open({ columns: Object.fromEntries(['default', ...COLUMN_FAMILIES].map((name) => [name, {}])), createIfMissing: true });
  const column = (old.columns as Record<string, unknown>).docs;
  const batch = (old as unknown as { batch(): { put(k: Buffer, v: Buffer, o: object): void; write(o: object): Promise<void> } }).batch();
  for (let i = 0; i < 20_000; i++) batch.put(Buffer.from(`key-${i}`), Buffer.from(`value ${i}`), { column });
  await batch.write({ sync: true });
  await old.close();
  t.equal(columnOptions(dir).get('docs')?.get('write_buffer_size'), String(64 * 1024 * 1024), 'written with the defaults');

  const store = await Store.open(dir, { writeWorker: true });
  t.teardown(() => store.close());
  await store.batch([{ type: 'put', cf: 'docs', key: Buffer.from('after'), value: Buffer.from('written now') }], { sync: true });
  const keys = Array.from({ length: 20_000 }, (_, i) => Buffer.from(`key-${i}`));
  const values = await store.getMany('docs', keys);
  t.equal(values.filter((v, i) => v?.toString() === `value ${i}`).length, 20_000, 'every old write reads back');
  t.equal((await store.get('docs', Buffer.from('after')))?.toString(), 'written now', 'and a new one lands beside them');
  t.equal(columnOptions(dir).get('docs')?.get('write_buffer_size'), String(16 * 1024 * 1024), 'reopened with the new shape');
});
