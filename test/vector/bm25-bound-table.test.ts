// The disk BM25 backend's bound table against a model of maps: committed bounds, the bounds as
// the pending changes leave them (each pending change's over the committed ones, in order),
// the terms changed since the last fold, through changes prepared, applied in order and
// abandoned from the newest, whole-list tightening, and reclaimed numbers.
import fc from 'fast-check';
import t from 'tap';
import { type BoundChange, TermBoundTable } from '../../src/vector/bm25-bound-table.js';
import type { TermBound } from '../../src/vector/bm25-maxscore.js';
import { fcParams } from '../support/fc.js';

const TERMS = Array.from({ length: 12 }, (_, i) => `t${i}`);
const arbTerm = fc.constantFrom(...TERMS);
const arbBound = fc.record({ df: fc.nat(5), tfMax: fc.integer({ min: 1, max: 9 }), docLengthMin: fc.integer({ min: 1, max: 40 }) });

type Op =
  | { kind: 'prepare'; sets: [string, TermBound][] }
  | { kind: 'apply' }
  | { kind: 'abandonNewest' }
  | { kind: 'tighten'; term: string; bound: TermBound }
  | { kind: 'fold' };
const arbOp: fc.Arbitrary<Op> = fc.oneof(
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('prepare' as const), sets: fc.uniqueArray(fc.tuple(arbTerm, arbBound), { selector: ([term]) => term, maxLength: 6 }) }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('apply' as const) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('abandonNewest' as const) }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('tighten' as const), term: arbTerm, bound: arbBound }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('fold' as const) }) },
);

const present = (b: TermBound | undefined) => (b === undefined || b.df === 0 ? undefined : b);

t.test('the table agrees with a model of maps through random changes, folds and reclaims', async (t) => {
  await fc.assert(
    fc.property(fc.array(fc.tuple(arbTerm, arbBound), { maxLength: 6 }), fc.array(arbOp, { maxLength: 60 }), fc.constantFrom(0, 2, 4_096), (initial, ops, slack) => {
      const committed = new Map<string, TermBound>();
      for (const [term, bound] of initial) if (bound.df > 0) committed.set(term, bound);
      const table = new TermBoundTable(committed, slack);
      const pending: { change: BoundChange; sets: Map<string, TermBound | undefined> }[] = [];
      const unfolded = new Set<string>();
      const ahead = (term: string) => {
        for (let i = pending.length - 1; i >= 0; i--) if (pending[i]!.sets.has(term)) return pending[i]!.sets.get(term);
        return committed.get(term);
      };
      for (const op of ops) {
        if (op.kind === 'prepare') {
          const change: BoundChange = { numbers: Int32Array.from(op.sets.map(([term]) => table.numberOf(term))), df: Uint32Array.from(op.sets.map(([, b]) => b.df)), tfMax: Uint32Array.from(op.sets.map(([, b]) => b.tfMax)), lengthMin: Uint32Array.from(op.sets.map(([, b]) => b.docLengthMin)) };
          table.prepared(change);
          pending.push({ change, sets: new Map(op.sets.map(([term, b]) => [term, present(b)])) });
        } else if (op.kind === 'apply') {
          const oldest = pending.shift();
          if (oldest === undefined) continue;
          table.applied(oldest.change);
          for (const [term, b] of oldest.sets) {
            if (b === undefined) committed.delete(term);
            else committed.set(term, b);
            table.markUnfolded(table.numberOf(term));
            unfolded.add(term);
          }
          table.compactIfSparse(pending.length);
        } else if (op.kind === 'abandonNewest') {
          const newest = pending.pop();
          if (newest !== undefined) table.abandoned(newest.change, pending.map((p) => p.change));
        } else if (op.kind === 'tighten') {
          // A whole list read has a real bound: only terms with postings are read.
          if (!committed.has(op.term) || op.bound.df === 0) continue;
          table.tightened(op.term, op.bound);
          committed.set(op.term, op.bound);
        } else {
          table.folded();
          unfolded.clear();
        }
        for (const term of TERMS) {
          if (JSON.stringify(table.committed(term)) !== JSON.stringify(committed.get(term))) throw new Error(`${term}: committed ${JSON.stringify(table.committed(term))}, model ${JSON.stringify(committed.get(term))}`);
          const n = table.numberOf(term);
          const want = ahead(term);
          if (JSON.stringify(table.aheadBound(n)) !== JSON.stringify(want)) throw new Error(`${term}: ahead ${JSON.stringify(table.aheadBound(n))}, model ${JSON.stringify(want)}`);
          if (table.aheadDf(n) !== (want?.df ?? 0) || table.aheadTfMax(n) !== (want?.tfMax ?? 0) || table.aheadLengthMin(n) !== (want?.docLengthMin ?? Infinity)) throw new Error(`${term}: ahead columns differ`);
          if (table.nameOf(n) !== term) throw new Error(`${term}: number ${n} names ${table.nameOf(n)}`);
        }
        const got = new Set(table.unfoldedNumbers().map((n) => table.nameOf(n)));
        if ([...got].sort().join() !== [...unfolded].sort().join()) throw new Error(`unfolded ${[...got]}, model ${[...unfolded]}`);
      }
    }),
    fcParams(300),
  );
});

t.test('numbers of terms gone are reclaimed once nothing is pending, unless a fold still has to delete their keys', async (t) => {
  // 100 terms come (one stays), then go.
  const run = (folded: boolean) => {
    const table = new TermBoundTable([], 0);
    const change = (terms: string[], df: number): BoundChange => ({ numbers: Int32Array.from(terms.map((term) => table.numberOf(term))), df: Uint32Array.from(terms.map(() => df)), tfMax: Uint32Array.from(terms.map(() => 2)), lengthMin: Uint32Array.from(terms.map(() => 7)) });
    const many = Array.from({ length: 100 }, (_, i) => `gone${i}`);
    const first = change([...many, 'stays'], 1);
    table.prepared(first);
    const second = change(many, 0);
    table.prepared(second);
    table.applied(first);
    t.notOk(table.compactIfSparse(1), 'nothing reclaimed while a change is pending');
    table.applied(second);
    if (!folded) for (const n of second.numbers) table.markUnfolded(n);
    t.equal(table.size, 101);
    t.ok(table.compactIfSparse(0), 'counted with nothing pending');
    return table;
  };
  const folded = run(true);
  t.equal(folded.size, 1, 'terms gone and folded are reclaimed');
  t.same(folded.committed('stays'), { df: 1, tfMax: 2, docLengthMin: 7 });
  t.same(folded.aheadBound(folded.numberOf('stays')), { df: 1, tfMax: 2, docLengthMin: 7 });
  t.equal(folded.committed('gone3'), undefined);
  t.notOk(folded.compactIfSparse(0), 'nothing more to reclaim');
  const unfolded = run(false);
  t.equal(unfolded.size, 101, 'terms gone since the last fold are kept: the fold deletes their keys');
  t.same(unfolded.unfoldedNumbers().map((n) => unfolded.nameOf(n)).sort(), Array.from({ length: 100 }, (_, i) => `gone${i}`).sort());
});
