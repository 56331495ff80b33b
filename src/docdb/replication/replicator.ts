// One replication run, CouchDB's protocol: changes since the checkpoint -> `_revs_diff` on
// the target -> `_bulk_get` of the missing revisions (history + attachments) from the source
// -> `_bulk_docs` with new_edits: false on the target -> checkpoint on both sides. One-shot
// runs stop when caught up; continuous runs wait for the next change until aborted.
//
// Pipelined, one batch deep: batch N+1 is read (changes, `_revs_diff`, `_bulk_get`) while
// batch N is written (`_bulk_docs`, then maybe a checkpoint):
//
//   read:   [changes₁ diff₁ get₁]  [changes₂ diff₂ get₂]  [changes₃ …
//   write:                         [bulk_docs₁ (cp)]       [bulk_docs₂ (cp)]
//
// Batch N+1's `_revs_diff` may run before batch N landed. A revision it calls missing that
// N writes is written again, a no-op under new_edits: false. The one decision that depends on
// what the target holds, a filtered tombstone (sent only where the document is), is made
// after N's write, counting the documents N wrote as held: exactly what a sequential run
// would have seen.
import { FirkinError, isFirkinError } from '../../core/errors.js';
import { type Clock, type Hlc, compareHlc, hlcToText, parseHlc } from '../../core/hlc.js';
import type { Json } from '../query/ast.js';
import { type CheckpointDoc, checkpointDocId, nextCheckpoint, readCheckpoint, startSeq } from './checkpoint.js';
import type { ChangeRow, ChangesPage, Endpoint, Wanted } from './endpoints.js';
import { type ReplicationFilter, isFiltered, passesFilter } from './filter.js';

/**
 * A revision later than any real one (generations have at most 9 digits here): asked about in
 * `_revs_diff`, its `possible_ancestors` are every leaf the target holds of the document.
 */
const HELD_PROBE_REV = `999999999-${'0'.repeat(32)}`;

/**
 * Adds to `held` the ids of `rows` that may bring a tombstone (deleted, or with conflicts) and
 * that the target holds at all. `_revs_diff`'s `possible_ancestors` name only the target's
 * leaves older than the revisions asked about, so a document it holds at a later generation
 * read as absent, and whether its tombstone went depended on that generation: on when a
 * pipelined run asked (test/docdb/replication/pipeline.test.ts caught it). One more
 * `_revs_diff`, of a probe revision later than any, for those ids only.
 */
export async function probeHeld(target: Endpoint, rows: readonly ChangeRow[], held: Set<string>): Promise<void> {
  const ids = [...new Set(rows.filter((r) => (r.deleted || r.revs.length > 1) && !held.has(r.id)).map((r) => r.id))];
  if (ids.length === 0) return;
  const probe = await target.revsDiff(Object.fromEntries(ids.map((id) => [id, [HELD_PROBE_REV]])));
  for (const [id, d] of Object.entries(probe)) if ((d.possible_ancestors ?? []).length > 0) held.add(id);
}

export const REPLICATION_DEFAULTS = {
  /** How long a continuous run waits on the source before polling again (under the 30 s call timeout). */
  waitMs: 25_000,
} as const;

export interface Progress {
  docs_read: number;
  docs_written: number;
  doc_write_failures: number;
  start_seq: string;
  last_seq: string;
}

export interface ReplicationResult extends Progress {
  ok: boolean;
  session_id: string;
  replication_id: string;
  history: CheckpointDoc['history'];
}

export interface RunOptions {
  readonly source: Endpoint;
  readonly target: Endpoint;
  readonly repId: string;
  readonly filter: ReplicationFilter;
  readonly continuous: boolean;
  readonly sessionId: string;
  readonly batchSize: number;
  readonly waitMs: number;
  readonly clock: Clock;
  readonly signal?: AbortSignal;
  /** Called once when the source refuses to store its checkpoint (a read-only key). */
  readonly onSourceReadOnly?: (reason: string) => void;
  /** Called after every batch that was written (progress counters, logs). */
  readonly onBatch?: (progress: Progress, batch: { rows: number; written: number }) => void;
}

const FIRST = 'first';
/** Revisions fetched and written per request pair. */
const FETCH_SLICE = 500;
/**
 * A checkpoint is written after a batch when this long passed since the last one, and always
 * when the run catches up or ends (CouchDB's checkpoint_interval is 5 s). Losing the
 * checkpoints of a few batches only makes the next run re-read their changes: `_revs_diff`
 * then finds nothing missing.
 */
const CHECKPOINT_INTERVAL_MS = 1_000;

function maxSeq(rows: readonly ChangeRow[]): Hlc | undefined {
  let best: Hlc | undefined;
  for (const r of rows) {
    const h = parseHlc(r.seq);
    if (h !== undefined && (best === undefined || compareHlc(h, best) > 0)) best = h;
  }
  return best;
}

/** One batch read from the source, ready to be written. */
interface ReadBatch {
  readonly rows: number;
  readonly lastSeq: string;
  readonly seq: Hlc | undefined;
  /** Fetched revisions, in slices of at most FETCH_SLICE. */
  readonly slices: Record<string, unknown>[][];
  /** Documents the target held a revision of at `_revs_diff` time. */
  readonly heldByTarget: ReadonlySet<string>;
}

/** What a written batch leaves for the next one. */
interface Written {
  /** Ids of the documents the target accepted a revision of. */
  readonly ids: ReadonlySet<string>;
}

export async function replicate(o: RunOptions): Promise<ReplicationResult> {
  const cpId = checkpointDocId(o.repId);
  const [onSource, onTarget] = await Promise.all([o.source.getLocal(cpId), o.target.getLocal(cpId)]);
  const sourceCp = readCheckpoint(onSource, o.repId);
  const targetCp = readCheckpoint(onTarget, o.repId);
  const start = startSeq(sourceCp, targetCp);
  let since: string | undefined = start === undefined ? undefined : hlcToText(start);
  const progress: Progress = { docs_read: 0, docs_written: 0, doc_write_failures: 0, start_seq: since ?? FIRST, last_seq: since ?? FIRST };
  let checkpoint = sourceCp ?? targetCp;
  // Learnt from the target's checkpoint, or from the source's 401/403 to this run's write.
  let sourceReadOnly = targetCp?.source_read_only === true;
  /** The sequence the stored checkpoints name. */
  let checkpointed = since;
  let checkpointedAtMs = o.clock.nowMs();
  const filtered = isFiltered(o.filter);

  const writeCheckpoint = async (): Promise<void> => {
    if (progress.last_seq === FIRST || progress.last_seq === checkpointed) return;
    const lastSeq = progress.last_seq;
    const entry = {
      session_id: o.sessionId,
      source_last_seq: lastSeq,
      start_seq: progress.start_seq,
      end_time: new Date(o.clock.nowMs()).toISOString(),
      docs_read: progress.docs_read,
      docs_written: progress.docs_written,
      doc_write_failures: progress.doc_write_failures,
    };
    checkpoint = nextCheckpoint(checkpoint, o.repId, entry, sourceReadOnly);
    // Target first: a crash between the two leaves the source's older copy, and a run starts
    // from the older of the two, so nothing is ever skipped.
    await o.target.putLocal(cpId, { ...checkpoint });
    if (!sourceReadOnly) {
      try {
        await o.source.putLocal(cpId, { ...checkpoint });
      } catch (err) {
        const status = isFirkinError(err) ? err.details?.remote_status : undefined;
        if (status !== 401 && status !== 403) throw err;
        // A read key: the run goes on, and the target's checkpoint says to start from it alone.
        sourceReadOnly = true;
        o.onSourceReadOnly?.((err as Error).message);
        checkpoint = nextCheckpoint(checkpoint, o.repId, entry, true);
        await o.target.putLocal(cpId, { ...checkpoint });
      }
    }
    checkpointed = lastSeq;
    checkpointedAtMs = o.clock.nowMs();
  };

  const read = async (page: ChangesPage): Promise<ReadBatch> => {
    // A filter applies to each leaf revision (CouchDB's style=all_docs): a conflict that
    // matches replicates even when the winner does not. The winner's body (in the change
    // row) settles documents without conflicts here; the others are checked per revision
    // once fetched.
    const rows = filtered ? page.rows.filter((r) => r.deleted || r.revs.length > 1 || (r.doc !== undefined && passesFilter(o.filter, r.doc as Json))) : page.rows;
    const request: Record<string, string[]> = {};
    for (const r of rows) request[r.id] = [...(request[r.id] ?? []), ...r.revs];
    const diff = rows.length === 0 ? {} : await o.target.revsDiff(request);
    const wanted: Wanted[] = [];
    const heldByTarget = new Set<string>();
    for (const [id, d] of Object.entries(diff)) {
      const held = d.possible_ancestors ?? [];
      if (held.length > 0) heldByTarget.add(id);
      for (const rev of d.missing) wanted.push(held.length === 0 ? { id, rev } : { id, rev, atts_since: held });
    }
    if (filtered) await probeHeld(o.target, rows, heldByTarget);
    // Fetch in slices: a peer's `_bulk_get` takes at most 1000 entries, and a smaller
    // request body keeps revisions with attachments under the peer's body limit.
    const slices: Record<string, unknown>[][] = [];
    for (let i = 0; i < wanted.length; i += FETCH_SLICE) slices.push(await o.source.bulkGet(wanted.slice(i, i + FETCH_SLICE)));
    return { rows: page.rows.length, lastSeq: page.lastSeq, seq: maxSeq(page.rows), slices, heldByTarget };
  };

  const write = async (batch: ReadBatch, before: Written): Promise<Written> => {
    // A tombstone goes only where the document already is (now: after the previous batch
    // landed); a live revision, if it matches.
    const passes = (doc: Record<string, unknown>) =>
      doc._deleted === true ? batch.heldByTarget.has(doc._id as string) || before.ids.has(doc._id as string) : passesFilter(o.filter, doc as Json);
    const ids = new Set<string>();
    let written = 0;
    for (const fetched of batch.slices) {
      progress.docs_read += fetched.length;
      const docs = filtered ? fetched.filter(passes) : fetched;
      if (docs.length === 0) continue;
      const outcome = await o.target.bulkDocs(docs, batch.seq);
      written += outcome.written;
      progress.docs_written += outcome.written;
      // A revision the source no longer serves was superseded after the changes read; its
      // successor has a later change entry, so it is not a failure.
      progress.doc_write_failures += outcome.failures.length;
      const failed = new Set(outcome.failures.map((f) => f.id));
      for (const d of docs) if (!failed.has(d._id as string)) ids.add(d._id as string);
    }
    progress.last_seq = batch.lastSeq;
    // A short page means caught up: checkpoint now, the next read may wait a long time.
    if (batch.rows < o.batchSize || o.clock.nowMs() - checkpointedAtMs >= CHECKPOINT_INTERVAL_MS) await writeCheckpoint();
    o.onBatch?.(progress, { rows: batch.rows, written });
    return { ids };
  };

  let writing: Promise<Written> = Promise.resolve({ ids: new Set() });
  try {
    for (;;) {
      if (o.signal?.aborted) throw new FirkinError('unavailable', 'replication stopped');
      const page = await o.source.changes(since, o.batchSize, { includeDocs: filtered, waitMs: o.continuous ? o.waitMs : 0 });
      if (page.rows.length === 0) {
        await writing;
        await writeCheckpoint(); // before a continuous run's next wait
        if (!o.continuous) break;
        continue;
      }
      const batch = await read(page);
      const before = await writing;
      since = page.lastSeq;
      writing = write(batch, before);
      // Handled when awaited (next turn, or below); a failure must not go unobserved meanwhile.
      writing.catch(() => undefined);
      // A short page means caught up: a one-shot run ends there even if writes keep coming.
      if (!o.continuous && page.rows.length < o.batchSize) break;
    }
    await writing;
  } finally {
    // Whatever happened, never leave a write running behind the caller's back.
    await writing.catch(() => undefined);
  }
  await writeCheckpoint();
  return { ok: true, session_id: o.sessionId, replication_id: o.repId, ...progress, history: checkpoint?.history ?? [] };
}
