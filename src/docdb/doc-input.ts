// Turns a client document (JSON/CBOR object) into its parts: id, rev, deleted flag, stored
// body (no `_` fields, no `id`), attachment stubs or inline data, `_revisions`. Pure.
import { createHash } from 'node:crypto';
import { FirkinError } from '../core/errors.js';
import { checkAttachmentName } from './names.js';
import type { Json } from './rev-hash.js';
import { isRev, isRevHash } from './revtree.js';
import { isPlainObject } from '../core/values.js';

export type AttachmentInput =
  | { readonly kind: 'stub'; readonly digest?: string; readonly content_type?: string; readonly length?: number }
  | { readonly kind: 'data'; readonly blob: Blob };

/** Attachment content ready to store. */
export interface Blob {
  readonly digest: string;
  readonly content_type: string;
  readonly length: number;
  readonly data: Buffer;
}

export interface ParsedDoc {
  readonly id: string | undefined;
  readonly rev: string | undefined;
  readonly deleted: boolean;
  readonly body: Record<string, Json>;
  readonly attachments: Readonly<Record<string, AttachmentInput>> | undefined;
  readonly revisions: { readonly start: number; readonly ids: readonly string[] } | undefined;
}

export function digestOf(data: Buffer): string {
  return `sha256-${createHash('sha256').update(data).digest('hex')}`;
}

export function makeBlob(data: Buffer, contentType: string): Blob {
  return { digest: digestOf(data), content_type: contentType, length: data.length, data };
}

const bad = (message: string) => new FirkinError('bad_request', message);

function parseAttachments(raw: unknown): Record<string, AttachmentInput> {
  if (!isPlainObject(raw)) throw bad('_attachments must be an object of name -> {stub: true} or {content_type, data}');
  const out: Record<string, AttachmentInput> = {};
  for (const [name, spec] of Object.entries(raw)) {
    checkAttachmentName(name);
    if (!isPlainObject(spec)) throw bad(`_attachments.${name} must be an object`);
    if (spec.stub === true) {
      const digest = typeof spec.digest === 'string' ? spec.digest : undefined;
      const contentType = typeof spec.content_type === 'string' ? spec.content_type : undefined;
      const length = typeof spec.length === 'number' && Number.isSafeInteger(spec.length) && spec.length >= 0 ? spec.length : undefined;
      out[name] = { kind: 'stub', digest, content_type: contentType, length };
    } else if (typeof spec.data === 'string') {
      if (!/^[A-Za-z0-9+/]*={0,2}$/.test(spec.data)) throw bad(`_attachments.${name}.data must be base64`);
      const contentType = typeof spec.content_type === 'string' && spec.content_type !== '' ? spec.content_type : 'application/octet-stream';
      out[name] = { kind: 'data', blob: makeBlob(Buffer.from(spec.data, 'base64'), contentType) };
    } else {
      throw bad(`_attachments.${name} needs stub: true or base64 data`);
    }
  }
  return out;
}

function parseRevisions(raw: unknown): ParsedDoc['revisions'] {
  if (!isPlainObject(raw)) throw bad('_revisions must be {start, ids}');
  const { start, ids } = raw;
  if (typeof start !== 'number' || !Number.isSafeInteger(start) || start < 1) throw bad('_revisions.start must be a positive integer');
  if (!Array.isArray(ids) || ids.length === 0 || ids.length > start || !ids.every(isRevHash)) {
    throw bad('_revisions.ids must be 1 to start hashes, newest first');
  }
  return { start, ids: ids as string[] };
}

const DEPTH_MAX = 64;

/** Only JSON values may be stored: a CBOR body could carry bigints, bytes or tags. */
function checkJson(value: unknown, depth: number): void {
  if (depth > DEPTH_MAX) throw bad(`document is nested deeper than ${DEPTH_MAX} levels`);
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return;
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw bad('numbers in a document must be finite');
    return;
  }
  if (Array.isArray(value)) {
    for (const item of value) checkJson(item, depth + 1);
    return;
  }
  if (isPlainObject(value)) {
    // A key "__proto__" does not survive the storage codec (cbor-x reads it back as "__proto_").
    // HTTP bodies with one are refused before this; a replicated document from elsewhere is here.
    if (Object.hasOwn(value, '__proto__')) throw bad('a document may not hold a key "__proto__"');
    for (const item of Object.values(value)) checkJson(item, depth + 1);
    return;
  }
  throw bad(`a document may hold only JSON values, found ${typeof value}`);
}

/**
 * The top-level `_` fields a write may carry: CouchDB's (couch_doc's `transfer_fields`). Those a
 * read returns (`_conflicts`, `_revs_info`, ...) may come back with the document and are ignored;
 * any other is a 400, where it used to be dropped without a word.
 */
const SPECIAL_MEMBERS = new Set(['_id', '_rev', '_attachments', '_deleted', '_revisions', '_revs_info', '_conflicts', '_deleted_conflicts', '_local_seq']);

export function parseDoc(raw: unknown): ParsedDoc {
  if (!isPlainObject(raw)) throw bad('a document must be a JSON object');
  let id: string | undefined;
  for (const key of ['_id', 'id'] as const) {
    const value = raw[key];
    if (value === undefined) continue;
    if (typeof value !== 'string') throw bad(`${key} must be a string`);
    if (id !== undefined && id !== value) throw bad(`_id ${JSON.stringify(id)} and id ${JSON.stringify(value)} differ`);
    id = value;
  }
  const rev = raw._rev;
  if (rev !== undefined && !isRev(rev)) throw bad(`_rev ${JSON.stringify(rev)} is not a revision (<generation>-<hash>)`);
  const deleted = raw._deleted;
  if (deleted !== undefined && typeof deleted !== 'boolean') throw bad('_deleted must be a boolean');
  const body: Record<string, Json> = {};
  for (const [key, value] of Object.entries(raw)) {
    if (key.startsWith('_') && !SPECIAL_MEMBERS.has(key)) throw bad(`bad special document member: ${key} (top-level fields starting with _ are reserved, as in CouchDB)`);
    if (key.startsWith('_') || key === 'id') continue;
    checkJson(value, 1);
    body[key] = value as Json;
  }
  return {
    id,
    rev: rev as string | undefined,
    deleted: deleted === true,
    body,
    attachments: raw._attachments === undefined ? undefined : parseAttachments(raw._attachments),
    revisions: raw._revisions === undefined ? undefined : parseRevisions(raw._revisions),
  };
}
