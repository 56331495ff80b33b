// The pure part of the write path (docdb/edit-apply.ts), without the engine: random sequences
// of local and replicated edits applied to one group, held to a model of CouchDB's update
// rules (a new document takes no rev, an update the current one, a deleted one is re-created
// on its tombstone, deleting what is not there is not_found, anything else is a conflict), and to the group's own bookkeeping: counts,
// the record and changes entry in the batch, the body a later edit reads.
import fc from 'fast-check';
import t from 'tap';
import { HLC_ZERO, type Hlc } from '../../src/core/hlc.js';
import { type Edit, type EditResult, type WriteGroup, applyEdit, bodyKey } from '../../src/docdb/edit-apply.js';
import { type DbRecord, decodeDocRecord, decodeSeq, keys } from '../../src/docdb/records.js';
import { revGen } from '../../src/docdb/revtree.js';
import { fcParams } from '../support/fc.js';

const DB = 'db';
const IDS = ['a', 'b', 'c'];

function newGroup(): WriteGroup {
  const base: DbRecord = { name: DB, createdMs: 0, instanceStartTime: '0', revsLimit: 1000, docCount: 0, delCount: 0, updateSeq: undefined, dataBytes: 0 };
  let seq = 0;
  const bodies = new Map();
  return {
    db: DB,
    base,
    changed: new Set(),
    records: new Map(),
    bodies,
    ops: [],
    docCount: 0,
    delCount: 0,
    dataBytes: 0,
    updateSeq: undefined,
    compactable: 0,
    nextSeq: (): Hlc => ({ ...HLC_ZERO, wallMs: ++seq }),
    // A fresh database: every body there is was written by this group.
    readBody: (docId, rev) => bodies.get(bodyKey(docId, rev)) ?? undefined,
  };
}

type Command =
  | { kind: 'put'; id: string; rev: 'current' | 'none' | 'stale'; deleted: boolean; n: number }
  | { kind: 'replicate'; id: string; onWinner: boolean; hashes: number[]; deleted: boolean; n: number };

const command: fc.Arbitrary<Command> = fc.oneof(
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('put' as const), id: fc.constantFrom(...IDS), rev: fc.constantFrom('current' as const, 'none' as const, 'stale' as const), deleted: fc.boolean(), n: fc.nat(100) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('replicate' as const), id: fc.constantFrom(...IDS), onWinner: fc.boolean(), hashes: fc.array(fc.nat(255), { minLength: 1, maxLength: 3 }), deleted: fc.boolean(), n: fc.nat(100) }) },
);

const hex = (h: number, salt: string) => (h.toString(16).padStart(2, '0') + salt).repeat(16).slice(0, 32);

t.test('random local and replicated edits follow the update rules and keep the group consistent', (t) => {
  fc.assert(
    fc.property(fc.array(command, { maxLength: 40 }), (commands) => {
      const g = newGroup();
      /** The model: per document, its winner as the rules say, once written. */
      const model = new Map<string, { winner: string; deleted: boolean }>();
      let seqPuts = 0;
      commands.forEach((c, step) => {
        const known = model.get(c.id);
        let edit: Edit;
        let expect: 'ok' | 'conflict' | 'not_found';
        if (c.kind === 'put') {
          const rev = c.rev === 'current' ? known?.winner : c.rev === 'stale' ? `1-${'e'.repeat(32)}` : undefined;
          edit = { kind: 'update', docId: c.id, body: { n: c.n }, attachments: undefined, deleted: c.deleted, rev };
          if (known === undefined) expect = c.deleted ? 'not_found' : rev !== undefined ? 'conflict' : 'ok';
          else if (rev === undefined) expect = !known.deleted ? 'conflict' : c.deleted ? 'not_found' : 'ok';
          else if (rev !== known.winner) expect = 'conflict';
          else expect = known.deleted && c.deleted ? 'not_found' : 'ok';
        } else {
          // A foreign branch: on the current winner, or a new root (a conflicting history).
          const parent = c.onWinner && known !== undefined ? known.winner : undefined;
          const start = parent === undefined ? 0 : revGen(parent);
          const revs = c.hashes.map((h, i) => `${start + c.hashes.length - i}-${hex(h, `s${step}`)}`);
          edit = { kind: 'replicate', docId: c.id, body: { n: c.n }, attachments: undefined, path: { revs: parent === undefined ? revs : [...revs, parent], deleted: c.deleted } };
          expect = 'ok';
        }
        const opsBefore = g.ops.length;
        let result: EditResult;
        try {
          result = applyEdit(g, edit, []);
        } catch (err) {
          result = { ok: false, id: c.id, error: (err as { code: string }).code, message: (err as Error).message };
        }
        if (expect === 'ok') {
          if (!result.ok) throw new Error(`step ${step}: ${JSON.stringify(c)} refused: ${result.message}`);
        } else if (result.ok || result.error !== expect) {
          throw new Error(`step ${step}: ${JSON.stringify(c)} answered ${JSON.stringify(result)}, expected ${expect}`);
        }
        if (!result.ok) {
          if (g.ops.length !== opsBefore) throw new Error(`step ${step}: a refused edit wrote ${g.ops.length - opsBefore} ops`);
          return;
        }
        const rec = g.records.get(c.id)!;
        if (c.kind === 'put') {
          const gen = known === undefined ? 1 : revGen(known.winner) + 1;
          // The new revision is a leaf as asked; it wins unless another branch (a replicated
          // conflict) outranks it, and a live edit leaves the document live.
          const leaf = rec.tree.find((n) => n.rev === result.rev);
          const isLeaf = !rec.tree.some((n) => n.parent === result.rev);
          if (revGen(result.rev) !== gen || leaf === undefined || !isLeaf || leaf.deleted !== c.deleted || (!c.deleted && rec.deleted)) {
            throw new Error(`step ${step}: local edit gave ${result.rev} (winner ${rec.winner}, deleted ${rec.deleted})`);
          }
        } else if (!rec.tree.some((n) => n.rev === result.rev)) {
          throw new Error(`step ${step}: replicated ${result.rev} is not in the tree`);
        }
        model.set(c.id, { winner: rec.winner, deleted: rec.deleted });
        // The batch: this document's record as the group holds it, one changes entry for its winner.
        const docPut = g.ops.findLast((o) => o.type === 'put' && o.cf === 'docs' && Buffer.compare(o.key, keys.doc(DB, c.id)) === 0);
        if (docPut === undefined || docPut.type !== 'put' || decodeDocRecord(docPut.value).winner !== rec.winner) throw new Error(`step ${step}: the batch's record of ${c.id} is not the group's`);
        const seqPut = g.ops.slice(opsBefore).find((o) => o.type === 'put' && o.cf === 'seq');
        if (seqPut === undefined || seqPut.type !== 'put' || decodeSeq(seqPut.value)[1] !== rec.winner) throw new Error(`step ${step}: no changes entry for ${rec.winner}`);
        seqPuts++;
        // A later edit reads the body this one wrote.
        if (g.readBody(c.id, result.rev) === undefined && rec.tree.some((n) => n.rev === result.rev && !rec.tree.some((m) => m.parent === n.rev))) throw new Error(`step ${step}: the new leaf's body is not readable`);
      });
      const live = [...model.values()].filter((m) => !m.deleted).length;
      if (g.docCount !== live || g.delCount !== model.size - live) throw new Error(`counts ${g.docCount}/${g.delCount}, model ${live}/${model.size - live}`);
      if (g.changed.size !== model.size) throw new Error(`changed ${g.changed.size} documents, model ${model.size}`);
      const seqDels = g.ops.filter((o) => o.type === 'del' && o.cf === 'seq').length;
      if (seqPuts - seqDels !== model.size) throw new Error(`${seqPuts} changes entries written, ${seqDels} removed, for ${model.size} documents: one each expected`);
    }),
    fcParams(300),
  );
  t.end();
});

t.test('a replicated revision the group already holds is not written again', (t) => {
  const g = newGroup();
  const edit: Edit = { kind: 'replicate', docId: 'a', body: { x: 1 }, attachments: undefined, path: { revs: [`1-${'a'.repeat(32)}`], deleted: false } };
  t.match(applyEdit(g, edit, []), { ok: true, rev: `1-${'a'.repeat(32)}` });
  const ops = g.ops.length;
  t.match(applyEdit(g, edit, []), { ok: true });
  t.equal(g.ops.length, ops, 'no op for a revision already in the tree');
  t.same(g.readBody('a', `1-${'a'.repeat(32)}`), { body: { x: 1 } });
  t.end();
});
