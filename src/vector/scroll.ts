// Paging through a collection's documents in id order (Qdrant's scroll). Each shard lists its
// first `limit + 1` documents from the offset; merged by id, the first `limit` are the page
// and the next one, if any, is where the next page starts. Pure.
import { compareStrings } from '../core/keys.js';
import type { ScrolledDoc } from './shard-handle.js';

export interface ScrollPage {
  readonly documents: ScrolledDoc[];
  /** The id the next page starts at (inclusive); undefined after the last page. */
  readonly next: string | undefined;
}

/** The shards' pages (each its first `limit + 1` from the offset, in id order) merged. */
export function mergeScroll(pages: readonly (readonly ScrolledDoc[])[], limit: number): ScrollPage {
  const all = pages.flat().sort((a, b) => compareStrings(a.id, b.id));
  return { documents: all.slice(0, limit), next: all[limit]?.id };
}
