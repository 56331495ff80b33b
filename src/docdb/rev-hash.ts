// Deterministic revision ids: the same edit of the same parent gives the same rev on every
// node, so replicas converge without phantom conflicts. Pure.
//
//   rev  = `${generation}-${hex(sha256(canonical(body) 0x00 parentRev 0x00 deleted))}`
//   body = the document without its `_` fields, plus `_attachments` reduced to
//          {name: {content_type, digest, length}} (revpos and stub are bookkeeping, not content)
//   canonical = JSON with object keys sorted (UTF-16 order, as RFC 8785) at every depth,
//          no whitespace; numbers as JSON.stringify writes them
//   parentRev = '' for a first revision; deleted = '1' or '0'
import { createHash } from 'node:crypto';
import { revGen } from './revtree.js';

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') {
    // undefined (a dropped field) never reaches here from a JSON body; treat it like null.
    return value === undefined ? 'null' : JSON.stringify(value);
  }
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  const obj = value as Record<string, unknown>;
  const keys = Object.keys(obj)
    .filter((k) => obj[k] !== undefined)
    .sort();
  return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson(obj[k])}`).join(',')}}`;
}

export interface AttachmentRef {
  readonly content_type: string;
  readonly digest: string;
  readonly length: number;
}

export function revHash(body: Readonly<Record<string, unknown>>, attachments: Readonly<Record<string, AttachmentRef>> | undefined, parentRev: string | undefined, deleted: boolean): string {
  const content: Record<string, unknown> = { ...body };
  if (attachments !== undefined && Object.keys(attachments).length > 0) {
    content._attachments = Object.fromEntries(
      Object.entries(attachments).map(([name, a]) => [name, { content_type: a.content_type, digest: a.digest, length: a.length }]),
    );
  }
  return createHash('sha256')
    .update(canonicalJson(content))
    .update('\u0000')
    .update(parentRev ?? '')
    .update('\u0000')
    .update(deleted ? '1' : '0')
    .digest('hex');
}

export function nextRev(body: Readonly<Record<string, unknown>>, attachments: Readonly<Record<string, AttachmentRef>> | undefined, parentRev: string | undefined, deleted: boolean): string {
  const gen = parentRev === undefined ? 1 : revGen(parentRev) + 1;
  return `${gen}-${revHash(body, attachments, parentRev, deleted)}`;
}
