// Storage layout of the document database and the codecs of its records (CBOR, cbor-x).
//
//   docs    [db, docId]                   -> DocRecord (tree, winner, seq, leaf attachments)
//   revs    [db, docId, rev]              -> BodyRecord (body of a leaf, or of a non-leaf kept until compaction)
//   seq     [db, wallMs, logical]         -> SeqRecord [docId, winner rev, deleted]; one per doc
//   att     [db, docId, digest, chunk]    -> attachment bytes, in ATT_CHUNK_BYTES chunks
//   system  ['docdb.db', db]              -> DbRecord (catalogue + counters, same batch as docs)
//   system  ['docdb.drop', db]            -> marker of a drop still clearing its ranges
//
// Pair checks (STYLE 9): the winner stored must be the tree's winner, on write and on read.
import assert from 'node:assert/strict';
import { decodeCbor, encodeCbor } from '../core/codec.js';
import { type Hlc } from '../core/hlc.js';
import { encodeKey, prefixRange } from '../core/keys.js';
import type { ColumnFamily } from '../storage/db.js';
import type { Json } from './rev-hash.js';
import { type RevTree, winningRev } from './revtree.js';


/** Attachments are stored in chunks so reads can stream and no value grows unbounded. */
export const ATT_CHUNK_BYTES = 256 * 1024;

export const DOC_CFS: readonly ColumnFamily[] = ['docs', 'revs', 'seq', 'att', 'paths'];

export interface AttachmentMeta {
  readonly content_type: string;
  readonly digest: string;
  readonly length: number;
  readonly revpos: number;
}

export type Attachments = Readonly<Record<string, AttachmentMeta>>;

export interface DocRecord {
  readonly tree: RevTree;
  readonly winner: string;
  /** The winner is a tombstone. */
  readonly deleted: boolean;
  readonly seq: Hlc;
  /** Per leaf: its body's stored size and the attachment digests (with lengths) it references. */
  readonly leaves: Readonly<Record<string, LeafInfo>>;
  /**
   * Non-leaf revisions whose body is still stored (CouchDB keeps them until compaction), in
   * the same form as `leaves`. Stemming drops them with their node; compaction drops them all.
   */
  readonly kept?: Readonly<Record<string, LeafInfo>>;
}

export interface LeafInfo {
  /** Bytes of the stored body record. */
  readonly b: number;
  /** digest -> length of every attachment of this leaf. */
  readonly a?: Readonly<Record<string, number>>;
}

export interface BodyRecord {
  /** The document without `_` fields. */
  readonly body: Record<string, Json>;
  readonly attachments?: Attachments;
}

export interface DbRecord {
  readonly name: string;
  readonly createdMs: number;
  /** Distinguishes incarnations of a name (CouchDB's instance_start_time, µs). */
  readonly instanceStartTime: string;
  readonly revsLimit: number;
  readonly docCount: number;
  readonly delCount: number;
  readonly updateSeq: Hlc | undefined;
  /** Bytes of stored bodies (leaves and kept non-leaves) and attachments (the disk_size reported). */
  readonly dataBytes: number;
  /** Set on a replica of a cluster shard (its group name): only the shard's log writes it. */
  readonly owner?: string;
}

export const keys = {
  doc: (db: string, docId: string) => encodeKey([db, docId]),
  docs: (db: string) => prefixRange([db]),
  body: (db: string, docId: string, rev: string) => encodeKey([db, docId, rev]),
  seq: (db: string, h: Hlc) => encodeKey([db, h.wallMs, h.logical]),
  seqs: (db: string) => prefixRange([db]),
  att: (db: string, docId: string, digest: string, chunk: number) => encodeKey([db, docId, digest, chunk]),
  attBlob: (db: string, docId: string, digest: string) => prefixRange([db, docId, digest]),
  dbRecord: (db: string) => encodeKey(['docdb.db', db]),
  dbRecords: () => prefixRange(['docdb.db']),
  dropMarker: (db: string) => encodeKey(['docdb.drop', db]),
  dropMarkers: () => prefixRange(['docdb.drop']),
  dbPrefix: (db: string) => prefixRange([db]),
};

type WireNode = [string, string | null, 0 | 1];

export function encodeDocRecord(rec: DocRecord): Buffer {
  const winner = winningRev(rec.tree);
  assert.equal(rec.winner, winner?.rev, 'stored winner must be the tree winner');
  assert.equal(rec.deleted, winner?.deleted, 'stored deleted flag must be the winner flag');
  const t: WireNode[] = rec.tree.map((n) => [n.rev, n.parent ?? null, n.deleted ? 1 : 0]);
  const wire = { t, w: rec.winner, d: rec.deleted, s: [rec.seq.wallMs, rec.seq.logical], l: rec.leaves };
  return encodeCbor(rec.kept === undefined || Object.keys(rec.kept).length === 0 ? wire : { ...wire, k: rec.kept });
}

export function decodeDocRecord(buf: Buffer): DocRecord {
  const raw = decodeCbor(buf) as { t: WireNode[]; w: string; d: boolean; s: [number, number]; l: DocRecord['leaves']; k?: DocRecord['kept'] };
  const tree: RevTree = raw.t.map(([rev, parent, deleted]) => ({ rev, parent: parent ?? undefined, deleted: deleted === 1 }));
  const base: DocRecord = { tree, winner: raw.w, deleted: raw.d, seq: { wallMs: raw.s[0], logical: raw.s[1] }, leaves: raw.l };
  const rec: DocRecord = raw.k === undefined ? base : { ...base, kept: raw.k };
  assert.equal(rec.winner, winningRev(tree)?.rev, 'stored winner must be the tree winner');
  return rec;
}

export function encodeBody(rec: BodyRecord): Buffer {
  return encodeCbor(rec.attachments === undefined ? { b: rec.body } : { b: rec.body, a: rec.attachments });
}

export function decodeBody(buf: Buffer): BodyRecord {
  const raw = decodeCbor(buf) as { b: Record<string, Json>; a?: Attachments };
  return raw.a === undefined ? { body: raw.b } : { body: raw.b, attachments: raw.a };
}

export type SeqRecord = readonly [docId: string, rev: string, deleted: boolean];

export function encodeSeq(rec: SeqRecord): Buffer {
  return encodeCbor(rec);
}

export function decodeSeq(buf: Buffer): SeqRecord {
  const raw = decodeCbor(buf) as [string, string, boolean];
  assert.ok(Array.isArray(raw) && raw.length === 3, 'seq record is [docId, rev, deleted]');
  return raw;
}

export function encodeDbRecord(rec: DbRecord): Buffer {
  return encodeCbor({ ...rec, updateSeq: rec.updateSeq === undefined ? null : [rec.updateSeq.wallMs, rec.updateSeq.logical] });
}

export function decodeDbRecord(buf: Buffer): DbRecord {
  const raw = decodeCbor(buf) as Omit<DbRecord, 'updateSeq'> & { updateSeq: [number, number] | null };
  return { ...raw, updateSeq: raw.updateSeq === null ? undefined : { wallMs: raw.updateSeq[0], logical: raw.updateSeq[1] } };
}

/** The seq key's HLC back from its tuple. */
export function seqFromKey(parts: readonly unknown[]): Hlc {
  return { wallMs: parts[1] as number, logical: parts[2] as number };
}
