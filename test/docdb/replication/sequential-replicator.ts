// The replicator as it was before pipelining (one batch at a time: read, then write, then
// checkpoint), kept as the oracle of test/docdb/replication/pipeline.test.ts.
import { type Hlc, compareHlc, hlcToText, parseHlc } from '../../../src/core/hlc.js';
import type { Json } from '../../../src/docdb/query/ast.js';
import { checkpointDocId, nextCheckpoint, readCheckpoint, startSeq } from '../../../src/docdb/replication/checkpoint.js';
import type { ChangeRow, Wanted } from '../../../src/docdb/replication/endpoints.js';
import { isFiltered, passesFilter } from '../../../src/docdb/replication/filter.js';
import { type Progress, type ReplicationResult, type RunOptions, probeHeld } from '../../../src/docdb/replication/replicator.js';

const FIRST = 'first';
const FETCH_SLICE = 500;

function maxSeq(rows: readonly ChangeRow[]): Hlc | undefined {
  let best: Hlc | undefined;
  for (const r of rows) {
    const h = parseHlc(r.seq);
    if (h !== undefined && (best === undefined || compareHlc(h, best) > 0)) best = h;
  }
  return best;
}

export async function replicateSequentially(o: RunOptions): Promise<ReplicationResult> {
  const cpId = checkpointDocId(o.repId);
  const [onSource, onTarget] = await Promise.all([o.source.getLocal(cpId), o.target.getLocal(cpId)]);
  const sourceCp = readCheckpoint(onSource, o.repId);
  const targetCp = readCheckpoint(onTarget, o.repId);
  const start = startSeq(sourceCp, targetCp);
  let since: string | undefined = start === undefined ? undefined : hlcToText(start);
  const progress: Progress = { docs_read: 0, docs_written: 0, doc_write_failures: 0, start_seq: since ?? FIRST, last_seq: since ?? FIRST };
  let checkpoint = sourceCp ?? targetCp;
  const filtered = isFiltered(o.filter);

  for (;;) {
    const page = await o.source.changes(since, o.batchSize, { includeDocs: filtered, waitMs: o.continuous ? o.waitMs : 0 });
    if (page.rows.length === 0) {
      if (!o.continuous) break;
      continue;
    }
    // A filter applies to each leaf revision (CouchDB's style=all_docs): a conflict that
    // matches replicates even when the winner does not. The winner's body (in the change
    // row) settles documents without conflicts here; the others are checked per revision
    // once fetched.
    const rows = filtered ? page.rows.filter((r) => r.deleted || r.revs.length > 1 || (r.doc !== undefined && passesFilter(o.filter, r.doc as Json))) : page.rows;
    const request: Record<string, string[]> = {};
    for (const r of rows) request[r.id] = [...(request[r.id] ?? []), ...r.revs];
    const diff = await o.target.revsDiff(request);
    const wanted: Wanted[] = [];
    const heldByTarget = new Set<string>();
    for (const [id, d] of Object.entries(diff)) {
      const held = d.possible_ancestors ?? [];
      if (held.length > 0) heldByTarget.add(id);
      for (const rev of d.missing) wanted.push(held.length === 0 ? { id, rev } : { id, rev, atts_since: held });
    }
    if (filtered) await probeHeld(o.target, rows, heldByTarget);
    // A tombstone goes only where the document already is; a live revision, if it matches.
    const passes = (doc: Record<string, unknown>) =>
      doc._deleted === true ? heldByTarget.has(doc._id as string) : passesFilter(o.filter, doc as Json);
    let written = 0;
    const seq = maxSeq(page.rows);
    // Fetch and write in slices: a peer's `_bulk_get` takes at most 1000 entries, and a
    // smaller request body keeps revisions with attachments under the peer's body limit.
    for (let i = 0; i < wanted.length; i += FETCH_SLICE) {
      const fetched = await o.source.bulkGet(wanted.slice(i, i + FETCH_SLICE));
      progress.docs_read += fetched.length;
      const docs = filtered ? fetched.filter(passes) : fetched;
      const outcome = await o.target.bulkDocs(docs, seq);
      written += outcome.written;
      progress.docs_written += outcome.written;
      // A revision the source no longer serves was superseded after the changes read; its
      // successor has a later change entry, so it is not a failure.
      progress.doc_write_failures += outcome.failures.length;
    }
    since = page.lastSeq;
    progress.last_seq = since;
    checkpoint = nextCheckpoint(checkpoint, o.repId, {
      session_id: o.sessionId,
      source_last_seq: since,
      start_seq: progress.start_seq,
      end_time: new Date(o.clock.nowMs()).toISOString(),
      docs_read: progress.docs_read,
      docs_written: progress.docs_written,
      doc_write_failures: progress.doc_write_failures,
    });
    // Target first: a crash between the two leaves the source's older copy, and a run starts
    // from the older of the two, so nothing is ever skipped.
    await o.target.putLocal(cpId, { ...checkpoint });
    await o.source.putLocal(cpId, { ...checkpoint });
    o.onBatch?.(progress, { rows: page.rows.length, written });
    // A short page means caught up: a one-shot run ends there even if writes keep coming.
    if (!o.continuous && page.rows.length < o.batchSize) break;
  }
  return { ok: true, session_id: o.sessionId, replication_id: o.repId, ...progress, history: checkpoint?.history ?? [] };
}
