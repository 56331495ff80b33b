// Replication ids and checkpoints. Pure (hashing only).
//
// The id is a hash of the source, the target (without credentials) and the normalised
// filter: a filtered and an unfiltered run never share a checkpoint, and a changed token does
// not throw one away. A checkpoint is a `_local/replication-checkpoint-<id>` document stored
// on BOTH sides; a run starts from the source seq both sides agree on (the older one), so a
// checkpoint written on only one side before a crash can never make the run skip changes.
// A source that refuses the checkpoint write (a read key: 401/403) is read-only: the target's
// checkpoint says so, and runs start from it alone (PouchDB's rule), rather than from the
// beginning every time.
import { createHash } from 'node:crypto';
import { type Hlc, compareHlc, parseHlc } from '../../core/hlc.js';

export const CHECKPOINT = {
  /** History entries kept in a checkpoint document (the original kept 20). */
  historyMax: 20,
} as const;

function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>).filter(([, v]) => v !== undefined).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

export function replicationId(source: string, target: string, filter: unknown): string {
  return createHash('sha256').update(canonical({ v: 1, source, target, filter: filter ?? null })).digest('hex').slice(0, 32);
}

export function checkpointDocId(repId: string): string {
  return `replication-checkpoint-${repId}`;
}

export interface CheckpointEntry {
  readonly session_id: string;
  readonly source_last_seq: string;
  readonly start_seq: string;
  readonly end_time: string;
  readonly docs_read: number;
  readonly docs_written: number;
  readonly doc_write_failures: number;
}

export interface CheckpointDoc {
  readonly replication_id: string;
  readonly session_id: string;
  readonly source_last_seq: string;
  readonly history: readonly CheckpointEntry[];
  /** On the target's copy: the source refused to store its copy (a read-only key). */
  readonly source_read_only?: true;
}

/** Read a stored checkpoint body leniently: anything unusable is no checkpoint. */
export function readCheckpoint(body: unknown, repId: string): CheckpointDoc | undefined {
  if (typeof body !== 'object' || body === null) return undefined;
  const b = body as Partial<CheckpointDoc>;
  if (b.replication_id !== repId || typeof b.source_last_seq !== 'string' || typeof b.session_id !== 'string') return undefined;
  return {
    replication_id: repId,
    session_id: b.session_id,
    source_last_seq: b.source_last_seq,
    history: Array.isArray(b.history) ? b.history : [],
    ...(b.source_read_only === true ? { source_read_only: true as const } : {}),
  };
}

/**
 * The seq to start from: both sides must have a checkpoint; take the older of the two. When
 * the target's says the source is read-only, the target's alone (the source's, if any, is
 * older than every later run's progress).
 */
export function startSeq(onSource: CheckpointDoc | undefined, onTarget: CheckpointDoc | undefined): Hlc | undefined {
  if (onTarget?.source_read_only === true) return parseHlc(onTarget.source_last_seq);
  if (onSource === undefined || onTarget === undefined) return undefined;
  const a = parseHlc(onSource.source_last_seq);
  const b = parseHlc(onTarget.source_last_seq);
  if (a === undefined || b === undefined) return undefined;
  return compareHlc(a, b) <= 0 ? a : b;
}

/** The next checkpoint document: this session's entry replaces its own older entry at the head. */
export function nextCheckpoint(previous: CheckpointDoc | undefined, repId: string, entry: CheckpointEntry, sourceReadOnly = false): CheckpointDoc {
  const older = (previous?.history ?? []).filter((h) => h.session_id !== entry.session_id);
  return {
    replication_id: repId,
    session_id: entry.session_id,
    source_last_seq: entry.source_last_seq,
    history: [entry, ...older].slice(0, CHECKPOINT.historyMax),
    ...(sourceReadOnly ? { source_read_only: true as const } : {}),
  };
}
