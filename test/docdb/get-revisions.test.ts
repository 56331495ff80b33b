// `DocEngine.getRevisions` (the batched read behind `_bulk_get` and replication) serves
// exactly what `getDoc(db, id, { rev, revs: true })` serves for each wanted revision (less
// the `id` alias the single-document GET adds beside `_id`: replication sends `_id` only), and
// nothing where getDoc answers not_found: over random histories of local edits, conflicting
// replicated branches, deletions (several edits of one document in one write group) and
// compactions. And `getDocNow` (a GET answered from the caches, without a promise) answers
// as getDoc does whenever it answers, over the same histories and every read option.
import assert from 'node:assert/strict';
import fc from 'fast-check';
import t from 'tap';
import { tempDocEngine } from '../support/doc-engine.js';
import { isFirkinError } from '../../src/core/errors.js';
import { DocEngine } from '../../src/docdb/engine.js';

const IDS = ['a', 'b', 'c'];

type Step =
  | { kind: 'edit'; id: number; n: number; deleted: boolean }
  | { kind: 'branch'; id: number; gen: number; hash: string; n: number; deleted: boolean }
  | { kind: 'compact' };

const step: fc.Arbitrary<Step> = fc.oneof(
  { weight: 5, arbitrary: fc.record({ kind: fc.constant('edit' as const), id: fc.nat(IDS.length - 1), n: fc.nat(99), deleted: fc.boolean() }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('branch' as const), id: fc.nat(IDS.length - 1), gen: fc.integer({ min: 1, max: 4 }), hash: fc.stringMatching(/^[0-9a-f]{6}$/), n: fc.nat(99), deleted: fc.boolean() }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'compact' as const }) },
);

async function getDocOrUndefined(docs: DocEngine, db: string, id: string, rev: string): Promise<Record<string, unknown> | undefined> {
  try {
    const { id: alias, ...doc } = await docs.getDoc(db, id, { rev, revs: true });
    assert.equal(alias, id);
    return doc;
  } catch (err) {
    if (isFirkinError(err) && err.code === 'not_found') return undefined;
    throw err;
  }
}

/** Applies `groups` (one write group each) to `db`; the revisions written, and two that never were. */
async function applyHistory(docs: DocEngine, db: string, groups: Step[][]): Promise<{ id: string; rev: string }[]> {
  const seen: { id: string; rev: string }[] = [{ id: 'a', rev: '1-0000' }, { id: 'zz', rev: '1-abc' }];
  for (const group of groups) {
    // One request's entries form one write group: several may touch the same document.
    const local: Record<string, unknown>[] = [];
    for (const s of group) {
      if (s.kind === 'compact') {
        await docs.compact(db);
        continue;
      }
      const id = IDS[s.id]!;
      if (s.kind === 'edit') {
        const rec = await docs.getRecord(db, id);
        local.push(rec === undefined ? { _id: id, n: s.n } : { _id: id, _rev: rec.winner, n: s.n, ...(s.deleted ? { _deleted: true } : {}) });
      } else {
        const revs = Array.from({ length: s.gen }, (_, i) => `${s.hash}${i}`).reverse();
        const results = await docs.bulkDocs(db, [{ _id: id, _rev: `${s.gen}-${revs[0]}`, _revisions: { start: s.gen, ids: revs }, n: s.n, ...(s.deleted ? { _deleted: true } : {}) }], false, () => 'unused');
        for (const r of results) if (r.ok) seen.push({ id, rev: r.rev });
      }
    }
    if (local.length > 0) for (const r of await docs.bulkDocs(db, local, true, () => 'unused')) if (r.ok) seen.push({ id: r.id, rev: r.rev });
  }
  return seen;
}

t.test('getRevisions equals getDoc({ rev, revs: true }) for every wanted revision', async (t) => {
  const { docs } = await tempDocEngine(t, { prefix: 'firkin-getrevs-' });
  let run = 0;
  await fc.assert(
    fc.asyncProperty(fc.array(fc.array(step, { minLength: 1, maxLength: 4 }), { minLength: 1, maxLength: 8 }), fc.array(fc.nat(), { maxLength: 12 }), async (groups, picks) => {
      const db = `p${run++}`;
      await docs.createDb(db);
      const seen = await applyHistory(docs, db, groups);
      const wanted = picks.length === 0 ? seen : picks.map((p) => seen[p % seen.length]!);
      const batched = await docs.getRevisions(db, wanted);
      const single = await Promise.all(wanted.map(({ id, rev }) => getDocOrUndefined(docs, db, id, rev)));
      assert.deepStrictEqual(batched, single);
    }),
    { numRuns: 60 },
  );
  t.pass('60 random histories');
});

// A GET of a cached document is answered without a promise (`getDocNow`); whatever it answers
// must be what `getDoc` reads, with every read option, and it must refuse what getDoc refuses.
t.test('getDocNow answers as getDoc does, from the caches, whenever it answers', async (t) => {
  const { docs } = await tempDocEngine(t, { prefix: 'firkin-getnow-' });
  const options = fc.record(
    { rev: fc.option(fc.nat(), { nil: undefined }), revs: fc.boolean(), conflicts: fc.boolean(), deletedConflicts: fc.boolean(), revsInfo: fc.boolean(), latest: fc.boolean(), deleted: fc.boolean() },
    { requiredKeys: [] },
  );
  let run = 0;
  let answered = 0;
  await fc.assert(
    fc.asyncProperty(fc.array(fc.array(step, { minLength: 1, maxLength: 4 }), { minLength: 1, maxLength: 8 }), fc.array(fc.tuple(fc.nat(), options), { minLength: 1, maxLength: 12 }), async (groups, reads) => {
      const db = `n${run++}`;
      await docs.createDb(db);
      const seen = await applyHistory(docs, db, groups);
      for (const [pick, o] of reads) {
        const { id } = seen[pick % seen.length]!;
        const asked = { ...o, rev: o.rev === undefined ? undefined : seen[o.rev % seen.length]!.rev };
        const read = await docs.getDoc(db, id, asked).then(
          (doc) => ({ doc }),
          (err: unknown) => ({ error: isFirkinError(err) ? err.code : err }),
        );
        let now: { doc: Record<string, unknown> | undefined } | { error: unknown };
        try {
          now = { doc: docs.getDocNow(db, id, asked) };
        } catch (err) {
          now = { error: isFirkinError(err) ? err.code : err };
        }
        if ('doc' in now && now.doc === undefined) continue; // not cached: getDoc's to read
        if ('doc' in now) answered++;
        assert.deepStrictEqual(now, read, `${id} ${JSON.stringify(asked)}`);
      }
    }),
    { numRuns: 60 },
  );
  // getDoc's read fills the caches: the reads after it are answered at once.
  t.ok(answered > 100, `getDocNow answered ${answered} reads`);
});
