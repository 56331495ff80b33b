// Moving documents between databases of this node with everything they are: every leaf
// revision, its full history and its attachment content. Used by VDB rebalancing and by
// tiered storage.
import { FirkinError } from '../core/errors.js';
import type { DocEngine } from './engine.js';
import { withInlineAttachments } from './inline-attachments.js';

/** Copy these documents from `from` into `to` (replicated writes: revisions keep their ids). Returns how many had revisions. */
export async function copyDocs(docs: DocEngine, from: string, to: string, ids: readonly string[], newId: () => string): Promise<number> {
  const out: Record<string, unknown>[] = [];
  let copied = 0;
  for (const id of ids) {
    const leaves = await docs.openRevs(from, id);
    if (leaves.length > 0) copied++;
    for (const leaf of leaves) out.push(await withInlineAttachments(docs, from, id, leaf));
  }
  if (out.length === 0) return 0;
  const results = await docs.bulkDocs(to, out, false, newId);
  const failed = results.filter((r) => !r.ok);
  if (failed.length > 0) throw new FirkinError('error', `copying to ${to} failed for ${failed.length} revisions: ${JSON.stringify(failed[0])}`);
  return copied;
}
