// What the VDB routes need, served by the node-local engine (`engine.ts`, standalone) or by
// the cluster's Raft-replicated shards (`cluster/doc-shards.ts`).
import { FirkinError } from '../../core/errors.js';
import type { HashFunction } from '../../core/shard-hash.js';
import type { Blob, ParsedDoc } from '../doc-input.js';
import type { AllDocsOptions, AllDocsRow, EditResult, GetDocOptions } from '../engine.js';
import { type FindQuery, pageEnd } from '../query/ast.js';
import type { ImportStatus } from './import.js';
import type { ImportTasks } from './import-tasks.js';
import type { MergedFind } from './merge.js';
import type { AttachmentMeta } from '../records.js';
import type { BulkGetRequest, BulkGetResult } from '../replication/bulk-get.js';
import type { RevsDiff } from '../replication/endpoints.js';

type Awaitable<T> = T | Promise<T>;

export interface CreateVdb {
  name: string;
  shardCount: number;
  hashFunction: HashFunction;
  replicaFactor: number;
  zones: readonly string[];
}

export interface VdbChangesOptions {
  /** As the client sent it: first, 0, now, or a `last_seq` of this feed. */
  since: string | undefined;
  limit: number | undefined;
  includeDocs: boolean;
  /** With `includeDocs`: each document's `_conflicts` (CouchDB's `conflicts=true`). */
  conflicts?: boolean;
  /** Long-poll: with nothing new, wait up to `timeoutMs` for a change (or until `signal`). */
  longpoll?: { readonly timeoutMs: number; readonly signal?: AbortSignal };
  /** CouchDB's `style=all_docs`: each change also lists every leaf revision (`revs`). */
  allLeaves?: boolean;
  /**
   * Each change's `seq` resumes the feed right after it as `since` (CouchDB's clustered
   * sequences: PouchDB checkpoints a change's seq). A standalone node's sequences already do.
   */
  cursorSeqs?: boolean;
  /** CouchDB's `_doc_ids` filter: only changes of these ids. */
  docIds?: readonly string[];
  /** CouchDB's `_selector` filter (a `_find` selector, checked by the caller): only changes whose document matches. */
  selector?: unknown;
}

/** A change as the VDB feed lists it; `revs` (every leaf) when `allLeaves` was asked. */
export interface VdbChange {
  id: string;
  seq: string;
  rev: string;
  deleted: boolean;
  doc?: unknown;
  revs?: string[];
}

/** A page of the VDB feed (the spec's shape). */
export interface VdbChangesPage {
  changes: VdbChange[];
  last_seq: string;
}

/** The error for a VDB name nothing is known by (both engines and the routes). */
export const notFoundVdb = (name: string): FirkinError => new FirkinError('not_found', `virtual database ${JSON.stringify(name)} does not exist`);

/** The id a `_local/<id>` document is routed by: its shard holds it (docs/vdb.md). */
export const localRouteId = (id: string): string => `_local/${id}`;

/** What a `_local` write answers. */
export interface LocalWriteResult {
  ok: true;
  id: string;
  rev: string;
}

export interface ImportSpec {
  sourceDb: string;
  filter: FindQuery | undefined;
  batchSize: number;
  onConflict: 'skip' | 'overwrite' | 'merge';
  /** This node's running imports (`_active_tasks`): the import is listed there until it answers. */
  tasks: ImportTasks;
}

/** A VDB document read's options: a database's, each answered by the shard that owns the id. */
export type VdbGetOptions = GetDocOptions;

/** How a clustered VDB's read is answered: `stale`, by any replica of the shard from what it applied. */
export interface VdbRead {
  readonly stale?: boolean;
}

/** An attachment of a revision: its metadata and its bytes in chunks. */
export interface VdbAttachment {
  meta: AttachmentMeta;
  rev: string;
  chunks: () => AsyncIterable<Buffer>;
}

/**
 * A VDB's `_all_docs`: by `keys` (in their order), else a database's listing options over the
 * id range; `conflicts` (with `includeDocs`): `_conflicts` on each document that has any.
 */
export type VdbAllDocsQuery = AllDocsOptions & { readonly keys?: readonly string[]; readonly conflicts: boolean };

/** CouchDB's `_all_docs` answer; `total_rows` counts every shard's documents; the rows stream. */
export interface VdbAllDocs {
  total_rows: number;
  offset: number;
  rows: AsyncIterable<AllDocsRow> | AllDocsRow[];
}

/** What `_import` answers. */
export interface ImportResult {
  docs_read: number;
  docs_written: number;
  docs_skipped: number;
  errors: number;
  started_at: number;
  finished_at: number;
  status: ImportStatus;
}

export interface VdbService {
  create(spec: CreateVdb): Promise<unknown>;
  list(): string[];
  /** Whether the VDB exists (no shard is asked). */
  has(name: string): boolean;
  info(name: string): Awaitable<Record<string, unknown>>;
  delete(name: string): Promise<void>;
  shards(name: string): Awaitable<Record<string, unknown>>;
  replication(name: string): Awaitable<Record<string, unknown>>;
  import(name: string, spec: ImportSpec): Promise<ImportResult>;
  split(name: string, shardId: number, batchSize: number): Promise<Record<string, unknown>>;
  merge(name: string, shardId: number, targetShard: number, batchSize: number): Promise<Record<string, unknown>>;
  /** Cancel the split or merge running (a cluster's job, before its switch); a standalone one runs inside its request: not_found. */
  cancelRebalance(name: string): Promise<Record<string, unknown>>;
  setShardStatus(name: string, shardId: number, status: 'readonly' | 'active'): Promise<{ shard_id: number; status: string }>;
  /** `newEdits: false`: foreign revisions with their history (the replicator's write). */
  bulkDocs(name: string, docs: readonly unknown[], newEdits: boolean): Promise<EditResult[]>;
  /** `_find` from its request body; `stale`: any replica may answer from what it applied (cluster). */
  find(name: string, raw: unknown, options?: { stale?: boolean }): Promise<MergedFind>;
  /** `_explain` from a `_find` body: each live shard's plan for its part (`vdbExplain`). */
  explain(name: string, raw: unknown): Promise<Record<string, unknown>>;
  changes(name: string, options: VdbChangesOptions): Promise<VdbChangesPage>;
  /** CouchDB's `_revs_diff`: each id's revisions the VDB lacks (asked of the shard that owns it). */
  revsDiff(name: string, request: Readonly<Record<string, readonly string[]>>): Promise<RevsDiff>;
  /** CouchDB's `_bulk_get`, each entry read on the shard that owns its id; results in order. */
  bulkGet(name: string, entries: readonly BulkGetRequest[], options: { revs: boolean; attachments: boolean }): Promise<BulkGetResult[]>;
  /** `_local/<id>` documents (replication checkpoints), each held by the shard `localRouteId` routes to. */
  getLocal(name: string, id: string): Promise<Record<string, unknown> | undefined>;
  putLocal(name: string, id: string, body: unknown, rev: string | undefined): Promise<LocalWriteResult>;
  deleteLocal(name: string, id: string, rev: string | undefined): Promise<LocalWriteResult>;
  /** Every `_local` document as stored (`[id, value]`, any order), each from the shard that owns it: CouchDB's `_local_docs`. */
  localDocs(name: string): Promise<[string, Uint8Array][]>;
  /** `_all_docs` over every shard, merged by id (node-local shards, or each shard's leader). */
  allDocs(name: string, q: VdbAllDocsQuery): Promise<VdbAllDocs>;
  /** `read`: on a cluster, which replica may answer (node-local shards have one). */
  getDoc(name: string, id: string, options: VdbGetOptions, read?: VdbRead): Promise<Record<string, unknown>>;
  putDoc(name: string, id: string, doc: ParsedDoc, rev: string | undefined): Promise<EditResult & { ok: true }>;
  deleteDoc(name: string, id: string, rev: string): Promise<EditResult & { ok: true }>;
  /** Add or replace (`blob`) or remove (`undefined`) one attachment: a document update. */
  putAttachment(name: string, id: string, attName: string, rev: string | undefined, blob: Blob | undefined): Promise<EditResult & { ok: true }>;
  /** An attachment of the winner (or of `rev`). */
  getAttachment(name: string, id: string, attName: string, rev: string | undefined): Promise<VdbAttachment>;
  /** Drop kept non-leaf bodies on every shard (resolves when every shard finished). */
  compact(name: string): Promise<void>;
}

/**
 * A VDB's `_explain`: every live shard plans the query as `_find` sends it there (offset 0,
 * limit offset + limit, `shard_limit`), each with its own counts; `plans` in shard order.
 */
export function vdbExplain(q: FindQuery, plans: readonly { shardId: number; plan: Record<string, unknown> }[]): Record<string, unknown> {
  return {
    shards: plans.map(({ shardId, plan }) => ({ shard_id: shardId, ...plan })),
    limit: q.limit ?? null,
    offset: q.offset,
    shard_limit: pageEnd(q) ?? null,
    order_by: q.orderBy,
  };
}
