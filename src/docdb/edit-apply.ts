// Applying a write group's edits in memory: each edit is checked against its document's
// revision tree and turned into the batch operations of the change (the document record, the
// new leaf's body, attachment chunks, the changes entry, the indexes' postings), on an overlay,
// so a later edit of the same group sees an earlier one. Pure: the group brings what the engine
// read before (the records, a reader of stored bodies) and the sequence of the next change;
// nothing here awaits, does I/O or reads a clock. The engine (`engine.ts`) builds the group,
// calls `applyEdit` for each edit and writes `g.ops` as one batch.
import { FirkinError } from '../core/errors.js';
import type { Hlc } from '../core/hlc.js';
import { dictOf, ownValue } from '../core/values.js';
import type { BatchOp } from '../storage/db.js';
import type { AttachmentInput, Blob } from './doc-input.js';
import { ATT_CHUNK_BYTES, type AttachmentMeta, type Attachments, type BodyRecord, type DbRecord, type DocRecord, type LeafInfo, encodeBody, encodeSeq, encodeDocRecord, keys } from './records.js';
import { LIMITS } from './names.js';
import { type Json, nextRev } from './rev-hash.js';
import { type RevPath, type RevTree, findRev, isLeaf, leaves, mergePath, revGen, stem, winningRev } from './revtree.js';

export type Body = Record<string, Json>;

/** What an indexer sees when a document's winning revision changes (undefined = none or deleted). */
export interface WinnerChange {
  readonly db: string;
  readonly docId: string;
  readonly before: Readonly<Body> | undefined;
  readonly after: Readonly<Body> | undefined;
  readonly seq: Hlc;
}

/**
 * Extension point for the path index (query engine): called inside the batch build of every
 * write whose winner changes; it appends its postings to `ops`, which commit atomically with
 * the document. Keys it writes must start with the database name (a drop clears `[db]`).
 */
export type WinnerIndexer = (change: WinnerChange, ops: BatchOp[]) => void;

export type EditResult =
  | { readonly ok: true; readonly id: string; readonly rev: string }
  | { readonly ok: false; readonly id: string | null; readonly error: string; readonly message: string };

/** One document edit as the write queue applies it (and as a replicated shard's log carries it). */
export type Edit =
  | {
      readonly kind: 'update';
      readonly docId: string;
      readonly body: Body;
      readonly attachments: Readonly<Record<string, AttachmentInput>> | undefined;
      readonly deleted: boolean;
      readonly rev: string | undefined;
    }
  | { readonly kind: 'attach'; readonly docId: string; readonly rev: string | undefined; readonly name: string; readonly blob: Blob | undefined }
  | {
      readonly kind: 'replicate';
      readonly docId: string;
      readonly body: Body;
      readonly attachments: Readonly<Record<string, AttachmentInput>> | undefined;
      readonly path: RevPath;
    };

/** The group's state the edits read and extend: an overlay on what is stored (and in flight). */
export interface WriteGroup {
  readonly db: string;
  /** The database record the group starts from (the last in-flight group's, or the durable one). */
  readonly base: DbRecord;
  /** Documents this group wrote: their records enter the cache once the batch is durable. */
  readonly changed: Set<string>;
  readonly records: Map<string, DocRecord | undefined>;
  /** Bodies this group wrote (null: removed), by `bodyKey`. */
  readonly bodies: Map<string, BodyRecord | null>;
  readonly ops: BatchOp[];
  docCount: number;
  delCount: number;
  dataBytes: number;
  updateSeq: Hlc | undefined;
  /** Document writes in this group that left a body for compaction to drop. */
  compactable: number;
  /** The sequence of the next document change. */
  nextSeq(): Hlc;
  /** A revision's stored body as this group sees it: its own overlay, the groups in flight, then the store. */
  readBody(docId: string, rev: string): BodyRecord | undefined;
}

export const notFoundDoc = (id: string) => new FirkinError('not_found', `document ${JSON.stringify(id)} not found`);

/** A group's in-memory key of one document revision's body. */
export function bodyKey(docId: string, rev: string): string {
  return `${docId}\u0000${rev}`;
}

export function chunkCount(length: number): number {
  return Math.max(1, Math.ceil(length / ATT_CHUNK_BYTES));
}

/** Every attachment digest (with its length) the given stored bodies refer to. */
export function digestsOfAll(...infos: (Readonly<Record<string, LeafInfo>> | undefined)[]): Record<string, number> {
  // Loops, not Object.values/assign: this runs for every written document. Keyed by digests,
  // so a dictionary (`dictOf`): a plain object makes a new map for each new key.
  const out = dictOf<number>();
  for (const group of infos) {
    if (group === undefined) continue;
    for (const rev in group) {
      const a = group[rev]!.a;
      if (a !== undefined) for (const digest in a) out[digest] = a[digest]!;
    }
  }
  return out;
}

/** Bytes of the bodies of `{...first, ...second}` and of the attachments `digests`, without building that object. */
export function storedBytes(first: Readonly<Record<string, LeafInfo>> | undefined, second: Readonly<Record<string, LeafInfo>> | undefined, digests: Readonly<Record<string, number>>): number {
  let n = 0;
  if (first !== undefined) for (const rev in first) if (second === undefined || !Object.hasOwn(second, rev)) n += first[rev]!.b;
  if (second !== undefined) for (const rev in second) n += second[rev]!.b;
  for (const digest in digests) n += digests[digest]!;
  return n;
}

export function applyEdit(g: WriteGroup, edit: Edit, indexers: readonly WinnerIndexer[]): EditResult {
  switch (edit.kind) {
    case 'update':
    case 'attach':
      return applyLocal(g, edit, indexers);
    case 'replicate':
      return applyReplicated(g, edit, indexers);
  }
}

/** A local edit (new_edits: true): a child of the given leaf, or a first revision. */
function applyLocal(g: WriteGroup, edit: Extract<Edit, { kind: 'update' | 'attach' }>, indexers: readonly WinnerIndexer[]): EditResult {
  const { docId } = edit;
  const rec = g.records.get(docId);
  const deleting = edit.kind === 'update' && edit.deleted;
  let parent: string | undefined;
  if (rec === undefined) {
    if (deleting) throw notFoundDoc(docId);
    if (edit.rev !== undefined) throw new FirkinError('conflict', `document update conflict: ${JSON.stringify(docId)} does not exist, so no revision can be current`);
  } else if (edit.rev === undefined) {
    // CouchDB: a deleted document is re-created without a rev, on top of its tombstone.
    if (!rec.deleted) throw new FirkinError('conflict', `document update conflict: ${JSON.stringify(docId)} exists; send its current revision (If-Match, ?rev= or _rev)`);
    if (deleting) throw notFoundDoc(docId);
    parent = rec.winner;
  } else {
    const node = findRev(rec.tree, edit.rev);
    if (node === undefined || !isLeaf(rec.tree, edit.rev) || (node.deleted && edit.rev !== rec.winner)) {
      throw new FirkinError('conflict', `document update conflict: ${edit.rev} is not a current revision of ${JSON.stringify(docId)}`);
    }
    if (node.deleted && deleting) throw notFoundDoc(docId);
    parent = edit.rev;
  }
  const parentBody = parent === undefined ? undefined : g.readBody(docId, parent);
  const parentAtts: Attachments = parentBody?.attachments ?? {};
  const blobs: Blob[] = [];
  let body: Body;
  let atts: Record<string, Omit<AttachmentMeta, 'revpos'> & { revpos?: number }> = {};
  if (edit.kind === 'attach') {
    const parentDeleted = parent !== undefined && findRev(rec!.tree, parent)!.deleted;
    body = parentDeleted ? {} : (parentBody?.body ?? {});
    atts = parentDeleted ? {} : { ...parentAtts };
    if (edit.blob === undefined) {
      if (ownValue(atts, edit.name) === undefined) throw new FirkinError('not_found', `attachment ${JSON.stringify(edit.name)} of ${JSON.stringify(docId)} not found`);
      delete atts[edit.name];
    } else {
      atts[edit.name] = { content_type: edit.blob.content_type, digest: edit.blob.digest, length: edit.blob.length };
      blobs.push(edit.blob);
    }
  } else {
    body = edit.body;
    if (!deleting) {
      for (const [name, input] of Object.entries(edit.attachments ?? {})) {
        if (input.kind === 'data') {
          atts[name] = { content_type: input.blob.content_type, digest: input.blob.digest, length: input.blob.length };
          blobs.push(input.blob);
        } else {
          const kept = ownValue(parentAtts, name);
          if (kept === undefined || (input.digest !== undefined && input.digest !== kept.digest)) {
            throw new FirkinError('precondition_failed', `attachment stub ${JSON.stringify(name)} does not match an attachment of the parent revision`);
          }
          atts[name] = kept;
        }
      }
    }
  }
  const rev = nextRev(body, atts, parent, deleting);
  const gen = revGen(rev);
  const final: Record<string, AttachmentMeta> = {};
  for (const [name, a] of Object.entries(atts)) {
    const before = ownValue(parentAtts, name);
    final[name] = { content_type: a.content_type, digest: a.digest, length: a.length, revpos: before !== undefined && before.digest === a.digest ? before.revpos : gen };
  }
  const path: RevPath = { revs: parent === undefined ? [rev] : [rev, parent], deleted: deleting };
  const tree = stem(mergePath(rec?.tree ?? [], path).tree, g.base.revsLimit);
  const bodyRecord: BodyRecord = Object.keys(final).length > 0 ? { body, attachments: final } : { body };
  commitDoc(g, docId, rec, tree, { rev, body: bodyRecord, blobs }, indexers);
  return { ok: true, id: docId, rev };
}

/** A replicated write (new_edits: false): merge a foreign revision with its history. */
function applyReplicated(g: WriteGroup, edit: Extract<Edit, { kind: 'replicate' }>, indexers: readonly WinnerIndexer[]): EditResult {
  const { docId, path } = edit;
  const rev = path.revs[0]!;
  const rec = g.records.get(docId);
  if (rec !== undefined && findRev(rec.tree, rev) !== undefined) return { ok: true, id: docId, rev };
  const known: Record<string, number> = {};
  for (const info of Object.values(rec?.leaves ?? {})) Object.assign(known, info.a ?? {});
  const blobs: Blob[] = [];
  const final: Record<string, AttachmentMeta> = {};
  const gen = revGen(rev);
  if (!path.deleted) {
    for (const [name, input] of Object.entries(edit.attachments ?? {})) {
      if (input.kind === 'data') {
        final[name] = { content_type: input.blob.content_type, digest: input.blob.digest, length: input.blob.length, revpos: gen };
        blobs.push(input.blob);
      } else {
        const length = input.digest === undefined ? undefined : ownValue(known, input.digest);
        if (input.digest === undefined || length === undefined) {
          throw new FirkinError('precondition_failed', `attachment stub ${JSON.stringify(name)} refers to content this database does not hold; send it inline`);
        }
        final[name] = { content_type: input.content_type ?? 'application/octet-stream', digest: input.digest, length, revpos: gen };
      }
    }
  }
  const tree = stem(mergePath(rec?.tree ?? [], path).tree, g.base.revsLimit);
  const bodyRecord: BodyRecord = Object.keys(final).length > 0 ? { body: edit.body, attachments: final } : { body: edit.body };
  commitDoc(g, docId, rec, tree, { rev, body: bodyRecord, blobs }, indexers);
  return { ok: true, id: docId, rev };
}

/** Append every op of one document change to the group: record, bodies, blobs, seq, counters, indexes. */
function commitDoc(g: WriteGroup, docId: string, before: DocRecord | undefined, tree: RevTree, leaf: { rev: string; body: BodyRecord; blobs: readonly Blob[] }, indexers: readonly WinnerIndexer[]): void {
  const { db, ops } = g;
  const winner = winningRev(tree)!;
  const indexing = indexers.length > 0 && before?.winner !== winner.rev;
  const beforeBody = indexing && before !== undefined && !before.deleted ? g.readBody(docId, before.winner)?.body : undefined;

  const seq = g.nextSeq();
  const encodedBody = encodeBody(leaf.body);
  if (encodedBody.length > LIMITS.docBytesMax) throw new FirkinError('too_large', `document ${JSON.stringify(docId)} is larger than ${LIMITS.docBytesMax} bytes`);
  const newLeaves = new Set(leaves(tree).map((n) => n.rev));
  // Keyed by revisions, each new to V8: dictionaries from the start (`dictOf`), where a plain
  // object made a new map for every key (0.7-2 µs a document; docs/benchmarks.md).
  const leafInfo = dictOf<LeafInfo>();
  const attachments = leaf.body.attachments;
  for (const rev of newLeaves) {
    if (rev !== leaf.rev) {
      leafInfo[rev] = before?.leaves[rev] ?? { b: 0 };
    } else if (attachments === undefined) {
      leafInfo[rev] = { b: encodedBody.length };
    } else {
      const a = Object.fromEntries(Object.values(attachments).map((m) => [m.digest, m.length]));
      leafInfo[rev] = Object.keys(a).length > 0 ? { b: encodedBody.length, a } : { b: encodedBody.length };
    }
  }
  // A leaf that got a child keeps its body until compaction (CouchDB); a body whose
  // revision was stemmed out of the tree (revs_limit) goes now, in this batch.
  const keptInfo = dictOf<LeafInfo>();
  if (before !== undefined) {
    const inTree = new Set(tree.map((n) => n.rev));
    for (const infos of [before.kept, before.leaves]) {
      if (infos === undefined) continue;
      for (const rev in infos) {
        if (newLeaves.has(rev)) continue;
        if (inTree.has(rev)) {
          keptInfo[rev] = infos[rev]!;
          continue;
        }
        ops.push({ type: 'del', cf: 'revs', key: keys.body(db, docId, rev) });
        g.bodies.set(bodyKey(docId, rev), null);
      }
    }
    if (Object.keys(keptInfo).some((rev) => before.kept?.[rev] === undefined)) g.compactable++;
  }
  if (newLeaves.has(leaf.rev)) {
    ops.push({ type: 'put', cf: 'revs', key: keys.body(db, docId, leaf.rev), value: encodedBody });
    g.bodies.set(bodyKey(docId, leaf.rev), leaf.body);
  }
  // Attachment content is deduplicated per document by digest and dropped when no stored body refers to it.
  const beforeDigests = before === undefined ? {} : digestsOfAll(before.leaves, before.kept);
  const afterDigests = digestsOfAll(leafInfo, keptInfo);
  const written = new Set<string>();
  for (const blob of leaf.blobs) {
    if (beforeDigests[blob.digest] !== undefined || afterDigests[blob.digest] === undefined || written.has(blob.digest)) continue;
    written.add(blob.digest);
    for (let i = 0; i < chunkCount(blob.length); i++) {
      ops.push({ type: 'put', cf: 'att', key: keys.att(db, docId, blob.digest, i), value: blob.data.subarray(i * ATT_CHUNK_BYTES, (i + 1) * ATT_CHUNK_BYTES) });
    }
  }
  for (const [digest, length] of Object.entries(beforeDigests)) {
    if (afterDigests[digest] !== undefined) continue;
    for (let i = 0; i < chunkCount(length); i++) ops.push({ type: 'del', cf: 'att', key: keys.att(db, docId, digest, i) });
  }
  g.dataBytes += storedBytes(leafInfo, keptInfo, afterDigests) - storedBytes(before?.leaves, before?.kept, beforeDigests);

  // One changes entry per document: the old one goes in the same batch.
  if (before !== undefined) ops.push({ type: 'del', cf: 'seq', key: keys.seq(db, before.seq) });
  ops.push({ type: 'put', cf: 'seq', key: keys.seq(db, seq), value: encodeSeq([docId, winner.rev, winner.deleted]) });
  const record: DocRecord = { tree, winner: winner.rev, deleted: winner.deleted, seq, leaves: leafInfo, ...(Object.keys(keptInfo).length > 0 ? { kept: keptInfo } : {}) };
  ops.push({ type: 'put', cf: 'docs', key: keys.doc(db, docId), value: encodeDocRecord(record) });
  g.records.set(docId, record);
  g.changed.add(docId);

  if (before === undefined) g.docCount += winner.deleted ? 0 : 1;
  else if (before.deleted !== winner.deleted) g.docCount += winner.deleted ? -1 : 1;
  if (before === undefined) g.delCount += winner.deleted ? 1 : 0;
  else if (before.deleted !== winner.deleted) g.delCount += winner.deleted ? 1 : -1;
  g.updateSeq = seq;

  if (indexing) {
    const afterBody = winner.deleted ? undefined : winner.rev === leaf.rev ? leaf.body.body : g.readBody(docId, winner.rev)?.body;
    const change: WinnerChange = { db, docId, before: beforeBody, after: afterBody, seq };
    for (const indexer of indexers) indexer(change, ops);
  }
}

/** Create or update one document (new_edits: true). `rev` is the already-reconciled expected rev. */
