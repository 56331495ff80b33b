// Shard commands: the codec round-trips any command and refuses any other input with a
// FirkinError; a shard applies commands at log indexes exactly once (a replayed entry is
// skipped, also after a restart), and replicas that apply the same log agree on a digest.
import fc from 'fast-check';
import path from 'node:path';
import pino from 'pino';
import t from 'tap';
import { FirkinError } from '../../src/core/errors.js';
import { Store } from '../../src/storage/db.js';
import { usearchEngine } from '../../src/vector/ann/usearch.js';
import { type ShardCommand, commandRuns, decodeShardCommand, encodeShardCommand, splitCommands } from '../../src/vector/commands.js';
import { Shard } from '../../src/vector/shard.js';
import { smallShardConfig } from './engine-harness.js';
import { fcParams } from '../support/fc.js';
import { tempDir } from '../support/node.js';

const DIMS = 4;
const id = fc.constantFrom('a', 'b', 'c', 'd', 'e', 'f');
const vector = fc.array(fc.float({ noNaN: true, noDefaultInfinity: true, min: -10, max: 10 }), { minLength: DIMS, maxLength: DIMS }).map((v) => Float32Array.from(v));
const doc = fc.record({ id, text: fc.string({ maxLength: 12 }), metadata: fc.dictionary(fc.constantFrom('x', 'y', 'z'), fc.oneof(fc.integer(), fc.string({ maxLength: 4 }), fc.boolean())), vector });
const command: fc.Arbitrary<ShardCommand> = fc.oneof(
  fc.record({ kind: fc.constant('upsert' as const), docs: fc.array(doc, { minLength: 1, maxLength: 4 }) }),
  fc.record({ kind: fc.constant('delete' as const), ids: fc.array(id, { minLength: 1, maxLength: 3 }) }),
);

t.test('the codec round-trips every command and refuses anything else with a FirkinError', (t) => {
  fc.assert(
    fc.property(command, (c) => {
      const back = decodeShardCommand(encodeShardCommand(c));
      t.same(JSON.parse(JSON.stringify(back, (_, v: unknown) => (v instanceof Float32Array ? [...v] : v))), JSON.parse(JSON.stringify(c, (_, v: unknown) => (v instanceof Float32Array ? [...v] : v))));
      return true;
    }),
    fcParams(200),
  );
  fc.assert(
    fc.property(fc.uint8Array({ maxLength: 64 }), (bytes) => {
      try {
        decodeShardCommand(bytes);
      } catch (err) {
        return err instanceof FirkinError && err.code === 'error';
      }
      return true; // some random bytes are a valid command: fine
    }),
    fcParams(500),
  );
  t.end();
});

async function openShard(dir: string) {
  const store = await Store.open(path.join(dir, 'db'), { writeWorker: false });
  const config = smallShardConfig({ dimensions: DIMS });
  const shard = await Shard.open(0, config, { store, ann: usearchEngine, indexDir: dir, log: pino({ level: 'silent' }) });
  return {
    shard,
    close: async () => {
      await shard.close({ save: false });
      await store.close();
    },
  };
}

t.test('a shard applies each log index once; replicas of one log agree, restarts included', async (t) => {
  await fc.assert(
    fc.asyncProperty(fc.array(command, { minLength: 1, maxLength: 12 }), fc.nat(12), async (log, restartAt) => {
      const one = await openShard(tempDir('firkin-cmd-a-'));
      let two = await openShard(tempDir('firkin-cmd-b-'));
      const dirTwo = two.shard.indexFile.replace(/\/shard-0\.usearch$/, '');
      try {
        for (const [i, c] of log.entries()) await one.shard.apply(c, i + 1);
        // The second replica sees every entry twice (a re-delivered log) and restarts once.
        for (const [i, c] of log.entries()) {
          await two.shard.apply(c, i + 1);
          t.equal(await two.shard.apply(c, i + 1), undefined, 'a replayed index is skipped');
          if (i === restartAt) {
            await two.close();
            two = await openShard(dirTwo);
            t.equal(two.shard.appliedIndex, i + 1, 'the applied index survives a restart');
            if (i > 0) t.equal(await two.shard.apply(log[i - 1]!, i), undefined, 'an older entry after a restart is skipped');
          }
        }
        const [a, b] = [await one.shard.digest(), await two.shard.digest()];
        t.same(a, b, 'same applied index, same documents, same digest');
        t.equal(one.shard.count, a.docs);
        // Truth from the log alone.
        const live = new Set<string>();
        for (const c of log) for (const x of c.kind === 'upsert' ? c.docs.map((d) => d.id) : c.ids) c.kind === 'upsert' ? live.add(x) : live.delete(x);
        t.equal(a.docs, live.size, 'the documents the log leaves');
        t.equal(a.applied, log.length);
      } finally {
        await one.close();
        await two.close();
      }
    }),
    fcParams(15),
  );
});

t.test('delete says per id whether it was there; a standalone delete of nothing takes no index', async (t) => {
  const s = await openShard(tempDir('firkin-cmd-c-'));
  t.teardown(() => s.close());
  const v = Float32Array.from([1, 0, 0, 0]);
  await s.shard.apply({ kind: 'upsert', docs: [{ id: 'a', text: 'x', metadata: {}, vector: v }, { id: 'b', text: 'y', metadata: {}, vector: v }] }, 1);
  t.same(await s.shard.apply({ kind: 'delete', ids: ['a', 'zz', 'a'] }, 2), { kind: 'delete', deleted: [true, false, false] });
  t.equal(s.shard.appliedIndex, 2);
  t.equal(await s.shard.remove('nope'), false);
  t.equal(s.shard.appliedIndex, 2, 'nothing written');
  t.equal(await s.shard.remove('b'), true);
  t.equal(s.shard.appliedIndex, 3, 'the standalone path numbers its own commands');
  await t.rejects(s.shard.apply({ kind: 'delete', ids: ['b'] }, 0), FirkinError);
});

t.test("a reshard's replay split by new shard: each shard's part, applied in order, is the log applied and cut to its ids", (t) => {
  const withRid = fc.tuple(command, fc.option(fc.constantFrom('r1', 'r2', 'r3'), { nil: undefined })).map(([c, rid]): ShardCommand => (rid === undefined ? c : { ...c, rid }));
  // A model shard: each id's last text, or gone.
  const apply = (model: Map<string, string>, c: ShardCommand) => {
    if (c.kind === 'upsert') for (const d of c.docs) model.set(d.id, d.text);
    else for (const x of c.ids) model.delete(x);
  };
  fc.assert(
    fc.property(fc.array(withRid, { maxLength: 30 }), fc.integer({ min: 1, max: 4 }), (commands, shards) => {
      const shardOf = (x: string) => x.charCodeAt(0) % shards;
      let fresh = 0;
      const parts = splitCommands(commands, shardOf, () => `new${fresh++}`);
      t.equal(fresh, commands.filter((c) => c.rid === undefined).length, 'one new request id per command that had none');
      const whole = new Map<string, string>();
      for (const c of commands) apply(whole, c);
      for (const [shard, list] of parts) {
        const model = new Map<string, string>();
        for (const c of list) {
          const ids = c.kind === 'upsert' ? c.docs.map((d) => d.id) : c.ids;
          if (!ids.every((x) => shardOf(x) === shard)) return false;
          apply(model, c);
        }
        const expected = new Map([...whole].filter(([x]) => shardOf(x) === shard));
        if (JSON.stringify([...model].sort()) !== JSON.stringify([...expected].sort())) return false;
      }
      // Every write lands once, and the parts of one command carry its request id.
      const written = (cs: readonly ShardCommand[]) => cs.flatMap((c) => (c.kind === 'upsert' ? c.docs.map((d) => `u${d.id}${d.text}`) : c.ids.map((x) => `d${x}`))).sort();
      if (JSON.stringify(written([...parts.values()].flat())) !== JSON.stringify(written(commands))) return false;
      const rids = new Set([...parts.values()].flat().map((c) => c.rid));
      return [...rids].every((r) => r !== undefined) && commands.every((c) => c.rid === undefined || rids.has(c.rid));
    }),
    fcParams(300),
  );
  t.end();
});

t.test('replayed commands travel in runs bounded by count and bytes, in order; a large one alone', (t) => {
  fc.assert(
    fc.property(fc.array(fc.integer({ min: 1, max: 50 }), { maxLength: 60 }), fc.integer({ min: 1, max: 8 }), fc.integer({ min: 1, max: 100 }), (sizes, maxCount, maxBytes) => {
      const encoded = sizes.map((n, i) => new Uint8Array(n).fill(i % 256));
      const runs = commandRuns(encoded, maxCount, maxBytes);
      if (runs.flat().length !== encoded.length || !runs.flat().every((c, i) => c === encoded[i])) return false;
      return runs.every((run) => run.length >= 1 && run.length <= maxCount && (run.length === 1 || run.reduce((n, c) => n + c.byteLength, 0) <= maxBytes));
    }),
    fcParams(300),
  );
  t.same(commandRuns([], 4, 10), []);
  t.end();
});
