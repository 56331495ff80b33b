// Checker of the set workload's listing: after the final reads, each node lists the whole
// collection with Qdrant's scroll (`POST …/docs/scroll`, pages of 1,000 from `next_offset`,
// linearizable: each shard's leader), whose pages are merged across the shards of the layout
// of the moment, however many reshards came before. Pure: what each node listed and read in,
// anomalies out. A listing must hold exactly the documents the node's final read holds (the
// cluster converged and nothing writes any more), each once, in id order (code points):
//
// - missing: a document the final read holds, not listed;
// - extra: listed, not in the final read;
// - repeated: listed twice;
// - unordered: an id not after the one before it;
// - no-listing: the node never finished the listing.
import type { SetElement } from './history.js';

export interface NodeListing {
  readonly node: string;
  /** The node's final read of the set (undefined: it had none, nothing to hold the listing to). */
  readonly present: readonly SetElement[] | undefined;
  /** The ids in the order the pages gave them; undefined: the listing did not finish. */
  readonly listed: readonly string[] | undefined;
}

export interface ListingAnomaly {
  readonly type: 'missing' | 'extra' | 'repeated' | 'unordered' | 'no-listing';
  readonly node: string;
  /** Up to EXAMPLES of the ids concerned. */
  readonly ids: readonly string[];
  readonly count: number;
}

export interface ListingCheck {
  readonly ok: boolean;
  readonly anomalies: readonly ListingAnomaly[];
  readonly listed: number;
}

/** How many of the ids or documents concerned an anomaly names (every id-listing checker's). */
export const EXAMPLES = 5;

/**
 * Code-point order, the scroll's (JavaScript's `<` orders UTF-16 units). Through UTF-8 bytes,
 * not the product's `compareStrings`: the order is what this checks.
 */
function byCodePoint(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'));
}

/** A list of ids as a scroll gave them: the distinct ones, those listed again, those out of code-point order. */
export function idOrder(ids: readonly string[]): { seen: Set<string>; repeated: string[]; unordered: string[] } {
  const seen = new Set<string>();
  const repeated: string[] = [];
  const unordered: string[] = [];
  ids.forEach((id, i) => {
    if (seen.has(id)) repeated.push(id);
    else if (i > 0 && byCodePoint(ids[i - 1]!, id) >= 0) unordered.push(id);
    seen.add(id);
  });
  return { seen, repeated, unordered };
}

export function checkListings(listings: readonly NodeListing[]): ListingCheck {
  const anomalies: ListingAnomaly[] = [];
  let listed = 0;
  for (const l of listings) {
    if (l.present === undefined) continue;
    const report = (type: ListingAnomaly['type'], ids: readonly string[]) => {
      if (type === 'no-listing' || ids.length > 0) anomalies.push({ type, node: l.node, ids: ids.slice(0, EXAMPLES), count: ids.length });
    };
    if (l.listed === undefined) {
      report('no-listing', []);
      continue;
    }
    listed += l.listed.length;
    const present = new Set(l.present.map(String));
    const { seen, repeated, unordered } = idOrder(l.listed);
    report('missing', [...present].filter((id) => !seen.has(id)));
    report('extra', [...seen].filter((id) => !present.has(id)));
    report('repeated', repeated);
    report('unordered', unordered);
  }
  return { ok: anomalies.length === 0, anomalies, listed };
}
