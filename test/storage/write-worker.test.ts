// The write thread's own check of a packed batch. `packOps` never builds a malformed one (it
// refuses unknown columns first), so the thread's check is reached here through `writePacked`:
// a batch that does not fit the layout is refused whole, nothing of it is written, and the
// batches that queued with it still land.
import { RocksLevel } from '@nxtedition/rocksdb';
import fc from 'fast-check';
import { rmSync } from 'node:fs';
import t, { type Test } from 'tap';
import { COLUMN_FAMILIES } from '../../src/storage/db.js';
import { PackedOps, WriteWorker, type WireOp, packOps, unpackOps } from '../../src/storage/write-worker.js';
import { fcParams } from '../support/fc.js';
import { tempDir } from '../support/node.js';

const columnIndex = new Map<string, number>(COLUMN_FAMILIES.map((name, i) => [name, i]));
const put = (cf: string, key: string, value: string): WireOp => ({ type: 'put', cf, key: Buffer.from(key), value: Buffer.from(value) });
const del = (cf: string, key: string): WireOp => ({ type: 'del', cf, key: Buffer.from(key) });

async function open(t: Test) {
  const dir = tempDir('firkin-write-worker-');
  const db = new RocksLevel(dir, { keyEncoding: 'buffer', valueEncoding: 'buffer' });
  await db.open({ columns: Object.fromEntries(['default', ...COLUMN_FAMILIES].map((name) => [name, {}])), createIfMissing: true });
  const writer = await WriteWorker.start(db.handle, COLUMN_FAMILIES);
  t.teardown(async () => {
    await writer.stop();
    await db.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const read = async (cf: string, key: string) => {
    const [value] = (await db.getMany([Buffer.from(key)], { column: (db.columns as Record<string, unknown>)[cf] } as never)) as (Buffer | undefined | null)[];
    return value === undefined || value === null ? undefined : value.toString();
  };
  return { writer, read };
}

/** A packed batch with its bytes changed by `mutate` (a copy: the original stays usable). */
function packedWith(ops: readonly WireOp[], mutate: (b: Buffer) => Buffer): ArrayBuffer {
  const bytes = mutate(Buffer.from(packOps(ops, columnIndex)));
  const out = new ArrayBuffer(bytes.length);
  Buffer.from(out).set(bytes);
  return out;
}

t.test('malformed batches are refused whole; the well-formed ones sent with them land', async (t) => {
  const { writer, read } = await open(t);
  await writer.write([put('docs', 'gone', 'x')], true);
  // A delete first: with its kind byte changed, the rest of the batch still parses.
  const ops = [del('docs', 'gone'), put('docs', 'a', 'one'), put('paths', 'b', 'two')];
  const second = 6 + 'gone'.length;
  const cases: [string, ArrayBuffer][] = [
    ['unknown kind', packedWith(ops, (b) => ((b[0] = 7), b))],
    ['unknown column', packedWith(ops, (b) => ((b[second + 1] = 200), b))],
    ['a key length past the end', packedWith(ops, (b) => (b.writeUInt32LE(1_000, 2), b))],
    ['a value length past the end', packedWith(ops, (b) => (b.writeUInt32LE(1_000, second + 6 + 'a'.length), b))],
    ['cut inside the last op', packedWith(ops, (b) => b.subarray(0, b.length - 2))],
    ['an op header cut short', packedWith(ops, (b) => Buffer.concat([b, Buffer.from([1, 0, 0])]))],
  ];
  // All sent in one turn, between two good batches: they queue up and meet in one group.
  const sent = [writer.write([put('docs', 'before', '1')], true), ...cases.map(([, packed]) => writer.writePacked(packed, true)), writer.write([put('docs', 'after', '2')], true)];
  const settled = await Promise.allSettled(sent);
  t.equal(settled[0]!.status, 'fulfilled', 'the batch before');
  t.equal(settled.at(-1)!.status, 'fulfilled', 'the batch after');
  cases.forEach(([what], i) => {
    const s = settled[i + 1]!;
    t.equal(s.status, 'rejected', what);
    if (s.status === 'rejected') t.match((s.reason as Error).message, /malformed packed batch/, what);
  });
  t.same([await read('docs', 'before'), await read('docs', 'after')], ['1', '2']);
  t.same([await read('docs', 'a'), await read('docs', 'gone'), await read('paths', 'b')], [undefined, 'x', undefined], 'nothing of a refused batch was written');
  await writer.writePacked(packOps(ops, columnIndex), true);
  t.same([await read('docs', 'a'), await read('docs', 'gone'), await read('paths', 'b')], ['one', undefined, 'two'], 'the same ops, well packed, land');
});

t.test('property: a packed batch cut anywhere inside an op is refused and writes nothing', async (t) => {
  const { writer, read } = await open(t);
  const opArb = fc.record({
    type: fc.constantFrom('put' as const, 'del' as const),
    cf: fc.constantFrom(...COLUMN_FAMILIES),
    key: fc.string({ minLength: 1, maxLength: 8 }),
    value: fc.string({ maxLength: 8 }),
  });
  let round = 0;
  await fc.assert(
    fc.asyncProperty(fc.array(opArb, { minLength: 1, maxLength: 6 }), fc.nat(), async (raw, cutSeed) => {
      round++;
      // Keys unique to the round, so a write that should not have happened is seen.
      const ops = raw.map((o): WireOp => (o.type === 'put' ? put(o.cf, `${round}/${o.key}`, o.value) : del(o.cf, `${round}/${o.key}`)));
      const whole = Buffer.from(packOps(ops, columnIndex));
      const ends = new Set<number>([0]);
      let at = 0;
      for (const op of ops) ends.add((at += 6 + op.key.length + (op.type === 'put' ? 4 + op.value.length : 0)));
      const inside = Array.from({ length: whole.length }, (_, i) => i).filter((i) => !ends.has(i));
      if (inside.length === 0) return;
      const cut = inside[cutSeed % inside.length]!;
      const packed = packedWith(ops, (b) => b.subarray(0, cut));
      const refused = await writer.writePacked(packed, false).then(() => false, (err: Error) => /malformed packed batch/.test(err.message));
      if (!refused) return false;
      for (const op of ops) if ((await read(op.cf, op.key.toString())) !== undefined) return false;
      return true;
    }),
    fcParams(100),
  );
});

// A pipelined writer hands the thread batch N+1, built on N's state, before N is on disk:
// N+1 must never land without N.
t.test('a batch built on a refused one is refused, transitively; others land', async (t) => {
  const { writer, read } = await open(t);
  const broken = packedWith([put('docs', 'x', 'x')], (b) => b.subarray(0, b.length - 1));
  // Sent in one turn (one group on the thread), then a chain started after the refusal is known.
  const first = writer.writePackedAfter(broken, true, undefined);
  const second = writer.writeAfter([put('docs', 'on-refused', '1')], true, first.id);
  const third = writer.writeAfter([put('docs', 'on-on-refused', '1')], true, second.id);
  const independent = writer.writeAfter([put('docs', 'independent', '1')], true, undefined);
  const onIndependent = writer.writeAfter([put('docs', 'on-independent', '1')], true, independent.id);
  await t.rejects(first.done, /malformed packed batch/);
  await t.rejects(second.done, /a batch it was built on failed/);
  await t.rejects(third.done, /a batch it was built on failed/);
  await independent.done;
  await onIndependent.done;
  const late = writer.writeAfter([put('docs', 'late-on-refused', '1')], true, third.id);
  await t.rejects(late.done, /a batch it was built on failed/, 'also when sent after the refusal was answered');
  t.same(await Promise.all(['on-refused', 'on-on-refused', 'independent', 'on-independent', 'late-on-refused'].map((k) => read('docs', k))), [undefined, undefined, '1', '1', undefined]);
});

// PackedOps writes what packOps would: a writer with many ops (a BM25 change's postings) packs
// them itself and hands the bytes over with the rest of its batch.
t.test('property: PackedOps packs as packOps does (keys whole or in two parts), unpacks to the same ops, and lands after the batch\'s other ops', async (t) => {
  const { writer, read } = await open(t);
  const opArb = fc.record({
    type: fc.constantFrom('put' as const, 'del' as const),
    cf: fc.constantFrom(...COLUMN_FAMILIES),
    key: fc.string({ minLength: 1, maxLength: 6 }),
    value: fc.string({ maxLength: 300 }),
  });
  let round = 0;
  await fc.assert(
    fc.asyncProperty(fc.array(opArb, { maxLength: 6 }), fc.array(opArb, { maxLength: 60 }), async (plainRaw, packedRaw) => {
      round++;
      const wire = (raw: typeof plainRaw) => raw.map((o): WireOp => (o.type === 'put' ? put(o.cf, `${round}/${o.key}`, o.value) : del(o.cf, `${round}/${o.key}`)));
      const plain = wire(plainRaw);
      const more = wire(packedRaw);
      const builder = new PackedOps();
      for (const op of more) {
        if (op.type === 'put') builder.put(columnIndex.get(op.cf)!, op.key, op.value);
        else builder.del(columnIndex.get(op.cf)!, op.key);
      }
      const bytes = builder.bytes();
      if (!Buffer.from(packOps(more, columnIndex)).equals(bytes)) return false;
      // The same ops with each key given as two parts (a prefix and its last part) pack alike.
      const joined = new PackedOps();
      for (const [i, op] of more.entries()) {
        const cut = i % (op.key.length + 1);
        if (op.type === 'put') joined.putJoined(columnIndex.get(op.cf)!, op.key.subarray(0, cut), op.key.subarray(cut), op.value);
        else joined.delJoined(columnIndex.get(op.cf)!, op.key.subarray(0, cut), op.key.subarray(cut));
      }
      if (!Buffer.from(joined.bytes()).equals(bytes)) return false;
      const back = unpackOps(bytes, COLUMN_FAMILIES);
      if (JSON.stringify(back.map((op) => [op.type, op.cf, Buffer.from(op.key).toString(), op.type === 'put' ? Buffer.from(op.value).toString() : null])) !== JSON.stringify(more.map((op) => [op.type, op.cf, op.key.toString(), op.type === 'put' ? op.value.toString() : null]))) return false;
      await writer.write(plain, false, bytes);
      const model = new Map<string, string | undefined>();
      for (const op of [...plain, ...more]) model.set(JSON.stringify([op.cf, op.key.toString()]), op.type === 'put' ? op.value.toString() : undefined);
      for (const [where, want] of model) {
        const [cf, key] = JSON.parse(where) as [string, string];
        if ((await read(cf, key)) !== want) return false;
      }
      return true;
    }),
    fcParams(100),
  );
});
