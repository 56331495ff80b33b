// Checker of a `_changes` follower (the cas workload's VDB): one client polls the feed all
// through the run, through random nodes, each poll from the `last_seq` the one before it got,
// as a replicator does, across faults and the VDB's splits and merges; after healing it drains
// the feed to an empty page. Pure: the polls and the acknowledged writes in, anomalies out.
//
// A write's change is in the feed once it commits, at a sequence no cursor handed out before it
// has passed. The feed may replace a document's older change by its newer one, so what a
// follower is owed is, for every acknowledged write, a sighting of that document at the
// write's revision or a later one (a larger generation: a cas chain has no branches), in a poll
// that completed after the write was invoked. So:
//
// - missed: no such sighting (a cursor that skipped changes, across a switch most likely);
// - phantom: the feed listed an id that is none of the workload's documents (a `_local`
//   document among them: they are never in a feed). Its revisions are not held to the writes:
//   a write whose answer was lost may have made one, and its revision is the node's to decide;
// - cursor-refused: a node refused (4xx) a cursor the feed itself handed out;
// - no-drain: after healing, the feed could not be read to an empty page.

/** One answered poll: the changes it listed, in order. */
export interface FeedPoll {
  readonly node: string;
  readonly invokeMs: number;
  readonly completeMs: number;
  readonly changes: readonly { readonly id: string; readonly rev: string }[];
}

export interface AckedWrite {
  readonly key: string;
  readonly rev: string;
  readonly invokeMs: number;
}

export interface FeedHistory {
  readonly polls: readonly FeedPoll[];
  /** Every write a client had acknowledged with its revision (201). */
  readonly acked: readonly AckedWrite[];
  /** The workload's documents: the only ids the feed may list. */
  readonly keys: ReadonlySet<string>;
  /** A node answered a 4xx to a cursor, with what it said. */
  readonly refusals: readonly { readonly node: string; readonly since: string; readonly status: number; readonly detail: string }[];
  /** The drain after healing reached an empty page. */
  readonly drained: boolean;
}

export interface FeedAnomaly {
  readonly type: 'missed' | 'phantom' | 'cursor-refused' | 'no-drain';
  readonly key: string;
  readonly node: string;
  readonly detail: string;
}

export interface FeedCheck {
  readonly ok: boolean;
  readonly anomalies: readonly FeedAnomaly[];
  readonly polls: number;
  readonly changes: number;
  readonly acked: number;
}

/** A revision's generation (`12-ab…` -> 12); NaN for anything else. */
export function generation(rev: string): number {
  const dash = rev.indexOf('-');
  return dash > 0 && /^\d+$/.test(rev.slice(0, dash)) ? Number(rev.slice(0, dash)) : Number.NaN;
}

export function checkFeed(h: FeedHistory): FeedCheck {
  const anomalies: FeedAnomaly[] = [];
  // Per document, its sightings in poll order: (generation, when the poll completed).
  const seen = new Map<string, { gen: number; completeMs: number }[]>();
  const phantoms = new Set<string>();
  let changes = 0;
  for (const p of h.polls) {
    for (const c of p.changes) {
      changes++;
      if (!h.keys.has(c.id)) {
        if (phantoms.has(c.id)) continue; // said once per id
        phantoms.add(c.id);
        anomalies.push({ type: 'phantom', key: c.id, node: p.node, detail: `the feed listed ${c.id} at ${c.rev} (poll [${p.invokeMs}, ${p.completeMs}] ms), none of the workload's documents` });
        continue;
      }
      let list = seen.get(c.id);
      if (list === undefined) seen.set(c.id, (list = []));
      list.push({ gen: generation(c.rev), completeMs: p.completeMs });
    }
  }
  // One anomaly per document: its latest write the feed never caught up with.
  const missed = new Map<string, AckedWrite>();
  for (const w of h.acked) {
    const gen = generation(w.rev);
    // Whole milliseconds: a poll that completed in the millisecond the write was invoked may have seen it.
    const caught = (seen.get(w.key) ?? []).some((s) => s.gen >= gen && s.completeMs >= w.invokeMs);
    if (!caught && (missed.get(w.key)?.invokeMs ?? -Infinity) < w.invokeMs) missed.set(w.key, w);
  }
  for (const [key, w] of missed) {
    const last = (seen.get(key) ?? []).reduce((best, s) => Math.max(best, s.gen), 0);
    anomalies.push({ type: 'missed', key, node: '', detail: `the write of ${w.rev} (invoked at ${w.invokeMs} ms, acknowledged) never reached the follower: its newest sighting of ${key} was generation ${last || 'none'}` });
  }
  for (const r of h.refusals) anomalies.push({ type: 'cursor-refused', key: r.since, node: r.node, detail: `${r.node} answered ${r.status} to a cursor the feed handed out: ${r.detail}` });
  if (!h.drained) anomalies.push({ type: 'no-drain', key: '', node: '', detail: 'after healing, the feed could not be read to an empty page' });
  return { ok: anomalies.length === 0, anomalies, polls: h.polls.length, changes, acked: h.acked.length };
}
