// The answers of the cluster endpoints the CLI reads (docs/cli.md, vector spec "cluster
// endpoints"), checked at the door: a node that answers something else gets a one-line
// `bad_response`, not a stack trace from the table code.

import { CliFailure } from './failure.js';

export interface StatusBody {
  state: string;
  is_leader: boolean;
  leader: string | null;
  node: string;
  nodes: string[];
  /** Absent on nodes older than the cluster work. */
  healthy_nodes?: string[];
}

export interface NodesBody {
  nodes: string[];
}

export interface NodeDetail {
  name: string;
  http: string;
  grpc: string;
  zone: string;
  /** null from a node that records none (older than the field). */
  version: string | null;
  status: string;
  role: string;
  joined_at: number;
  last_heartbeat_ms_ago: number | null;
  /** Shard groups it leads; null when not known (or from a server older than the field). */
  shard_leaders: number | null;
}

export interface NodeDetailsBody {
  leader: string | null;
  term: number;
  commit: number;
  applied: number;
  nodes: NodeDetail[];
}

export interface ShardRow {
  shard: number;
  group: string;
  replicas: string[];
  leader: string | null;
  term?: number;
  learners?: string[];
  lag?: Record<string, number | null>;
  /** Replicas on nodes the cluster counts down or gone (absent from a node before this field). */
  down?: string[];
  error?: string;
  message?: string;
}

export interface ShardsBody {
  collection: string;
  replication_factor: number;
  shards: ShardRow[];
}

/** The answer of join, leave and remove. */
export interface NodeStatusBody {
  node: string;
  status: string;
}

const bad = (message: string) => new CliFailure('bad_response', message);

type Json = Record<string, unknown>;

function object(value: unknown, what: string): Json {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw bad(`${what} is not a JSON object`);
  return value as Json;
}

function field<T>(body: Json, name: string, what: string, ok: (v: unknown) => v is T, expected: string): T {
  const v = body[name];
  if (!ok(v)) throw bad(`${what}: ${name} must be ${expected}, got ${JSON.stringify(v) ?? 'nothing'}`);
  return v;
}

const isString = (v: unknown): v is string => typeof v === 'string';
const isNumber = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v);
const isBool = (v: unknown): v is boolean => typeof v === 'boolean';
const isStringOrNull = (v: unknown): v is string | null => v === null || typeof v === 'string';
const isNumberOrNull = (v: unknown): v is number | null => v === null || isNumber(v);
const isStrings = (v: unknown): v is string[] => Array.isArray(v) && v.every(isString);

export function asStatus(value: unknown): StatusBody {
  const what = 'cluster status';
  const b = object(value, what);
  const body: StatusBody = {
    state: field(b, 'state', what, isString, 'a string'),
    is_leader: field(b, 'is_leader', what, isBool, 'true or false'),
    leader: field(b, 'leader', what, isStringOrNull, 'a node name or null'),
    node: field(b, 'node', what, isString, 'a string'),
    nodes: field(b, 'nodes', what, isStrings, 'a list of names'),
  };
  if (b.healthy_nodes !== undefined) body.healthy_nodes = field(b, 'healthy_nodes', what, isStrings, 'a list of names');
  return body;
}

export function asNodes(value: unknown): NodesBody {
  return { nodes: field(object(value, 'cluster nodes'), 'nodes', 'cluster nodes', isStrings, 'a list of names') };
}

function asNodeDetail(value: unknown, i: number): NodeDetail {
  const what = `cluster node ${i}`;
  const b = object(value, what);
  return {
    name: field(b, 'name', what, isString, 'a string'),
    http: field(b, 'http', what, isString, 'a string'),
    grpc: field(b, 'grpc', what, isString, 'a string'),
    zone: field(b, 'zone', what, isString, 'a string'),
    // An older server's answer has no version at all.
    version: b.version === undefined ? null : field(b, 'version', what, isStringOrNull, 'a string or null'),
    status: field(b, 'status', what, isString, 'a string'),
    role: field(b, 'role', what, isString, 'a string'),
    joined_at: field(b, 'joined_at', what, isNumber, 'a number'),
    last_heartbeat_ms_ago: field(b, 'last_heartbeat_ms_ago', what, isNumberOrNull, 'a number or null'),
    shard_leaders: b.shard_leaders === undefined ? null : field(b, 'shard_leaders', what, isNumberOrNull, 'a number or null'),
  };
}

export function asNodeDetails(value: unknown): NodeDetailsBody {
  const what = 'cluster node details';
  const b = object(value, what);
  const nodes = field(b, 'nodes', what, Array.isArray, 'a list');
  return {
    leader: field(b, 'leader', what, isStringOrNull, 'a node name or null'),
    term: field(b, 'term', what, isNumber, 'a number'),
    commit: field(b, 'commit', what, isNumber, 'a number'),
    applied: field(b, 'applied', what, isNumber, 'a number'),
    nodes: (nodes as unknown[]).map(asNodeDetail),
  };
}

export function asNodeStatus(value: unknown, what: string): NodeStatusBody {
  const b = object(value, what);
  return { node: field(b, 'node', what, isString, 'a string'), status: field(b, 'status', what, isString, 'a string') };
}

export function asShards(value: unknown): ShardsBody {
  const what = 'collection shards';
  const b = object(value, what);
  const shards = field(b, 'shards', what, Array.isArray, 'a list') as unknown[];
  return {
    collection: field(b, 'collection', what, isString, 'a string'),
    replication_factor: field(b, 'replication_factor', what, isNumber, 'a number'),
    shards: shards.map((raw, i) => {
      const w = `shard ${i}`;
      const r = object(raw, w);
      return {
        shard: field(r, 'shard', w, isNumber, 'a number'),
        group: field(r, 'group', w, isString, 'a string'),
        replicas: field(r, 'replicas', w, isStrings, 'a list of names'),
        leader: field(r, 'leader', w, isStringOrNull, 'a node name or null'),
        ...(typeof r.term === 'number' ? { term: r.term } : {}),
        ...(isStrings(r.learners) ? { learners: r.learners } : {}),
        ...(typeof r.lag === 'object' && r.lag !== null ? { lag: r.lag as Record<string, number | null> } : {}),
        ...(isStrings(r.down) ? { down: r.down } : {}),
        ...(typeof r.error === 'string' ? { error: r.error, message: String(r.message ?? '') } : {}),
      };
    }),
  };
}

/** A reshard job as GET /vectordb/collections/C/reshard answers it. */
export interface ReshardJobBody {
  collection: string;
  state: string;
  old_shards: number;
  new_shards: number;
  documents_migrated: number;
  documents_expected: number | null;
  last_error: string | null;
}

export function asReshardJob(raw: unknown): ReshardJobBody {
  const what = 'reshard job';
  const b = object(raw, what);
  const expected = b.documents_expected;
  const error = b.last_error;
  return {
    collection: field(b, 'collection', what, isString, 'a string'),
    state: field(b, 'state', what, isString, 'a string'),
    old_shards: field(b, 'old_shards', what, isNumber, 'a number'),
    new_shards: field(b, 'new_shards', what, isNumber, 'a number'),
    documents_migrated: field(b, 'documents_migrated', what, isNumber, 'a number'),
    documents_expected: isNumber(expected) ? expected : null,
    last_error: isString(error) ? error : null,
  };
}

/** The answer of POST .../reshard. */
export function asReshardStarted(raw: unknown): { old_shards: number; new_shards: number } {
  const what = 'reshard answer';
  const b = object(raw, what);
  if (b.status !== 'resharding') throw bad(`${what}: status must be "resharding", got ${JSON.stringify(b.status)}`);
  const info = object(b.info, `${what} info`);
  return { old_shards: field(info, 'old_shards', what, isNumber, 'a number'), new_shards: field(info, 'new_shards', what, isNumber, 'a number') };
}

/** One job of GET /_cluster/jobs (the metadata's record; the details the CLI shows). */
export interface JobRow {
  id: string;
  kind: string;
  target: string;
  step: string;
  updatedAtMs: number;
  /** Documents moved so far and toward what (a reshard, a VDB split or merge). */
  moved?: number;
  expected?: number;
  /** What the job does, in words (`2 -> 5 shards`, `split 0 -> 2`). */
  what?: string;
  error?: string;
  cancelRequested?: boolean;
  /** Why the job cannot go on for now (a leave whose replicas have nowhere to go). */
  waiting?: string;
}

function asJob(raw: unknown, i: number): JobRow {
  const what = `job ${i}`;
  const b = object(raw, what);
  const row: JobRow = {
    id: field(b, 'id', what, isString, 'a string'),
    kind: field(b, 'kind', what, isString, 'a string'),
    target: field(b, 'target', what, isString, 'a string'),
    step: field(b, 'step', what, isString, 'a string'),
    updatedAtMs: field(b, 'updatedAtMs', what, isNumber, 'a number'),
  };
  if (isString(b.waiting)) row.waiting = b.waiting;
  const r = typeof b.reshard === 'object' && b.reshard !== null ? (b.reshard as Json) : undefined;
  const v = typeof b.vdb === 'object' && b.vdb !== null ? (b.vdb as Json) : undefined;
  if (r !== undefined) {
    row.what = `${String(r.oldShards)} -> ${String(r.newShards)} shards`;
    if (isNumber(r.migrated)) row.moved = r.migrated;
    if (isNumber(r.expected)) row.expected = r.expected;
    if (isString(r.error)) row.error = r.error;
  }
  if (v !== undefined) {
    row.what = `${String(v.op)} ${String(v.source)} -> ${String(v.target)}`;
    if (isNumber(v.copied)) row.moved = v.copied;
    if (isNumber(v.expected)) row.expected = v.expected;
    if (isString(v.error)) row.error = v.error;
    if (v.cancelRequested === true) row.cancelRequested = true;
  }
  return row;
}

export function asJobs(raw: unknown): JobRow[] {
  const b = object(raw, 'cluster jobs');
  return (field(b, 'jobs', 'cluster jobs', Array.isArray, 'a list') as unknown[]).map(asJob);
}

/** A VDB split or merge as DELETE /vdb/V/_rebalance answers it. */
export interface VdbRebalanceBody {
  vdb: string;
  op: string;
  state: string;
  source: number;
  target: number;
  documents_copied: number;
  last_error: string | null;
}

/** A shard as `GET /vdb/:vdb/_shards` shows it. */
export interface VdbShardRow {
  shard_id: number;
  primary: string | null;
  replicas: string[];
  status: string;
  /** Its hash range, from the answer's `ranges`. */
  range: [number, number] | undefined;
  group?: string;
  lag?: Record<string, number | null>;
  down?: string[];
}

/** What `GET /vdb/:vdb/_shards` answers: each shard with its range. */
export function asVdbShards(raw: unknown): VdbShardRow[] {
  const what = 'VDB shards';
  const b = object(raw, what);
  const ranges = new Map<number, [number, number]>();
  for (const [i, r] of (field(b, 'ranges', what, Array.isArray, 'a list') as unknown[]).entries()) {
    const w = `range ${i}`;
    const o = object(r, w);
    ranges.set(field(o, 'shard_id', w, isNumber, 'a number'), [field(o, 'start_hash', w, isNumber, 'a number'), field(o, 'end_hash', w, isNumber, 'a number')]);
  }
  return (field(b, 'shards', what, Array.isArray, 'a list') as unknown[]).map((raw, i) => {
    const w = `shard ${i}`;
    const r = object(raw, w);
    const id = field(r, 'shard_id', w, isNumber, 'a number');
    return {
      shard_id: id,
      primary: field(r, 'primary', w, isStringOrNull, 'a node name or null'),
      replicas: field(r, 'replicas', w, isStrings, 'a list of names'),
      status: field(r, 'status', w, isString, 'a string'),
      range: ranges.get(id),
      ...(isString(r.group) ? { group: r.group } : {}),
      ...(typeof r.lag === 'object' && r.lag !== null ? { lag: r.lag as Record<string, number | null> } : {}),
      ...(isStrings(r.down) ? { down: r.down } : {}),
    };
  });
}

/** What `DELETE /vdb/:vdb/_import` answers. */
export function asImportCancel(raw: unknown): { cancelled: number } {
  const what = 'import cancel answer';
  return { cancelled: field(object(raw, what), 'cancelled', what, isNumber, 'a number') };
}

export function asVdbRebalance(raw: unknown): VdbRebalanceBody {
  const what = 'VDB rebalance job';
  const b = object(raw, what);
  return {
    vdb: field(b, 'vdb', what, isString, 'a string'),
    op: field(b, 'op', what, isString, 'a string'),
    state: field(b, 'state', what, isString, 'a string'),
    source: field(b, 'source', what, isNumber, 'a number'),
    target: field(b, 'target', what, isNumber, 'a number'),
    documents_copied: field(b, 'documents_copied', what, isNumber, 'a number'),
    last_error: isString(b.last_error) ? b.last_error : null,
  };
}

/** The answer of a VDB split or merge: what happened, in the node's words. */
export function asVdbShardChange(raw: unknown): { message: string; docs_moved: number } {
  const what = 'VDB split or merge answer';
  const b = object(raw, what);
  return { message: field(b, 'message', what, isString, 'a string'), docs_moved: field(b, 'docs_moved', what, isNumber, 'a number') };
}

/** What the CLI reads of a node's GET /health. */
export interface HealthBody {
  status: string;
  node: string;
  problems: string[];
}

export function asHealth(raw: unknown): HealthBody {
  const what = 'health';
  const b = object(raw, what);
  return {
    status: field(b, 'status', what, isString, 'a string'),
    node: field(b, 'node', what, isString, 'a string'),
    problems: b.problems === undefined ? [] : field(b, 'problems', what, isStrings, 'a list of strings'),
  };
}

/**
 * `400/1000 documents` (or `400 documents` toward an unknown total; `between` ' of ' in prose).
 * The total is the count when the job began; writes during the copy can take the copies past
 * it: `1040 documents (1000 when it began)`.
 */
export function documentCount(moved: number, expected: number | undefined, between = '/'): string {
  if (expected === undefined) return `${moved} documents`;
  return moved > expected ? `${moved} documents (${expected} when it began)` : `${moved}${between}${expected} documents`;
}

/** One entry of GET /_active_tasks, cut to what the table shows (the rest is in --json). */
export interface TaskRow {
  type: string;
  /** The node it runs on (a cluster's node lists every member's tasks); '' when not said. */
  node: string;
  /** What it works on: a replication's source -> target, a database, a job's target. */
  what: string;
  /** Progress in words: documents, records walked, a job's step and counts. */
  progress: string;
  updatedOnS: number;
}

export function asTasks(raw: unknown): TaskRow[] {
  if (!Array.isArray(raw)) throw new CliFailure('bad_response', 'active tasks: expected a list');
  return raw.map((entry, i) => {
    const what = `task ${i}`;
    const b = object(entry, what);
    const type = field(b, 'type', what, isString, 'a string');
    const updatedOnS = field(b, 'updated_on', what, isNumber, 'a number');
    const node = isString(b.node) ? b.node : '';
    const n = (name: string) => (isNumber(b[name]) ? (b[name] as number) : 0);
    if (type === 'replication') {
      return { type, node, what: `${String(b.source)} -> ${String(b.target)}${b.continuous === true ? ' (continuous)' : ''}`, progress: `${n('docs_written')} of ${n('docs_read')} documents written${n('doc_write_failures') > 0 ? `, ${n('doc_write_failures')} failed` : ''}`, updatedOnS };
    }
    if (type === 'database_compaction') {
      return { type, node, what: String(b.database), progress: `${n('progress')}% (${n('changes_done')} of ${n('total_changes')} records)`, updatedOnS };
    }
    if (type === 'vdb_import') {
      const more = `${n('docs_skipped') > 0 ? `, ${n('docs_skipped')} skipped` : ''}${n('errors') > 0 ? `, ${n('errors')} errors` : ''}`;
      return { type, node, what: `${String(b.source_db)} -> vdb ${String(b.vdb)}`, progress: `${n('progress')}% (${n('docs_read')} of ${n('total_docs')} read, ${n('docs_written')} written${more})`, updatedOnS };
    }
    const detail = (typeof b.reshard === 'object' && b.reshard !== null ? b.reshard : typeof b.vdb === 'object' && b.vdb !== null ? b.vdb : {}) as Json;
    const moved = isNumber(detail.migrated) ? detail.migrated : isNumber(detail.copied) ? detail.copied : undefined;
    const counts = moved === undefined ? '' : `, ${documentCount(moved, isNumber(detail.expected) ? detail.expected : undefined, ' of ')}`;
    return { type, node, what: String(b.target ?? ''), progress: `${String(b.step ?? '')}${counts}`, updatedOnS };
  });
}
