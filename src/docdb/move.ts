// Moving documents between databases of this node with everything they are: every leaf
// revision, its full history and its attachment content. Used by VDB rebalancing and by
// tiered storage.
import { FirkinError } from '../core/errors.js';
import type { DocEngine } from './engine.js';

export async function inlineAttachments(docs: DocEngine, db: string, id: string, leaf: Record<string, unknown>): Promise<Record<string, unknown>> {
  const stubs = leaf._attachments as Record<string, { content_type: string }> | undefined;
  if (stubs === undefined) return leaf;
  const inline: Record<string, { content_type: string; data: string }> = {};
  for (const [name, meta] of Object.entries(stubs)) {
    const { chunks } = await docs.getAttachment(db, id, name, leaf._rev as string);
    const parts: Buffer[] = [];
    for await (const c of chunks()) parts.push(c);
    inline[name] = { content_type: meta.content_type, data: Buffer.concat(parts).toString('base64') };
  }
  return { ...leaf, _attachments: inline };
}

/** Copy these documents from `from` into `to` (replicated writes: revisions keep their ids). Returns how many had revisions. */
export async function copyDocs(docs: DocEngine, from: string, to: string, ids: readonly string[], newId: () => string): Promise<number> {
  const out: Record<string, unknown>[] = [];
  let copied = 0;
  for (const id of ids) {
    const leaves = await docs.openRevs(from, id);
    if (leaves.length > 0) copied++;
    for (const leaf of leaves) out.push(await inlineAttachments(docs, from, id, leaf));
  }
  if (out.length === 0) return 0;
  const results = await docs.bulkDocs(to, out, false, newId);
  const failed = results.filter((r) => !r.ok);
  if (failed.length > 0) throw new FirkinError('error', `copying to ${to} failed for ${failed.length} revisions: ${JSON.stringify(failed[0])}`);
  return copied;
}
