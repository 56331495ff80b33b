// Checker of the set workload's scrolls during the run: one client lists the collection over
// and over with Qdrant's scroll (`POST …/docs/scroll`, pages of 100 from `next_offset`, each
// page through a random node), while elements are added and deleted and the collection is
// resharded. Pure: the scrolls and the set's history in, anomalies out. A scroll is keyset
// paging over the ids, so for one that finished, from the invocation of its first page to the
// completion of its last:
//
// - missing: an element not listed, though its add was acknowledged before the scroll began and
//   no delete of it (acknowledged or in doubt) was invoked before the scroll ended;
// - unexpected: an element listed that no add (acknowledged or in doubt) invoked before the
//   scroll ended could have made;
// - repeated: listed twice in one scroll;
// - unordered: an id not after the one before it (code points).
import type { SetElement, SetOp } from './history.js';
import { EXAMPLES, idOrder } from './listing.js';

export interface Scroll {
  readonly startMs: number;
  readonly endMs: number;
  /** The ids in the order its pages gave them. */
  readonly ids: readonly string[];
  /** The nodes its pages went through. */
  readonly nodes: readonly string[];
}

export interface ScrollAnomaly {
  readonly type: 'missing' | 'unexpected' | 'repeated' | 'unordered';
  /** Which scroll (its index), over which interval. */
  readonly scroll: number;
  readonly detail: string;
  /** Up to EXAMPLES of the ids concerned. */
  readonly ids: readonly string[];
  readonly count: number;
}

export interface ScrollCheck {
  readonly ok: boolean;
  readonly anomalies: readonly ScrollAnomaly[];
  readonly scrolls: number;
  readonly listed: number;
}

const key = (e: SetElement) => String(e);


export function checkScrolls(scrolls: readonly Scroll[], history: readonly SetOp[]): ScrollCheck {
  // Per element: when an acknowledged add completed (the earliest), when any add that may
  // have happened was invoked (the earliest), when any delete that may have happened was
  // invoked (the earliest).
  const ackedAt = new Map<string, number>();
  const mayAddFrom = new Map<string, number>();
  const mayDeleteFrom = new Map<string, number>();
  const earliest = (m: Map<string, number>, k: string, ms: number) => m.set(k, Math.min(m.get(k) ?? Infinity, ms));
  for (const op of history) {
    if (op.kind === 'read' || op.outcome === 'fail') continue;
    const k = key(op.element);
    if (op.kind === 'add') {
      earliest(mayAddFrom, k, op.invokeMs);
      if (op.outcome === 'ok') earliest(ackedAt, k, op.completeMs);
    } else {
      earliest(mayDeleteFrom, k, op.invokeMs);
    }
  }
  const anomalies: ScrollAnomaly[] = [];
  let listed = 0;
  scrolls.forEach((s, i) => {
    listed += s.ids.length;
    const report = (type: ScrollAnomaly['type'], ids: readonly string[], detail: string) => {
      if (ids.length > 0) anomalies.push({ type, scroll: i, detail: `scroll ${i} [${s.startMs}, ${s.endMs}] ms through ${[...new Set(s.nodes)].join(',')}: ${detail}`, ids: ids.slice(0, EXAMPLES), count: ids.length });
    };
    const { seen, repeated, unordered } = idOrder(s.ids);
    // Times are whole milliseconds: an operation invoked in the millisecond a scroll ended may
    // have taken effect before it, and one completed in the millisecond it began, after.
    const missing = [...ackedAt].filter(([k, at]) => at < s.startMs && !((mayDeleteFrom.get(k) ?? Infinity) <= s.endMs) && !seen.has(k)).map(([k]) => k);
    const unexpected = [...seen].filter((k) => !((mayAddFrom.get(k) ?? Infinity) <= s.endMs));
    report('missing', missing, `${missing.length} elements acknowledged before it began, never deleted during it, not listed`);
    report('unexpected', unexpected, `${unexpected.length} elements listed that no add invoked before its end made`);
    report('repeated', repeated, `${repeated.length} ids listed twice`);
    report('unordered', unordered, `${unordered.length} ids not after the one before`);
  });
  return { ok: anomalies.length === 0, anomalies, scrolls: scrolls.length, listed };
}
