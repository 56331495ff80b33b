// A VDB shard replica applies its log deterministically: replicas on separate stores, with
// wall clocks a day apart, applying the same committed entries (random creates, updates,
// deletes, stale revisions, foreign revisions with conflicts, attachments, retried request
// ids) answer the same results and hold byte-identical documents, trees, bodies,
// attachments and changes feeds. A replica that restarts and is handed its log again from
// the start skips what it applied and ends in the same state.
import { createHash } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import pino from 'pino';
import t, { type Test } from 'tap';
import { HybridClock } from '../../../src/core/hlc.js';
import { prefixRange } from '../../../src/core/keys.js';
import { type DocEdit, DocEngine } from '../../../src/docdb/engine.js';
import { type DocStateSource, DocShardFsm } from '../../../src/docdb/vdb/shard-fsm.js';
import { type DocShardCommand, decodeDocShardCommand, encodeDocShardCommand } from '../../../src/docdb/vdb/shard-commands.js';
import { encodeCbor } from '../../../src/core/codec.js';
import type { Entry } from '../../../src/raft/types.js';
import { Store } from '../../../src/storage/db.js';
import { fcParams } from '../../support/fc.js';

const log = pino({ level: 'silent' });
const GROUP = 'ds7';
const DB = 'v_s0';

interface Replica {
  dir: string;
  store: Store;
  docs: DocEngine;
  fsm: DocShardFsm;
}

async function openReplica(dir: string, offsetMs: number, source?: DocStateSource): Promise<Replica> {
  const clock = { nowMs: () => Date.now() + offsetMs };
  const store = await Store.open(dir, { writeWorker: false });
  // Automatic compaction on: a replica must ignore it (its log decides).
  const docs = await DocEngine.open({ store, hlc: new HybridClock(clock), log, clock, revsLimit: 5, compactAfterWrites: 3 });
  const fsm = await DocShardFsm.open(docs, store, GROUP, DB, 1_700_000_000_000, source === undefined ? {} : { source });
  return { dir, store, docs, fsm };
}

async function closeReplica(r: Replica): Promise<void> {
  await r.docs.close();
  await r.store.close();
}

async function digest(r: Replica): Promise<string> {
  const hash = createHash('sha256');
  for (const cf of ['docs', 'revs', 'att', 'seq'] as const) {
    hash.update(cf);
    for await (const [k, v] of r.store.entries(cf, prefixRange([DB]))) hash.update(k).update(v);
  }
  // The shard's `_local` documents too.
  hash.update('local');
  for await (const [k, v] of r.store.entries('system', prefixRange(['dshard.local', GROUP]))) hash.update(k).update(v);
  const info = r.docs.dbInfo(DB);
  hash.update(JSON.stringify([info.doc_count, info.doc_del_count, info.update_seq, info.disk_size]));
  return hash.digest('hex');
}

const ids = ['a', 'b', 'c', 'd'];
const attachment = (text: string) => {
  const data = Buffer.from(text);
  return { kind: 'data' as const, blob: { digest: `md5-${createHash('md5').update(data).digest('base64')}`, content_type: 'text/plain', length: data.length, data } };
};

/** An edit as a router would build it; `rev` picks one of the revisions the test has seen (or none). */
const editArb = fc.record({
  id: fc.constantFrom(...ids),
  op: fc.constantFrom('put', 'put', 'delete', 'foreign', 'attach'),
  value: fc.integer({ min: 0, max: 5 }),
  revPick: fc.option(fc.nat(), { nil: undefined }),
});
/** A `_local` write or delete, its `_rev` right, stale or absent. */
const localArb = fc.record({ id: fc.constantFrom('cp1', 'cp2'), del: fc.boolean(), rev: fc.option(fc.integer({ min: 0, max: 3 }), { nil: undefined }), value: fc.nat(9) });
const commandArb = fc.record({
  edits: fc.array(editArb, { minLength: 1, maxLength: 4 }),
  local: fc.option(localArb, { nil: undefined }),
  compact: fc.boolean(),
  retry: fc.boolean(),
  wallMs: fc.integer({ min: 1_700_000_000_000, max: 1_700_000_100_000 }),
});

t.test('replicas applying the same log reach the same state', async (t) => {
  const root = await mkdtemp(join(tmpdir(), 'firkin-dshard-'));
  t.teardown(() => rm(root, { recursive: true, force: true }));
  let run = 0;
  await fc.assert(
    fc.asyncProperty(fc.array(commandArb, { minLength: 1, maxLength: 12 }), async (plan) => {
      run++;
      const a = await openReplica(join(root, `a${run}`), 0);
      const b = await openReplica(join(root, `b${run}`), 86_400_000);
      try {
        // The log: revisions named by earlier results feed later edits, as clients would.
        const seenRevs: string[] = [];
        const entries: Entry[] = [];
        const outcomes: unknown[] = [];
        let rid = 0;
        for (const step of plan) {
          const edits = step.edits.map((e): DocEdit => {
            const rev = e.revPick === undefined || seenRevs.length === 0 ? undefined : seenRevs[e.revPick % seenRevs.length];
            switch (e.op) {
              case 'put':
                return { kind: 'update' as const, docId: e.id, body: { v: e.value }, attachments: undefined, deleted: false, rev };
              case 'delete':
                return { kind: 'update' as const, docId: e.id, body: {}, attachments: undefined, deleted: true, rev: rev ?? 'none' };
              case 'attach':
                return { kind: 'attach' as const, docId: e.id, rev, name: 'f.txt', blob: attachment(`x${e.value}`).blob };
              default:
                return { kind: 'replicate' as const, docId: e.id, body: { foreign: e.value }, attachments: { 'g.txt': attachment(`g${e.value}`) }, path: { revs: [`2-f${e.value}`, `1-r${e.value}`], deleted: false } };
            }
          });
          const command: DocShardCommand = { kind: 'edits', rid: `r${rid++}`, at: { wallMs: step.wallMs, logical: 0 }, edits };
          const l = step.local;
          const local: DocShardCommand[] = l === undefined ? [] : [{ kind: 'local', rid: `r${rid++}`, id: l.id, body: l.del ? null : { seq: l.value }, ...(l.rev === undefined ? {} : { rev: `0-${l.rev}` }) }];
          const commands = [...local, command, ...(step.retry ? [command] : []), ...(step.compact ? [{ kind: 'compact' as const, rid: `r${rid++}` }] : [])];
          for (const c of commands) {
            const entry: Entry = { index: entries.length + 1, term: 1, kind: 'normal', data: encodeDocShardCommand(c) };
            entries.push(entry);
            const [ra, rb] = [await a.fsm.apply(entry), await b.fsm.apply(entry)];
            t.same(rb, ra, 'both replicas answer the same');
            outcomes.push(ra);
            const results = (ra as { results?: { ok: boolean; rev?: string }[] }).results ?? [];
            for (const r of results) if (r.ok && r.rev !== undefined) seenRevs.push(r.rev);
          }
          if (step.retry) t.same(outcomes.at(step.compact ? -2 : -1), outcomes.at(step.compact ? -3 : -2), 'a retried request id answers what it answered first');
        }
        const [da, db] = [await digest(a), await digest(b)];
        if (da !== db) return false;
        // Restart b and hand it the whole log again (a follower's redelivery after a crash).
        await closeReplica(b);
        const b2 = await openReplica(b.dir, 86_400_000);
        try {
          t.equal(b2.fsm.appliedIndex, entries.length, 'the applied index survived the restart');
          for (const e of entries) await b2.fsm.apply(e);
          return (await digest(b2)) === da;
        } finally {
          await closeReplica(b2);
        }
      } finally {
        await closeReplica(a);
        if (b.store.state === 'open') await closeReplica(b).catch(() => undefined);
      }
    }),
    fcParams(15),
  );
});

t.test('_local documents: checked against their revision at apply, and carried by a snapshot transfer', async (t) => {
  const root = await mkdtemp(join(tmpdir(), 'firkin-dshard-'));
  const a = await openReplica(join(root, 'a'), 0);
  let index = 0;
  const apply = (c: DocShardCommand) => a.fsm.apply({ index: ++index, term: 1, kind: 'normal', data: encodeDocShardCommand(c) } as Entry);
  t.same(await apply({ kind: 'local', rid: 'l1', id: 'cp', body: { seq: 'c1-x' } }), { kind: 'local', rev: '0-1' });
  t.match(await apply({ kind: 'local', rid: 'l2', id: 'cp', body: { seq: 'c1-y' }, rev: '0-5' }), { kind: 'local', refused: { code: 'conflict' } }, 'a stale _rev is refused, with no effect');
  t.same(await apply({ kind: 'local', rid: 'l3', id: 'cp', body: { seq: 'c1-z', _rev: 'ignored' }, rev: '0-1' }), { kind: 'local', rev: '0-2' });
  t.same(await apply({ kind: 'local', rid: 'l3', id: 'cp', body: { seq: 'again' }, rev: '0-2' }), { kind: 'local', rev: '0-2' }, 'a retried request id answers what it answered first');
  t.same(await a.fsm.local('cp'), { seq: 'c1-z', _id: '_local/cp', _rev: '0-2' });
  t.same(await apply({ kind: 'local', rid: 'l4', id: 'gone', body: { n: 1 } }), { kind: 'local', rev: '0-1' });
  t.same(await apply({ kind: 'local', rid: 'l5', id: 'gone', body: null, rev: '0-1' }), { kind: 'local', rev: '0-0' });
  t.match(await apply({ kind: 'local', rid: 'l6', id: 'gone', body: null }), { kind: 'local', refused: { code: 'not_found' } });
  await apply({ kind: 'edits', rid: 'e1', at: { wallMs: 1_700_000_000_000, logical: 0 }, edits: [{ kind: 'update', docId: 'doc', body: { v: 1 }, attachments: undefined, deleted: false, rev: undefined }] });
  // A replica behind the snapshot loads a's state, `_local` documents included.
  const c = await openReplica(join(root, 'c'), 0, async () => a.fsm.exportState());
  t.teardown(async () => {
    await closeReplica(a);
    await closeReplica(c);
    await rm(root, { recursive: true, force: true });
  });
  await c.fsm.restore(a.fsm.snapshot());
  t.equal(await digest(c), await digest(a), 'the copy holds the same documents and _local documents');
  t.same(await c.fsm.local('cp'), { seq: 'c1-z', _id: '_local/cp', _rev: '0-2' });
  t.equal(await c.fsm.local('gone'), undefined);
});

t.test('a replica database is written only by its log', async (t) => {
  const root = await mkdtemp(join(tmpdir(), 'firkin-dshard-'));
  const r = await openReplica(join(root, 'r'), 0);
  t.teardown(async () => {
    await closeReplica(r);
    await rm(root, { recursive: true, force: true });
  });
  await t.rejects(r.docs.putDoc(DB, 'x', { id: undefined, rev: undefined, deleted: false, body: {}, attachments: undefined, revisions: undefined }, undefined), { code: 'forbidden' });
  await t.rejects(r.docs.bulkDocs(DB, [{ _id: 'x' }], true, () => 'g'), { code: 'forbidden' });
  await t.rejects(r.docs.deleteDb(DB), { code: 'forbidden' });
  t.throws(() => r.docs.compact(DB), { code: 'forbidden' });
  await t.rejects(DocShardFsm.open(r.docs, r.store, 'ds8', DB, 0), { code: 'conflict' }, 'another group cannot take the database');
});

/** One replica whose log indexes count up, reopened on the same data by `reopen` (`r` is the current one). */
async function reopenableReplica(t: Test) {
  const root = await mkdtemp(join(tmpdir(), 'firkin-dshard-'));
  let r = await openReplica(join(root, 'r'), 0);
  t.teardown(async () => {
    await closeReplica(r);
    await rm(root, { recursive: true, force: true });
  });
  let index = 0;
  return {
    get r() {
      return r;
    },
    async reopen() {
      await closeReplica(r);
      r = await openReplica(join(root, 'r'), 0);
    },
    apply: (c: DocShardCommand) => r.fsm.apply({ index: ++index, term: 1, kind: 'normal', data: encodeDocShardCommand(c) } as Entry),
    at: { wallMs: 1_700_000_000_000, logical: 0 },
    put: (id: string): DocEdit => ({ kind: 'update', docId: id, body: { id }, attachments: undefined, deleted: false, rev: undefined }),
  };
}

t.test('a fence (own entry) refuses writes outside the range with no effect; copies pass; purge and reopen', async (t) => {
  const one = await reopenableReplica(t);
  const { apply, at, put } = one;
  const docIds = Array.from({ length: 40 }, (_, i) => `doc${i}`);
  await apply({ kind: 'edits', rid: 'r1', at, edits: docIds.map(put) });
  const upper: [number, number] = [2147483648, 4294967295];
  const owned = { hash: 'phash2' as const, ranges: [[0, 2147483647] as [number, number]] };
  t.same(await apply({ kind: 'own', rid: 'r2', owned }), { kind: 'own' });
  const inUpper = docIds.filter((id) => !one.r.fsm.owns(id));
  const inLower = docIds.filter((id) => one.r.fsm.owns(id));
  t.ok(inUpper.length > 0 && inLower.length > 0, `the fence splits the ids (${inLower.length} kept, ${inUpper.length} fenced)`);
  const before = one.r.docs.dbInfo(DB).update_seq;
  t.same(await apply({ kind: 'edits', rid: 'r3', at, edits: [put('new-a'), put(inUpper[0]!)] }), { kind: 'fenced' }, 'an entry touching a fenced id is refused whole');
  t.equal(one.r.docs.dbInfo(DB).update_seq, before, '... with no effect');
  t.match(await apply({ kind: 'edits', rid: 'r3', at, edits: [put(inUpper[0]!)] }), { kind: 'fenced' }, 'refused again while the id is fenced');
  const freshLower = Array.from({ length: 50 }, (_, i) => `fresh${i}`).find((id) => one.r.fsm.owns(id))!;
  t.match(await apply({ kind: 'edits', rid: 'r3', at, edits: [put(freshLower)] }), { kind: 'edits', results: [{ ok: true }] }, 'a refusal is not remembered: the same request id applies where the shard owns the ids (a rolled-back switch gives a range back)');
  t.match(await apply({ kind: 'edits', rid: 'r4', at, edits: [{ kind: 'replicate', docId: inUpper[0]!, body: { copied: true }, attachments: undefined, path: { revs: ['2-bbbb', '1-aaaa'], deleted: false } }], copy: true }), { kind: 'edits', results: [{ ok: true }] }, 'a copy passes the fence');
  t.ok(one.r.fsm.ownsRange('phash2', [0, 100]) && !one.r.fsm.ownsRange('phash2', upper), 'ownsRange');
  // The fence survives a restart.
  await one.reopen();
  t.notOk(one.r.fsm.owns(inUpper[0]!), 'the fence is durable');
  const purged = await apply({ kind: 'purge', rid: 'r5', hash: 'phash2', range: upper });
  t.same(purged, { kind: 'purge', purged: inUpper.length }, 'the purge removes every document of the range');
  t.equal(one.r.docs.dbInfo(DB).doc_count, inLower.length + 1, 'the kept ones stay (and the one written after the refusal)');
  t.equal(await one.r.docs.getRecord(DB, inUpper[1]!), undefined, 'as if never written');
});

t.test('numbered own entries (a rolled-back switch): the range given back stays given back when the fence commits late', async (t) => {
  const one = await reopenableReplica(t);
  const { apply, at, put } = one;
  const all: [number, number] = [0, 4294967295];
  const lower: [number, number] = [0, 2147483647];
  const ids = Array.from({ length: 20 }, (_, i) => `doc${i}`);
  // Attempt 40: the fence (80), then the give-back (81) of its rollback.
  t.same(await apply({ kind: 'own', rid: 'f1', owned: { hash: 'phash2', ranges: [lower], n: 80 } }), { kind: 'own' });
  const upperId = ids.find((id) => !one.r.fsm.owns(id))!;
  t.same(await apply({ kind: 'own', rid: 'g1', owned: { hash: 'phash2', ranges: [all], n: 81 } }), { kind: 'own' });
  t.ok(one.r.fsm.owns(upperId), 'the range is given back');
  // The same fence proposed again (its first answer lost), committed after the give-back.
  t.same(await apply({ kind: 'own', rid: 'f1-again', owned: { hash: 'phash2', ranges: [lower], n: 80 } }), { kind: 'own', stale: true }, 'a late fence of the rolled-back attempt changes nothing');
  t.ok(one.r.fsm.owns(upperId), 'the shard still owns the whole range');
  t.match(await apply({ kind: 'edits', rid: 'w1', at, edits: ids.map(put) }), { kind: 'edits' }, 'and takes writes of it');
  await one.reopen();
  t.same(one.r.fsm.owned, { hash: 'phash2', ranges: [all], n: 81 }, 'the order survives a restart');
  // The next attempt (52 > 40) fences again; an own without a number (an older coordinator) always applies.
  t.same(await apply({ kind: 'own', rid: 'f2', owned: { hash: 'phash2', ranges: [lower], n: 104 } }), { kind: 'own' });
  t.notOk(one.r.fsm.owns(upperId), 'a later attempt fences');
  t.same(await apply({ kind: 'own', rid: 'old', owned: { hash: 'phash2', ranges: [all] } }), { kind: 'own' });
  t.ok(one.r.fsm.owns(upperId));
});

/** A split's or merge's two replicas (source and target), each with its own log indexes. */
async function sourceAndTarget(t: Test) {
  const root = await mkdtemp(join(tmpdir(), 'firkin-dshard-'));
  const src = await openReplica(join(root, 'src'), 0);
  const dst = await openReplica(join(root, 'dst'), 0);
  t.teardown(async () => {
    await closeReplica(src);
    await closeReplica(dst);
    await rm(root, { recursive: true, force: true });
  });
  const applier = (r: Replica) => {
    let index = 0;
    return (c: DocShardCommand) => r.fsm.apply({ index: ++index, term: 1, kind: 'normal', data: encodeDocShardCommand(c) } as Entry);
  };
  return { src, dst, onSrc: applier(src), onDst: applier(dst) };
}

t.test('a split or merge carries _local documents: a locals entry puts them as stored and drops ids, past a fence', async (t) => {
  const { src, dst, onSrc, onDst } = await sourceAndTarget(t);
  const ids = Array.from({ length: 30 }, (_, i) => `cp${i}`);
  for (const id of ids) {
    await onSrc({ kind: 'local', rid: `w1-${id}`, id, body: { seq: 1, big: 'x'.repeat(100) } });
    await onSrc({ kind: 'local', rid: `w2-${id}`, id, body: { seq: 2, big: 'x'.repeat(100) }, rev: '0-1' });
  }
  const upper: [number, number] = [2147483648, 4294967295];
  // The page reads whatever the replica owns (the coordinator reads after its fence), in id order, by bytes.
  await onSrc({ kind: 'own', rid: 'fence', owned: { hash: 'phash2', ranges: [[0, 2147483647]] } });
  const moving: [string, Buffer][] = [];
  let after: string | undefined;
  let pages = 0;
  for (;;) {
    const page = await src.fsm.localsPage('phash2', upper, after, 300);
    pages++;
    moving.push(...page.entries);
    if (!page.more) break;
    after = page.entries.at(-1)![0];
  }
  const expected = ids.filter((id) => !src.fsm.owns(`_local/${id}`)).sort();
  t.ok(expected.length > 2 && expected.length < ids.length, `the range holds some of the ids (${expected.length})`);
  t.same(moving.map(([id]) => id), expected, 'every local document of the range, once, in id order');
  t.ok(pages > 1, `in pages bounded by bytes (${pages})`);
  t.same(await onDst({ kind: 'locals', rid: 'carry', put: moving, drop: [] }), { kind: 'locals' });
  for (const id of expected) t.same(await dst.fsm.local(id), { seq: 2, big: 'x'.repeat(100), _id: `_local/${id}`, _rev: '0-2' }, `${id} with its revision`);
  t.same(await onDst({ kind: 'local', rid: 'next', id: expected[0]!, body: { seq: 3 }, rev: '0-2' }), { kind: 'local', rev: '0-3' }, 'a checkpointer naming the revision it had goes on');
  t.match(await onSrc({ kind: 'local', rid: 'late', id: expected[1]!, body: { seq: 9 }, rev: '0-2' }), { kind: 'fenced' }, 'the fenced source refuses writes of the range');
  t.same(await onSrc({ kind: 'locals', rid: 'drop', put: [], drop: expected }), { kind: 'locals' }, 'the drop passes the fence');
  for (const id of expected) t.equal(await src.fsm.local(id), undefined);
  t.equal((await src.fsm.localsPage('phash2', [0, 4294967295], undefined, 1 << 20)).entries.length, ids.length - expected.length, 'the kept ones stay');
  t.throws(() => decodeDocShardCommand(encodeCbor({ kind: 'locals', rid: 'x', put: [['a', encodeCbor('nope')]], drop: [] })), /malformed local document/, 'a value that is not a stored local document is refused');
  t.throws(() => decodeDocShardCommand(encodeCbor({ kind: 'locals', rid: 'x', put: [], drop: [7] })), /malformed local document id/);
});

t.test('a carry takes the source\'s _local write outcomes: a write retried on the target after the switch answers what it did', async (t) => {
  const { src, dst, onSrc, onDst } = await sourceAndTarget(t);
  await onSrc({ kind: 'local', rid: 'create', id: 'k9', body: { v: 'a' } });
  // A compare-and-set that applied on the source; its answer was lost with a paused router.
  t.same(await onSrc({ kind: 'local', rid: 'cas', id: 'k9', body: { v: 'b' }, rev: '0-1' }), { kind: 'local', rev: '0-2' });
  await onSrc({ kind: 'edits', rid: 'doc', at: { wallMs: 1_700_000_000_000, logical: 0 }, edits: [{ kind: 'update', docId: 'd', body: {}, attachments: undefined, deleted: false, rev: undefined }] });
  const reqs = src.fsm.localRequests(10);
  t.same(reqs.map(([rid]) => rid), ['create', 'cas'], 'only _local write outcomes, oldest first');
  t.same(src.fsm.localRequests(1).map(([rid]) => rid), ['cas'], 'at most the most recent');
  const page = await src.fsm.localsPage('phash2', [0, 4294967295], undefined, 1 << 20);
  t.same(await onDst({ kind: 'locals', rid: 'carry', put: page.entries, drop: [], reqs }), { kind: 'locals' });
  // The router sends it again on the new map: same request id, the rev it expected then.
  t.same(await onDst({ kind: 'local', rid: 'cas', id: 'k9', body: { v: 'b' }, rev: '0-1' }), { kind: 'local', rev: '0-2' }, 'answered as on the source, not refused as a conflict with its own write');
  t.same(await dst.fsm.local('k9'), { v: 'b', _id: '_local/k9', _rev: '0-2' }, 'and not applied twice');
  t.match(await onDst({ kind: 'local', rid: 'other', id: 'k9', body: { v: 'c' }, rev: '0-1' }), { kind: 'local', refused: { code: 'conflict' } }, 'a new request with that stale rev is still a conflict');
  t.throws(() => decodeDocShardCommand(encodeDocShardCommand({ kind: 'locals', rid: 'x', put: [], drop: [], reqs: [['r', { kind: 'edits' } as never]] })), /malformed local request id/);
});

// A snapshot is at the index of the last entry applied, of any kind; a replica loading it needs
// a source applied that far. Entries without data (a leader's empty entry, a membership change)
// did not move the applied index: a group whose last entries carried none, and no write to come,
// could never add a replica; the loader retried for ever (chaos seed 150: a reshard's new shard).
t.test('a snapshot taken after entries without data loads from a replica (they move its applied index)', async (t) => {
  const root = await mkdtemp(join(tmpdir(), 'firkin-dshard-'));
  const a = await openReplica(join(root, 'a'), 0);
  const edit = { kind: 'edits' as const, rid: 'e1', at: { wallMs: 1_700_000_000_000, logical: 0 }, edits: [{ kind: 'update' as const, docId: 'doc', body: { v: 1 }, attachments: undefined, deleted: false, rev: undefined }] };
  await a.fsm.apply({ index: 1, term: 1, kind: 'normal', data: encodeDocShardCommand(edit) } as Entry);
  await a.fsm.apply({ index: 2, term: 2, kind: 'noop' } as Entry);
  await a.fsm.apply({ index: 3, term: 2, kind: 'conf', change: { voters: ['n1', 'n2'], learners: [] } } as unknown as Entry);
  t.equal(a.fsm.appliedIndex, 3, 'the applied index is past the entries without data');
  const c = await openReplica(join(root, 'c'), 0, async () => a.fsm.exportState());
  t.teardown(async () => {
    c.fsm.stop();
    await closeReplica(a);
    await closeReplica(c);
    await rm(root, { recursive: true, force: true });
  });
  // A bounded wait: without the change the load retries for ever.
  const outcome = await Promise.race([c.fsm.restore(a.fsm.snapshot()).then(() => 'loaded'), new Promise<string>((r) => setTimeout(() => r('still retrying'), 10_000).unref())]);
  t.equal(outcome, 'loaded', 'the snapshot at index 3 loads from a replica applied to 3');
  if (outcome === 'loaded') t.equal(await digest(c), await digest(a), 'the copy holds the same documents');
  // Restarted, the replica is where it was: nothing to load again, the empty entries not replayed as data.
  await closeReplica(a);
  const a2 = await openReplica(a.dir, 0);
  t.equal(a2.fsm.appliedIndex, 3, 'the applied index past the empty entries survived the restart');
  Object.assign(a, a2);
});
