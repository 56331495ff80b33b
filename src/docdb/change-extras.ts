// What CouchDB adds to a page of changes on request (PouchDB asks for each): every leaf
// revision (`style=all_docs`), and with `include_docs` each document's `_conflicts` and its
// attachments inline. A database's feed and each shard of a VDB's read them alike.
import type { ChangeEntry, DocEngine } from './engine.js';
import { withInlineAttachments } from './inline-attachments.js';
import { conflicts, leaves } from './revtree.js';

/** What CouchDB adds to a page of changes on request (PouchDB asks for each). */
export interface PageExtras {
  /** `style=all_docs`: every leaf revision, not just the winner. */
  style?: 'main_only' | 'all_docs' | undefined;
  /** With `include_docs`: `_conflicts` on each document. */
  conflicts?: boolean | undefined;
  /** With `include_docs`: attachments' content inline. */
  attachments?: boolean | undefined;
}

/** A page of changes with the extras asked for (`PageExtras`). */
export async function withExtras<T extends { results: ChangeEntry[] }>(docs: DocEngine, db: string, extras: PageExtras, page: T): Promise<T> {
  const withDocs = extras.conflicts === true || extras.attachments === true;
  if (extras.style !== 'all_docs' && !withDocs) return page;
  for (const entry of page.results) {
    const rec = await docs.getRecord(db, entry.id);
    if (rec === undefined) continue;
    if (extras.style === 'all_docs') entry.changes = leaves(rec.tree).map((n) => ({ rev: n.rev }));
    if (entry.doc === undefined || entry.doc === null) continue;
    if (extras.conflicts === true) {
      const others = conflicts(rec.tree);
      if (others.length > 0) entry.doc = { ...entry.doc, _conflicts: others };
    }
    if (extras.attachments === true) entry.doc = await withInlineAttachments(docs, db, entry.id, entry.doc);
  }
  return page;
}
