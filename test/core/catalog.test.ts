import t from 'tap';
import { Catalog } from '../../src/core/catalog.js';
import { NUMBER, STRING, jsonRecordCodec, objectSchema } from '../../src/core/codec.js';
import { encodeKey } from '../../src/core/keys.js';
import type { Store } from '../../src/storage/db.js';

/** The part of Store a catalogue uses, over a sorted in-memory map. */
function memoryStore(): Store & { rows: Map<string, Buffer> } {
  const rows = new Map<string, Buffer>();
  const hex = (key: Buffer) => key.toString('hex');
  return {
    rows,
    put: async (_cf: string, key: Buffer, value: Buffer) => void rows.set(hex(key), value),
    del: async (_cf: string, key: Buffer) => void rows.delete(hex(key)),
    entries: async function* (_cf: string, range: { gte: Buffer; lt: Buffer }) {
      for (const k of [...rows.keys()].sort()) {
        const key = Buffer.from(k, 'hex');
        if (Buffer.compare(key, range.gte) >= 0 && Buffer.compare(key, range.lt) < 0) yield [key, rows.get(k)!];
      }
    },
  } as unknown as Store & { rows: Map<string, Buffer> };
}

interface Item {
  readonly id: string;
  readonly name: string;
  readonly size: number;
}
const codec = jsonRecordCodec<Item>('test item', objectSchema({ id: STRING, name: STRING, size: NUMBER }));

t.test('catalog: write-through put/delete, reload sees the same records, other prefixes untouched', async (t) => {
  const store = memoryStore();
  store.rows.set(encodeKey(['other', 'x']).toString('hex'), Buffer.from('not json'));
  const options = { prefix: 'item', codec, keyOf: (r: Item) => r.name, storedIdOf: (r: Item) => r.id };
  const catalog = await Catalog.open(store, options);
  await catalog.put({ id: '1', name: 'a', size: 1 });
  await catalog.put({ id: '2', name: 'b', size: 2 });
  await catalog.put({ id: '1', name: 'a', size: 3 });
  t.equal(await catalog.delete('b'), true);
  t.equal(await catalog.delete('b'), false);
  t.same(catalog.get('a'), { id: '1', name: 'a', size: 3 });
  t.ok(store.rows.has(encodeKey(['item', '1']).toString('hex')), 'stored by its stored id');
  const reloaded = await Catalog.open(store, options);
  t.same([...reloaded.values()], [...catalog.values()]);
  // A damaged record fails the load with the record's name.
  store.rows.set(encodeKey(['item', '9']).toString('hex'), Buffer.from('{"id":"9"}'));
  await t.rejects(Catalog.open(store, options), { code: 'error', message: /stored test item/ });
});
