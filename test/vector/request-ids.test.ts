// Request ids: a replicated write retried through a new leader after its first attempt already
// committed must not apply again (it would undo the writes made in between). The shard applies
// an id once within its window, keeps the ids across a restart and in its snapshots.
import path from 'node:path';
import pino from 'pino';
import t from 'tap';
import { Store } from '../../src/storage/db.js';
import { usearchEngine } from '../../src/vector/ann/usearch.js';
import { FENCE_ENTRY, type ShardCommand, decodeShardCommand, decodeShardEntry, encodeShardCommand, fenceEntry, liftEntry } from '../../src/vector/commands.js';
import type { FenceState } from '../../src/vector/fence.js';
import { Shard, dropShardData } from '../../src/vector/shard.js';
import { ShardFsm } from '../../src/vector/shard-fsm.js';
import { smallShardConfig } from './engine-harness.js';
import { tempDir } from '../support/node.js';

const CONFIG = smallShardConfig({ dimensions: 2, replication_factor: 3 });
const log = pino({ level: 'silent' });
const put = (id: string, v: number, rid?: string): ShardCommand => ({ kind: 'upsert', docs: [{ id, text: `t${v}`, metadata: { v }, vector: Float32Array.from([v, 1]) }], ...(rid === undefined ? {} : { rid }) });
const del = (id: string, rid?: string): ShardCommand => ({ kind: 'delete', ids: [id], ...(rid === undefined ? {} : { rid }) });

async function open(dir: string, requestWindow?: number) {
  const store = await Store.open(path.join(dir, 'db'));
  const deps = { store, ann: usearchEngine, indexDir: dir, log, ...(requestWindow === undefined ? {} : { requestWindow }) };
  const shard = await Shard.open(1, CONFIG, deps);
  return { store, shard, deps };
}

t.test('the codec carries the request id and refuses a bad one', (t) => {
  t.same(decodeShardCommand(encodeShardCommand(put('x', 1, 'abc'))).rid, 'abc');
  t.equal(decodeShardCommand(encodeShardCommand(put('x', 1))).rid, undefined);
  t.same(decodeShardCommand(encodeShardCommand(del('x', 'r2'))), { kind: 'delete', ids: ['x'], rid: 'r2' });
  t.throws(() => decodeShardCommand(encodeShardCommand({ ...put('x', 1), rid: 'x'.repeat(65) })), /bad request id/);
  t.end();
});

t.test('a retried command applies once, across restarts and snapshots', async (t) => {
  const dir = tempDir('firkin-rid-');
  let { store, shard } = await open(dir);
  t.same(await shard.apply(put('x', 1, 'A'), 1), { kind: 'upsert', written: 1 });
  await shard.apply(put('x', 2), 2);
  t.same(await shard.apply(put('x', 1, 'A'), 3), { kind: 'upsert', written: 1 }, 'the retry answers as the first attempt did');
  t.same((await shard.get('x'))?.metadata, { v: 2 }, 'and does not undo the write in between');
  t.equal(shard.appliedIndex, 3, 'the applied index moves past it');

  t.same(await shard.apply(del('x', 'B'), 4), { kind: 'delete', deleted: [true] });
  await shard.apply(put('x', 3), 5);
  t.same(await shard.apply(del('x', 'B'), 6), { kind: 'delete', deleted: [true] }, 'a retried delete answers as it did');
  t.same((await shard.get('x'))?.metadata, { v: 3 }, 'and does not delete the newer write');

  await shard.close({ save: true });
  await store.close();
  ({ store, shard } = await open(dir));
  await shard.apply(put('x', 1, 'A'), 7);
  t.same((await shard.get('x'))?.metadata, { v: 3 }, 'the ids survive a restart');

  // A replica loaded from a snapshot refuses the same retries.
  const fsm = new ShardFsm(shard, { reopenEmpty: async () => shard });
  const snapshot = fsm.snapshot();
  const other = await open(tempDir('firkin-rid-snap-'));
  const source = shard;
  const otherFsm = new ShardFsm(other.shard, {
    reopenEmpty: async (old) => {
      await old.close({ save: false, reason: 'dropped' });
      await dropShardData(other.store, 1, other.deps.indexDir);
      return Shard.open(1, CONFIG, other.deps);
    },
    source: () => source.exportState(),
  });
  await otherFsm.restore(snapshot);
  t.same(otherFsm.shard.exportRequests().map((r) => r.rid), ['A', 'B']);
  await otherFsm.shard.apply(del('x', 'B'), 8);
  t.same((await otherFsm.shard.get('x'))?.metadata, { v: 3 }, 'the snapshot carried the ids');
  await otherFsm.shard.close({ save: false });
  await other.store.close();
  await shard.close({ save: false });
  await store.close();
});

t.test('past a reshard\'s fence, a retry of a write that applied before it answers what it did; other writes are refused', async (t) => {
  const { store, shard } = await open(tempDir('firkin-rid-fence-'));
  const fsm = new ShardFsm(shard, { reopenEmpty: async () => shard });
  const entry = (index: number, command: ShardCommand | 'fence') => ({ index, term: 1, kind: 'normal' as const, data: command === 'fence' ? FENCE_ENTRY : encodeShardCommand(command) });
  t.same(await fsm.apply(entry(1, put('x', 1, 'A'))), { kind: 'upsert', written: 1 });
  t.same(await fsm.apply(entry(2, del('x', 'B'))), { kind: 'delete', deleted: [true] });
  t.same(await fsm.apply(entry(3, 'fence')), { kind: 'fenced', at: 3 });
  // The delete's first answer was lost with its leader; the router retried it, after the fence.
  t.same(await fsm.apply(entry(4, del('x', 'B'))), { kind: 'delete', deleted: [true] }, 'the retried delete answers that it deleted (a "fenced" answer sent it to the new shards, which answered 404)');
  t.same(await fsm.apply(entry(5, put('x', 1, 'A'))), { kind: 'upsert', written: 1 }, 'a retried upsert too: it is not written again on the new shards');
  t.same(await fsm.apply(entry(6, put('y', 2, 'C'))), { kind: 'fenced', at: 3 }, 'a new write is refused');
  t.same(await fsm.apply(entry(7, put('z', 2))), { kind: 'fenced', at: 3 }, 'so is one without a request id');
  // Only the applied index moves past the fence and the refused writes (a snapshot taken after
  // them must load from this replica: test/vector/replicated-shard.test.ts); the data does not.
  t.equal(shard.appliedIndex, 7, 'the entries after the fence moved only the applied index');
  t.equal(await shard.get('x'), undefined);
  t.equal(await shard.get('y'), undefined, 'nothing refused was written');
  t.equal(await shard.get('z'), undefined);
  await shard.close({ save: false });
  await store.close();
});

t.test('a lifted fence (a rolled-back switch): writes apply again, the refused ones stay refused, across a restart and in snapshots', async (t) => {
  const { store, shard } = await open(tempDir('firkin-rid-lift-'));
  let saved: FenceState | undefined;
  const fence = { load: async () => saved, save: async (s: FenceState) => void (saved = s) };
  const fsm = new ShardFsm(shard, { reopenEmpty: async () => shard, fence });
  const entry = (index: number, data: Uint8Array) => ({ index, term: 1, kind: 'normal' as const, data });
  t.same(await fsm.apply(entry(1, encodeShardCommand(put('x', 1)))), { kind: 'upsert', written: 1 });
  t.same(await fsm.apply(entry(2, fenceEntry(1))), { kind: 'fenced', at: 2 });
  t.same(await fsm.apply(entry(3, encodeShardCommand(put('x', 2, 'R')))), { kind: 'fenced', at: 2 }, 'refused while fenced');
  t.same(await fsm.apply(entry(4, liftEntry(1))), { kind: 'unfenced', lifted: true });
  t.equal(fsm.fencedAt, undefined, 'no fence in force');
  t.same(await fsm.apply(entry(5, encodeShardCommand(put('x', 3)))), { kind: 'upsert', written: 1 }, 'writes apply after the lift');
  t.same(await fsm.apply(entry(6, fenceEntry(1))), { kind: 'fence_stale', attempt: 1 }, 'a late fence of the lifted attempt fences nothing');
  t.same(await fsm.apply(entry(7, encodeShardCommand(put('y', 1)))), { kind: 'upsert', written: 1 });
  t.same([fsm.refused(3), fsm.refused(5), fsm.refused(7)], [true, false, false], 'what a replay skips: only the write refused inside the fence');
  t.same(decodeShardEntry(liftEntry(3)), { kind: 'lift', attempt: 3 });
  t.same(decodeShardEntry(FENCE_ENTRY), { kind: 'fence', attempt: 0 }, 'the fence of the builds before lifts');

  // A restart: the fence state comes back from where it was saved (re-applying entries from
  // any earlier point decides each as before: test/vector/fence.test.ts).
  const again = new ShardFsm(shard, { reopenEmpty: async () => shard, fence });
  await again.loadFence();
  t.same([again.refused(3), again.refused(5), again.fencedAt], [true, false, undefined], 'the intervals survive a restart');

  // A snapshot carries the intervals to a replica that never saw the entries.
  const other = new ShardFsm(shard, { reopenEmpty: async () => shard });
  await other.restore(fsm.snapshot());
  t.same([other.refused(3), other.refused(5), other.fencedAt], [true, false, undefined]);
  await shard.close({ save: false });
  await store.close();
});

t.test('ids are forgotten past the window, on disk too', async (t) => {
  const dir = tempDir('firkin-rid-window-');
  let { store, shard } = await open(dir, 3);
  await shard.apply(put('y', 1, 'C'), 1);
  await shard.apply(put('y', 2, 'D'), 2);
  await shard.apply(put('z', 1), 3);
  await shard.apply(put('y', 1, 'C'), 4); // index 4: C (applied at 1) is past the window of 3
  t.same((await shard.get('y'))?.metadata, { v: 1 }, 'an id older than the window applies again');
  t.same(shard.exportRequests().map((r) => r.rid), ['D', 'C']);
  await shard.close({ save: true });
  await store.close();
  ({ store, shard } = await open(dir, 3));
  t.same(shard.exportRequests().map((r) => [r.rid, r.index]), [['D', 2], ['C', 4]], 'what is on disk matches');
  await shard.close({ save: false });
  await store.close();
});

t.test('a snapshot written before streaming (documents inline) still loads, request ids included', async (t) => {
  const { encodeCbor } = await import('../../src/core/codec.js');
  const target = await open(tempDir('firkin-inline-snap-'));
  const fsm = new ShardFsm(target.shard, {
    reopenEmpty: async (old) => {
      await old.close({ save: false, reason: 'dropped' });
      await dropShardData(target.store, 1, target.deps.indexDir);
      return Shard.open(1, CONFIG, target.deps);
    },
  });
  const parts = [encodeShardCommand(put('a', 1)), encodeShardCommand(put('b', 2))];
  await fsm.restore(encodeCbor({ index: 9, parts, requests: [{ r: 'Q', i: 8, o: { kind: 'upsert', written: 1 } }] }));
  t.equal(fsm.shard.appliedIndex, 9);
  t.same((await fsm.shard.get('b'))?.metadata, { v: 2 });
  t.same(fsm.shard.exportRequests(), [{ rid: 'Q', index: 8, outcome: { kind: 'upsert', written: 1 } }]);
  await t.rejects(new ShardFsm(fsm.shard, { reopenEmpty: async (s) => s }).restore(encodeCbor({ index: 20, v: 2 })), /no replica to stream the state from/);
  await fsm.shard.close({ save: false });
  await target.store.close();
});

t.test('property: the remembered ids are those a model keeps, in memory and on disk, through any window', async (t) => {
  const { default: fc } = await import('fast-check');
  const { fcParams } = await import('../support/fc.js');
  await fc.assert(
    fc.asyncProperty(fc.integer({ min: 1, max: 5 }), fc.array(fc.option(fc.constantFrom('A', 'B', 'C', 'D', 'E', 'F'), { nil: undefined }), { minLength: 1, maxLength: 40 }), async (window, rids) => {
      const dir = tempDir('firkin-rid-prop-');
      let { store, shard } = await open(dir, window);
      const model = new Map<string, number>();
      try {
        for (const [i, rid] of rids.entries()) {
          const index = i + 1;
          for (const [r, at] of model) if (at <= index - window) model.delete(r);
          if (rid !== undefined && !model.has(rid)) model.set(rid, index);
          await shard.apply(put('k', index, rid), index);
        }
        const expected = [...model].sort((a, b) => a[1] - b[1]);
        const inMemory = shard.exportRequests().map((r) => [r.rid, r.index]);
        await shard.close({ save: true });
        await store.close();
        ({ store, shard } = await open(dir, window));
        const onDisk = shard.exportRequests().map((r) => [r.rid, r.index]);
        return JSON.stringify(inMemory) === JSON.stringify(expected) && JSON.stringify(onDisk) === JSON.stringify(expected);
      } finally {
        await shard.close({ save: false });
        await store.close();
      }
    }),
    fcParams(25),
  );
});
