// Deterministic revision ids: the same edit of the same parent gives the same rev on every
// node, so replicas converge without phantom conflicts. Pure.
//
//   rev  = `${generation}-${hex(sha256(canonical(body) 0x00 parentRev 0x00 deleted))}`
//   body = the document without its `_` fields, plus `_attachments` reduced to
//          {name: {content_type, digest, length}} (revpos and stub are bookkeeping, not content)
//   canonical = JSON with object keys sorted (UTF-16 order, as RFC 8785) at every depth,
//          no whitespace; numbers as JSON.stringify writes them
//   parentRev = '' for a first revision; deleted = '1' or '0'
import { hash } from 'node:crypto';
import { revGen } from './revtree.js';

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') {
    // undefined (a dropped field) never reaches here from a JSON body; treat it like null.
    return value === undefined ? 'null' : JSON.stringify(value);
  }
  // Built by concatenation (no per-level arrays to map and join: this runs for every write).
  if (Array.isArray(value)) {
    let out = '[';
    for (let i = 0; i < value.length; i++) {
      if (i > 0) out += ',';
      if (i in value) out += canonicalJson(value[i]); // a hole joins as nothing, as join did
    }
    return out + ']';
  }
  const obj = value as Record<string, unknown>;
  const keys = Object.keys(obj).sort();
  let out = '{';
  for (const k of keys) {
    const v = obj[k];
    if (v === undefined) continue;
    if (out.length > 1) out += ',';
    out += JSON.stringify(k) + ':' + canonicalJson(v);
  }
  return out + '}';
}

export interface AttachmentRef {
  readonly content_type: string;
  readonly digest: string;
  readonly length: number;
}

export function revHash(body: Readonly<Record<string, unknown>>, attachments: Readonly<Record<string, AttachmentRef>> | undefined, parentRev: string | undefined, deleted: boolean): string {
  let content: Readonly<Record<string, unknown>> = body;
  if (attachments !== undefined && Object.keys(attachments).length > 0) {
    content = {
      ...body,
      _attachments: Object.fromEntries(Object.entries(attachments).map(([name, a]) => [name, { content_type: a.content_type, digest: a.digest, length: a.length }])),
    };
  }
  // One string, one call: the same UTF-8 bytes as hashing the parts in turn.
  return hash('sha256', `${canonicalJson(content)}\u0000${parentRev ?? ''}\u0000${deleted ? '1' : '0'}`, 'hex');
}

export function nextRev(body: Readonly<Record<string, unknown>>, attachments: Readonly<Record<string, AttachmentRef>> | undefined, parentRev: string | undefined, deleted: boolean): string {
  const gen = parentRev === undefined ? 1 : revGen(parentRev) + 1;
  return `${gen}-${revHash(body, attachments, parentRev, deleted)}`;
}
