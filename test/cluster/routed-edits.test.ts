// The VDB write router's retry rules (`routeEdits`) against fake shards that behave as the
// replicated ones do: a request table read before the fence; a command touching a moved id
// refused whole, with no effect and not remembered; a split or merge that copies documents,
// then at its switch fences the source and replays into the target, under their request ids,
// the commands the source applied since the copy. Every edit creates a document: applied
// twice, it would answer 409.
import fc from 'fast-check';
import t from 'tap';
import { type EditsAnswer, routeEdits } from '../../src/cluster/routed-edits.js';
import { fcParams } from '../support/fc.js';

interface Edit {
  readonly docId: string;
}
type Result = { readonly ok: true; readonly id: string } | { readonly ok: false; readonly id: string; readonly error: string };

interface Shard {
  readonly docs: Set<string>;
  readonly table: Map<string, Result[]>;
  /** Ids it refuses (moved away at the switch). */
  fenced: (id: string) => boolean;
  /** A merged source's replicas, removed after the switch. */
  gone: boolean;
}

const newShard = (): Shard => ({ docs: new Set(), table: new Map(), fenced: () => false, gone: false });

class FakeVdb {
  epoch = 1;
  readonly shards: Shard[] = [newShard(), newShard()];
  /** Commands shard 0 applied since the copy, replayed into shard 1 at the switch. */
  readonly sinceCopy: [string, Edit[]][] = [];
  copied = false;
  /** Every document created, in order: each must be created once. */
  readonly created: string[] = [];

  /** A split moves the ids from "n" on out of shard 0 into shard 1; a merge moves them all. */
  constructor(readonly op: 'split' | 'merge') {}

  moves(id: string): boolean {
    return this.op === 'merge' || id >= 'n';
  }

  /** Shard `shard` applies (or answers) command `rid`. */
  apply(shard: number, rid: string, edits: Edit[]): EditsAnswer<Result> {
    const s = this.shards[shard]!;
    if (s.gone) throw new Error('no replica of the merged source answers');
    const seen = s.table.get(rid);
    if (seen !== undefined) return { kind: 'edits', results: seen };
    if (edits.some((e) => s.fenced(e.docId))) return { kind: 'fenced' };
    const results = edits.map((e): Result => {
      if (s.docs.has(e.docId)) return { ok: false, id: e.docId, error: 'conflict' };
      s.docs.add(e.docId);
      this.created.push(e.docId);
      return { ok: true, id: e.docId };
    });
    s.table.set(rid, results);
    if (shard === 0 && this.copied) this.sinceCopy.push([rid, edits]);
    return { kind: 'edits', results };
  }

  /** The copy: documents applied so far reach the target as documents, without their commands. */
  copy(): void {
    for (const id of this.shards[0]!.docs) if (this.moves(id)) this.shards[1]!.docs.add(id);
    this.copied = true;
  }

  /** The fence and the switch: commands since the copy replayed, in parts, under their ids. */
  switch(): void {
    if (!this.copied) this.copy();
    this.shards[0]!.fenced = (id) => this.moves(id);
    const target = this.shards[1]!;
    for (const [rid, edits] of this.sinceCopy) {
      const part = edits.filter((e) => this.moves(e.docId));
      if (part.length === 0) continue;
      for (const e of part) target.docs.add(e.docId);
      target.table.set(rid, this.shards[0]!.table.get(rid)!.filter((r) => this.moves(r.id)));
    }
    if (this.op === 'merge') this.shards[0]!.gone = true;
    this.epoch = 2;
  }
}

/**
 * What happens to the write's first proposal to shard 0. `lost-*`: the answer is lost (the
 * proposal fails) and the map moves meanwhile; `-twice`: the source's next answer is lost too.
 */
type Fault = 'none' | 'fenced' | 'lost-before-apply' | 'lost-after-apply' | 'lost-after-apply-twice';

async function write(vdb: FakeVdb, ids: readonly string[], fault: Fault, copyFirst: boolean): Promise<Result[]> {
  let rids = 0;
  let first = true;
  let loseNext = false;
  return routeEdits<number, Edit, Result>(
    ids.map((docId) => ({ docId })),
    {
      map: async () => vdb.epoch,
      route: (epoch, e) => ({ shard: epoch === 2 && vdb.moves(e.docId) ? 1 : 0 }),
      propose: async (epoch, shard, rid, edits) => {
        if (shard === 0 && epoch === 1 && first) {
          first = false;
          if (copyFirst) vdb.copy();
          if (fault === 'fenced') vdb.switch();
          if (fault === 'lost-after-apply' || fault === 'lost-after-apply-twice') vdb.apply(0, rid, edits);
          if (fault.startsWith('lost')) {
            vdb.switch();
            loseNext = fault === 'lost-after-apply-twice';
            throw new Error('the answer was lost');
          }
        } else if (shard === 0 && loseNext) {
          loseNext = false;
          throw new Error('the answer was lost again');
        }
        return vdb.apply(shard, rid, edits);
      },
      moved: (epoch) => vdb.epoch > epoch,
      awaitNewer: async () => undefined,
      newRid: () => `r${rids++}`,
      resultOf: (e, r) => r.id === e.docId,
      retriesMax: 5,
      tooManyRetries: () => new Error('too many retries'),
    },
  );
}

t.test('a write across a split or merge switch applies each edit once and answers what it did', async (t) => {
  const arbIds = fc.uniqueArray(fc.constantFrom('a', 'c', 'm', 'n', 'q', 'z'), { minLength: 1, maxLength: 6 });
  const arbFault = fc.constantFrom<Fault>('none', 'fenced', 'lost-before-apply', 'lost-after-apply', 'lost-after-apply-twice');
  await fc.assert(
    fc.asyncProperty(arbIds, arbFault, fc.boolean(), fc.constantFrom('split' as const, 'merge' as const), async (ids, fault, copyFirst, op) => {
      // Not covered: a merged source that applied the write before the copy and is gone; only
      // it knew the request id (the target has the documents, copied).
      if (op === 'merge' && !copyFirst && fault.startsWith('lost-after')) return;
      const vdb = new FakeVdb(op);
      const results = await write(vdb, ids, fault, copyFirst);
      t.strictSame(results, ids.map((id) => ({ ok: true, id })), `${op}, ${fault}, copy first ${copyFirst}: every edit answered as applied`);
      t.strictSame([...vdb.created].sort(), [...ids].sort(), `${op}, ${fault}: each document created once`);
    }),
    fcParams(300),
  );
});

t.test('a write whose answer was lost at a split is answered by its source, then by the replay', async (t) => {
  // Applied on the source before the copy: the target has the document, copied, but not the
  // request id; only the source, asked again under it, can say what the write did.
  const before = new FakeVdb('split');
  t.strictSame(await write(before, ['a', 'q'], 'lost-after-apply', false), [{ ok: true, id: 'a' }, { ok: true, id: 'q' }]);
  t.strictSame(before.created, ['a', 'q'], 'applied once, on the source');
  // Applied after the copy, then the source's answer lost twice: the target answers its part
  // from the replay's request id, the source its own part.
  const after = new FakeVdb('split');
  t.strictSame(await write(after, ['a', 'q'], 'lost-after-apply-twice', true), [{ ok: true, id: 'a' }, { ok: true, id: 'q' }]);
  t.strictSame(after.created, ['a', 'q']);
  // A merge: the source gone, the target answers the whole write from the replay.
  const merged = new FakeVdb('merge');
  t.strictSame(await write(merged, ['a', 'q'], 'lost-after-apply', true), [{ ok: true, id: 'a' }, { ok: true, id: 'q' }]);
  t.strictSame(merged.created, ['a', 'q']);
});
