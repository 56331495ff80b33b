// The log entries of a replicated VDB shard. Everything a replica could decide differently is
// decided by the proposer and carried here: document ids (generated before proposing), the
// expected revisions, the leader's clock (`at`, the floor of the sequences the changes get),
// attachment content by digest with its bytes, and a request id that makes a retried
// proposal apply once. Applying an entry is then a function of the shard's state alone:
// revisions are content hashes, and conflicts follow from the tree.
import { decodeCbor, encodeCbor } from '../../core/codec.js';
import type { Hlc } from '../../core/hlc.js';
import { HASH_FUNCTIONS, type HashFunction } from '../../core/shard-hash.js';
import type { AttachmentInput, Blob } from '../doc-input.js';
import type { DocEdit, EditResult } from '../engine.js';
import { isPlainObject } from '../../core/values.js';
import { isStoredLocal } from '../replication/local-docs.js';

/** Hash ranges [start, end] (inclusive) of document ids, by a VDB's hash function. */
export interface OwnedRanges {
  readonly hash: HashFunction;
  readonly ranges: readonly (readonly [number, number])[];
  /**
   * The order of a split's or merge's `own` entries (protocol 7): one numbered lower than what
   * the shard holds changes nothing, so a fence that commits after its switch was rolled back
   * (and the range given back, numbered higher) cannot take the range again. The fence and the
   * target's widening of a switch attempt A are 2A, the give-back 2A + 1. Absent: always applies.
   */
  readonly n?: number;
}

export type DocShardCommand =
  /**
   * `copy`: a split's or merge's copy into this shard (foreign revisions of documents it may
   * not own yet), taken whatever the shard owns.
   */
  | { readonly kind: 'edits'; readonly rid: string; readonly at: Hlc; readonly edits: readonly DocEdit[]; readonly copy?: boolean }
  /** Drop kept non-leaf bodies: at the same log index on every replica. */
  | { readonly kind: 'compact'; readonly rid: string }
  /**
   * The ids this shard takes writes for and answers reads of from now on (none set: every id).
   * A split's or merge's fence is one (the source gives up the moving range), and so is the
   * target's widening before the switch.
   */
  | { readonly kind: 'own'; readonly rid: string; readonly owned: OwnedRanges }
  /** A split's cleanup: remove, as if never written, every document whose id hashes into `range`. */
  | { readonly kind: 'purge'; readonly rid: string; readonly hash: HashFunction; readonly range: readonly [number, number] }
  /**
   * Write (`body`) or delete (`body` null) `_local/<id>` (a replication checkpoint), checked
   * against `rev` at apply (cluster protocol 3: an older replica cannot decode it).
   */
  | { readonly kind: 'local'; readonly rid: string; readonly id: string; readonly body: Record<string, unknown> | null; readonly rev?: string }
  /**
   * A split's or merge's carry of `_local` documents (cluster protocol 4): `put` stored values
   * as they are (revisions kept), remove `drop`; taken whatever the shard owns, as a copy is.
   */
  | {
      readonly kind: 'locals';
      readonly rid: string;
      readonly put: readonly (readonly [string, Uint8Array])[];
      readonly drop: readonly string[];
      /**
       * The source's recent `_local` write outcomes by request id (protocol 7), remembered by
       * the target: a `_local` write keeps its request id across attempts, so one that applied
       * on the source, lost its answer and is sent again after the switch answers what it did
       * (a compare-and-set would otherwise be refused as a conflict with its own write).
       */
      readonly reqs?: readonly (readonly [string, LocalOutcome])[];
    };

/** A `_local` write's outcome. */
export type LocalOutcome = { readonly kind: 'local'; readonly rev: string } | { readonly kind: 'local'; readonly refused: { readonly code: string; readonly message: string } };

export type DocShardOutcome =
  | { readonly kind: 'edits'; readonly results: readonly EditResult[] }
  | { readonly kind: 'compact' }
  /** `stale`: numbered lower than what the shard holds, it changed nothing. */
  | { readonly kind: 'own'; readonly stale?: true }
  | { readonly kind: 'purge'; readonly purged: number }
  /** A `_local` write: its new revision, or why it was refused (the same on every replica). */
  | LocalOutcome
  | { readonly kind: 'locals' }
  /** Edits refused whole, with no effect: an id is outside what the shard owns (a router with an older map). */
  | { readonly kind: 'fenced' };

export function encodeDocShardCommand(c: DocShardCommand): Uint8Array {
  return encodeCbor(c);
}

const isString = (v: unknown): v is string => typeof v === 'string';
const bad = (what: string): never => {
  throw new Error(`VDB shard command: ${what}`);
};

function checkBlob(v: unknown): Blob {
  if (!isPlainObject(v) || !isString(v.digest) || !isString(v.content_type) || typeof v.length !== 'number' || !(v.data instanceof Uint8Array)) return bad('malformed attachment');
  const data = Buffer.isBuffer(v.data) ? v.data : Buffer.from(v.data.buffer, v.data.byteOffset, v.data.byteLength);
  if (data.length !== v.length) return bad('attachment length differs from its bytes');
  return { digest: v.digest, content_type: v.content_type, length: v.length, data };
}

function checkAttachments(v: unknown): Record<string, AttachmentInput> | undefined {
  if (v === undefined || v === null) return undefined;
  if (!isPlainObject(v)) return bad('malformed attachments');
  const out: Record<string, AttachmentInput> = {};
  for (const [name, a] of Object.entries(v)) {
    if (!isPlainObject(a)) return bad('malformed attachment');
    if (a.kind === 'data') out[name] = { kind: 'data', blob: checkBlob(a.blob) };
    else if (a.kind === 'stub') {
      out[name] = {
        kind: 'stub',
        ...(isString(a.digest) ? { digest: a.digest } : {}),
        ...(isString(a.content_type) ? { content_type: a.content_type } : {}),
        ...(typeof a.length === 'number' ? { length: a.length } : {}),
      };
    } else return bad('unknown attachment kind');
  }
  return out;
}

function checkEdit(v: unknown): DocEdit {
  if (!isPlainObject(v) || !isString(v.docId)) return bad('edit without a document id');
  const rev = v.rev === undefined || v.rev === null ? undefined : isString(v.rev) ? v.rev : bad('malformed rev');
  switch (v.kind) {
    case 'update':
      if (!isPlainObject(v.body) || typeof v.deleted !== 'boolean') return bad('malformed update');
      return { kind: 'update', docId: v.docId, body: v.body as never, attachments: checkAttachments(v.attachments), deleted: v.deleted, rev };
    case 'attach':
      if (!isString(v.name)) return bad('malformed attachment edit');
      return { kind: 'attach', docId: v.docId, rev, name: v.name, blob: v.blob === undefined || v.blob === null ? undefined : checkBlob(v.blob) };
    case 'replicate': {
      const path = v.path as { revs?: unknown; deleted?: unknown } | undefined;
      if (!isPlainObject(v.body) || !isPlainObject(path) || !Array.isArray(path.revs) || !path.revs.every(isString) || typeof path.deleted !== 'boolean') return bad('malformed replicated revision');
      return { kind: 'replicate', docId: v.docId, body: v.body as never, attachments: checkAttachments(v.attachments), path: { revs: path.revs as string[], deleted: path.deleted } };
    }
    default:
      return bad(`unknown edit kind ${JSON.stringify(v.kind)}`);
  }
}

export function checkOwned(v: unknown): OwnedRanges {
  if (!isPlainObject(v) || !(HASH_FUNCTIONS as readonly unknown[]).includes(v.hash) || !Array.isArray(v.ranges)) return bad('malformed owned ranges');
  const ranges = v.ranges.map((r: unknown) => {
    if (!Array.isArray(r) || r.length !== 2 || !r.every((x) => Number.isSafeInteger(x) && x >= 0 && x <= 0xffff_ffff) || r[0] > r[1]) return bad('malformed hash range');
    return [r[0] as number, r[1] as number] as const;
  });
  if (v.n !== undefined && !(Number.isSafeInteger(v.n) && (v.n as number) >= 0)) return bad('malformed owned ranges order');
  return { hash: v.hash as HashFunction, ranges, ...(v.n === undefined ? {} : { n: v.n as number }) };
}

function checkLocalRequests(v: unknown): (readonly [string, LocalOutcome])[] {
  if (!Array.isArray(v)) return bad('malformed local request ids');
  return v.map((e: unknown) => {
    if (!Array.isArray(e) || e.length !== 2 || !isString(e[0]) || !isLocalOutcome(e[1])) return bad('malformed local request id');
    return [e[0], e[1]] as const;
  });
}

export function isLocalOutcome(v: unknown): v is LocalOutcome {
  if (!isPlainObject(v) || v.kind !== 'local') return false;
  if (isString(v.rev)) return true;
  const r = v.refused;
  return isPlainObject(r) && isString(r.code) && isString(r.message);
}

/** Decode and check an entry (it came from disk or another node). */
export function decodeDocShardCommand(data: Uint8Array): DocShardCommand {
  const v = decodeCbor(data) as unknown;
  if (!isPlainObject(v) || !isString(v.rid)) return bad('not a command');
  if (v.kind === 'compact') return { kind: 'compact', rid: v.rid };
  if (v.kind === 'own') return { kind: 'own', rid: v.rid, owned: checkOwned(v.owned) };
  if (v.kind === 'purge') {
    const owned = checkOwned({ hash: v.hash, ranges: [v.range] });
    return { kind: 'purge', rid: v.rid, hash: owned.hash, range: owned.ranges[0]! };
  }
  if (v.kind === 'local') {
    if (!isString(v.id) || !(v.body === null || isPlainObject(v.body)) || !(v.rev === undefined || v.rev === null || isString(v.rev))) return bad('malformed local document write');
    return { kind: 'local', rid: v.rid, id: v.id, body: v.body as Record<string, unknown> | null, ...(isString(v.rev) ? { rev: v.rev } : {}) };
  }
  if (v.kind === 'locals') {
    const put = Array.isArray(v.put) ? v.put : bad('malformed local documents');
    const drop = Array.isArray(v.drop) ? v.drop : bad('malformed local documents');
    return {
      kind: 'locals',
      rid: v.rid,
      put: put.map((e: unknown) => (Array.isArray(e) && e.length === 2 && isString(e[0]) && e[1] instanceof Uint8Array && isStoredLocal(e[1]) ? ([e[0], e[1]] as const) : bad('malformed local document'))),
      drop: drop.map((id: unknown) => (isString(id) ? id : bad('malformed local document id'))),
      ...(v.reqs === undefined ? {} : { reqs: checkLocalRequests(v.reqs) }),
    };
  }
  if (v.kind !== 'edits') return bad(`unknown kind ${JSON.stringify(v.kind)}`);
  const at = v.at as { wallMs?: unknown; logical?: unknown } | undefined;
  if (!isPlainObject(at) || !Number.isSafeInteger(at.wallMs) || !Number.isSafeInteger(at.logical)) return bad('malformed clock');
  if (!Array.isArray(v.edits)) return bad('edits are not a list');
  return { kind: 'edits', rid: v.rid, at: { wallMs: at.wallMs as number, logical: at.logical as number }, edits: v.edits.map(checkEdit), ...(v.copy === true ? { copy: true } : {}) };
}
