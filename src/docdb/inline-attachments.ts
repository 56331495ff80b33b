// Attachments inline in a document (`attachments=true` on GET, `_all_docs`, `_changes` and
// `_bulk_get`; documents moved between databases): base64 content in place of stubs, as
// CouchDB sends them.
import type { DocEngine } from './engine.js';

interface Stub {
  content_type: string;
  digest: string;
  length: number;
  revpos: number;
}

/** An attachment's content by name, at the revision being read (a database's or a VDB's). */
export type AttachmentReader = (name: string) => Promise<{ chunks: () => AsyncIterable<Buffer> }>;

/**
 * A read revision's attachments as the reader wants them: content inline, or a stub for what
 * it already holds. CouchDB's `atts_since`: an attachment unchanged since a revision the
 * reader holds (its revpos is at most that revision's generation, and that revision is an
 * ancestor, per the document's `_revisions`) stays a stub.
 */
export async function inlineWith(read: AttachmentReader, doc: Record<string, unknown>, attsSince?: readonly string[]): Promise<Record<string, unknown>> {
  const stubs = doc._attachments as Record<string, Stub>;
  let heldGen = 0;
  if (attsSince !== undefined && attsSince.length > 0) {
    const history = doc._revisions as { start: number; ids: string[] };
    const ancestors = new Set(history.ids.map((hash, i) => `${history.start - i}-${hash}`));
    heldGen = Math.max(0, ...attsSince.filter((r) => ancestors.has(r)).map((r) => Number(r.split('-', 1)[0])));
  }
  const inline: Record<string, unknown> = {};
  for (const [name, meta] of Object.entries(stubs)) {
    if (meta.revpos <= heldGen) {
      inline[name] = { content_type: meta.content_type, digest: meta.digest, length: meta.length, revpos: meta.revpos, stub: true };
      continue;
    }
    const att = await read(name);
    const chunks: Buffer[] = [];
    for await (const chunk of att.chunks()) chunks.push(chunk);
    inline[name] = { content_type: meta.content_type, digest: meta.digest, length: meta.length, revpos: meta.revpos, data: Buffer.concat(chunks).toString('base64') };
  }
  return inline;
}

/** `inlineWith` over a database's revision. */
export function inlineAttachments(docs: DocEngine, db: string, docId: string, rev: string, doc: Record<string, unknown>, attsSince?: readonly string[]): Promise<Record<string, unknown>> {
  return inlineWith((name) => docs.getAttachment(db, docId, name, rev), doc, attsSince);
}

/** The document with its attachments inline (itself when it has none): how documents move between databases. */
export async function withInlineAttachments(docs: DocEngine, db: string, docId: string, doc: Record<string, unknown>): Promise<Record<string, unknown>> {
  if (doc._attachments === undefined) return doc;
  return { ...doc, _attachments: await inlineAttachments(docs, db, docId, doc._rev as string, doc) };
}
