// Virtual databases: /vdb and /vdb/:vdb/...
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { LIMITS } from '../../docdb/names.js';
import { answerWhenDone } from '../long-answer.js';
import { clientGone, parseHeartbeat, serveFeed } from '../feed-stream.js';
import { changeFilterFrom, checkCouchFilter } from '../../docdb/query/change-filter.js';
import { FirkinError } from '../../core/errors.js';
import { parseDoc } from '../../docdb/doc-input.js';
import { checkDocId } from '../../docdb/names.js';
import { openRevsLatest, treeOfLeaves } from '../../docdb/revtree.js';
import { parseFind } from '../../docdb/query/parse.js';
import { findAnswer } from '../../docdb/query/stats.js';
import { HASH_FUNCTIONS } from '../../core/shard-hash.js';
import { VDB_LIMITS } from '../../docdb/vdb/engine.js';
import type { ImportTasks } from '../../docdb/vdb/import-tasks.js';
import type { PeerTasks } from '../../cluster/peer-tasks.js';
import { type VdbChange, type VdbChangesPage, type VdbRead, type VdbService, notFoundVdb } from '../../docdb/vdb/service.js';
import { type BulkGetRequest, bulkGetBody, bulkGetQuery } from '../../docdb/replication/bulk-get.js';
import { localDocsRows } from '../../docdb/replication/local-docs.js';
import {
  type AllDocsQuery,
  type DocSource,
  type GetDocQuery,
  allDocsBody,
  allDocsQuery,
  allDocsRequest,
  answerCopy,
  answerDelete,
  answerDocGet,
  expectedRev,
  getDocQuery,
  hasLiveWinner,
  parseDocIds,
  refuseDocumentDeleteOnDatabase,
  revsDiffBody,
  sendRows,
} from './docdb-shared.js';
import { READ, keyAllows, requireKey } from '../hooks/auth.js';
import { indexRoutes } from './couchdb-index.js';

export interface VdbRouteDeps {
  /** The node-local engine, or the cluster's replicated shards (per request: the cluster side starts after HTTP). */
  vdbs: () => VdbService;
  defaults: { shardCount: number; replicaFactor: number; batchSize: number };
  /** Default SSE heartbeat (SERVICE_STREAM_HEARTBEAT_MS). */
  heartbeatMs: number;
  /** After this long, `_import`, `_split` and `_merge` answer as a keep-alive stream (long-answer.ts; SERVICE_REPLICATION_KEEPALIVE_MS). */
  keepAliveMs: number;
  /** This node's running imports, which `_active_tasks` lists. */
  imports: ImportTasks;
  /** The other members, to cancel imports running there; undefined on a standalone node (or before it joined). */
  peers?: () => Pick<PeerTasks, 'cancelImports'> | undefined;
}

const vdbParams = { type: 'object', required: ['vdb'], properties: { vdb: { type: 'string', maxLength: 200 } } } as const;
const docParams = { type: 'object', required: ['vdb', 'docid'], properties: { vdb: { type: 'string', maxLength: 200 }, docid: { type: 'string' } } } as const;
/** A document GET's query, and `consistency` (`stale`: any replica may answer, on a cluster). */
const vdbGetDocQuery = { ...getDocQuery, properties: { ...getDocQuery.properties, consistency: { enum: ['linearizable', 'stale'] } } } as const;
const shardParams = { type: 'object', required: ['vdb', 'shard'], properties: { vdb: { type: 'string', maxLength: 200 }, shard: { type: 'integer', minimum: 0 } } } as const;

const createBody = {
  type: 'object',
  required: ['name'],
  additionalProperties: false,
  properties: {
    name: { type: 'string' },
    shard_count: { type: 'integer', minimum: 1, maximum: VDB_LIMITS.shardCountMax },
    hash_function: { enum: HASH_FUNCTIONS },
    placement: {
      type: 'object',
      additionalProperties: false,
      properties: {
        replica_factor: { type: 'integer', minimum: 1, maximum: VDB_LIMITS.replicaFactorMax },
        zones: { type: 'array', maxItems: VDB_LIMITS.zonesMax, items: { type: 'string', minLength: 1, maxLength: 100 } },
      },
    },
  },
} as const;

const batchSize = { type: 'integer', minimum: 1, maximum: VDB_LIMITS.batchSizeMax } as const;
const importBody = {
  type: 'object',
  required: ['source_db'],
  additionalProperties: false,
  properties: { source_db: { type: 'string' }, filter: { type: 'object' }, batch_size: batchSize, on_conflict: { enum: ['skip', 'overwrite', 'merge'] } },
} as const;

interface VdbChangesQuery {
  since?: string;
  limit?: number;
  include_docs?: boolean;
  feed?: 'normal' | 'longpoll' | 'eventsource' | 'continuous';
  timeout?: number;
  /** Milliseconds, or `true` (60 s). */
  heartbeat?: string;
  style?: 'main_only' | 'all_docs';
  doc_ids?: string;
  filter?: string;
  conflicts?: boolean;
  attachments?: boolean;
  descending?: boolean;
}

const vdbChangesQuery = {
  type: 'object',
  properties: {
    since: { type: 'string' },
    limit: { type: 'integer', minimum: 0, maximum: 100_000 },
    include_docs: { type: 'boolean' },
    feed: { enum: ['normal', 'longpoll', 'eventsource', 'continuous'] },
    timeout: { type: 'integer', minimum: 0, maximum: LIMITS.longPollTimeoutMsMax },
    heartbeat: { type: 'string' },
    style: { enum: ['main_only', 'all_docs'] },
    doc_ids: { type: 'string' },
    filter: { type: 'string' },
    conflicts: { type: 'boolean' },
    attachments: { type: 'boolean' },
    descending: { type: 'boolean' },
  },
} as const;

/** POST `_changes`: CouchDB's filters in a body (its fields win over the query string's). */
interface VdbChangesBody {
  doc_ids?: string[];
  selector?: Record<string, unknown>;
  since?: string | number;
  limit?: number;
  include_docs?: boolean;
}

const vdbChangesBody = {
  type: 'object',
  additionalProperties: false,
  properties: {
    doc_ids: { type: 'array', maxItems: LIMITS.bulkDocsMax, items: { type: 'string' } },
    selector: { type: 'object' },
    since: { anyOf: [{ type: 'string' }, { type: 'integer', minimum: 0, maximum: 0 }] },
    limit: { type: 'integer', minimum: 0, maximum: 100_000 },
    include_docs: { type: 'boolean' },
  },
} as const;

const localParams = { type: 'object', required: ['vdb', 'id'], properties: { vdb: { type: 'string', maxLength: 200 }, id: { type: 'string' } } } as const;
const revQuery = { type: 'object', properties: { rev: { type: 'string' } } } as const;

const admin = { permission: 'admin' as const, databaseParam: 'vdb' };
const scoped = { databaseParam: 'vdb' };

interface CreateBody {
  name: string;
  shard_count?: number;
  hash_function?: 'phash2' | 'xxhash';
  placement?: { replica_factor?: number; zones?: string[] };
}

export const vdbRoutes: FastifyPluginAsync<VdbRouteDeps> = async (app, { vdbs: service, defaults, heartbeatMs, keepAliveMs, imports, peers }) => {
  const vdbs = () => service();
  // The name is in the body, so the hook checks only that the key writes; creating a VDB is
  // its admin's act (as deleting it is): admin on that name, or on every database.
  app.post<{ Body: CreateBody }>('/vdb', { schema: { body: createBody } }, async (request, reply) => {
    const b = request.body;
    requireKey(request, 'admin', b.name);
    await vdbs().create({
      name: b.name,
      shardCount: b.shard_count ?? defaults.shardCount,
      hashFunction: b.hash_function ?? 'phash2',
      replicaFactor: b.placement?.replica_factor ?? defaults.replicaFactor,
      zones: b.placement?.zones ?? [],
    });
    reply.code(201);
    return { ok: true, ...(await vdbs().info(b.name)) };
  });

  // The VDBs the key may read (as GET /_all_dbs lists databases): a scoped key sees its own.
  app.get('/vdb', async (request) => {
    const readable = vdbs().list().filter((name) => keyAllows(request, 'read', name));
    return { vdbs: await Promise.all(readable.map((name) => vdbs().info(name))) };
  });
  app.get<{ Params: { vdb: string } }>('/vdb/:vdb', { schema: { params: vdbParams }, config: scoped }, async (r) => vdbs().info(r.params.vdb));
  app.delete<{ Params: { vdb: string } }>('/vdb/:vdb', { schema: { params: vdbParams }, config: admin }, async (r) => {
    refuseDocumentDeleteOnDatabase(r);
    await vdbs().delete(r.params.vdb);
    return { ok: true };
  });
  app.get<{ Params: { vdb: string } }>('/vdb/:vdb/_shards', { schema: { params: vdbParams }, config: scoped }, async (r) => vdbs().shards(r.params.vdb));
  app.get<{ Params: { vdb: string } }>('/vdb/:vdb/_replication', { schema: { params: vdbParams }, config: scoped }, async (r) => vdbs().replication(r.params.vdb));

  app.post<{ Params: { vdb: string }; Body: { source_db: string; filter?: unknown; batch_size?: number; on_conflict?: 'skip' | 'overwrite' | 'merge' } }>(
    '/vdb/:vdb/_import',
    { schema: { params: vdbParams, body: importBody }, config: scoped },
    async (r, reply) => {
      const b = r.body;
      // Importing reads the source: the key must be allowed to, or a write key on a VDB would
      // copy in (then read) any database.
      requireKey(r, 'read', b.source_db);
      const filter = b.filter === undefined ? undefined : parseFind(b.filter);
      const run = vdbs().import(r.params.vdb, { sourceDb: b.source_db, filter, batchSize: b.batch_size ?? defaults.batchSize, onConflict: b.on_conflict ?? 'skip', tasks: imports });
      return answerWhenDone(run, keepAliveMs, r, reply);
    },
  );

  // Cancel the imports of a VDB (each runs inside its request, on the node that took it, which
  // `GET /_active_tasks` names): this node's, and on a cluster every other member's. Each
  // answers `cancelled` with its counts.
  app.delete<{ Params: { vdb: string } }>('/vdb/:vdb/_import', { schema: { params: vdbParams }, config: scoped }, async (r) => {
    const name = JSON.stringify(r.params.vdb);
    const here = imports.cancel(r.params.vdb);
    const others = await peers?.()?.cancelImports(r.params.vdb);
    if (others === undefined) {
      if (here === 0) throw new FirkinError('not_found', `no import into VDB ${name} is running on this node`);
      return { ok: true, cancelled: here };
    }
    const cancelled = here + others.cancelled;
    if (cancelled === 0) {
      const unsure = [
        others.unreachable.length === 0 ? '' : `; ${others.unreachable.join(', ')} did not answer`,
        others.older.length === 0 ? '' : `; ${others.older.join(', ')} ${others.older.length === 1 ? 'runs' : 'run'} an older Firkin and ${others.older.length === 1 ? 'was' : 'were'} not asked: cancel there`,
      ].join('');
      throw new FirkinError('not_found', `no import into VDB ${name} is running on any member${unsure}`);
    }
    return { ok: true, cancelled };
  });

  app.post<{ Params: { vdb: string; shard: number }; Body: { batch_size?: number } | undefined }>(
    '/vdb/:vdb/_shards/:shard/_split',
    { schema: { params: shardParams, body: { type: ['object', 'null'], additionalProperties: false, properties: { batch_size: batchSize } } }, config: admin },
    async (r, reply) => answerWhenDone(vdbs().split(r.params.vdb, r.params.shard, r.body?.batch_size ?? defaults.batchSize), keepAliveMs, r, reply),
  );

  app.post<{ Params: { vdb: string; shard: number }; Body: { target_shard: number; batch_size?: number } }>(
    '/vdb/:vdb/_shards/:shard/_merge',
    {
      schema: {
        params: shardParams,
        body: { type: 'object', required: ['target_shard'], additionalProperties: false, properties: { target_shard: { type: 'integer', minimum: 0 }, batch_size: batchSize } },
      },
      config: admin,
    },
    async (r, reply) => answerWhenDone(vdbs().merge(r.params.vdb, r.params.shard, r.body.target_shard, r.body.batch_size ?? defaults.batchSize), keepAliveMs, r, reply),
  );

  // Cancel the running split or merge (a cluster's job, before its switch): 200 with the job as it ended.
  app.delete<{ Params: { vdb: string } }>('/vdb/:vdb/_rebalance', { schema: { params: vdbParams }, config: admin }, async (r) => vdbs().cancelRebalance(r.params.vdb));

  app.put<{ Params: { vdb: string; shard: number }; Body: { status: 'readonly' | 'active' } }>(
    '/vdb/:vdb/_shards/:shard/_status',
    {
      schema: {
        params: shardParams,
        body: { type: 'object', required: ['status'], additionalProperties: false, properties: { status: { enum: ['readonly', 'active'] } } },
      },
      config: admin,
    },
    async (r) => vdbs().setShardStatus(r.params.vdb, r.params.shard, r.body.status),
  );

  app.post<{ Params: { vdb: string }; Body: { docs: unknown[]; new_edits?: boolean } }>(
    '/vdb/:vdb/_bulk_docs',
    { schema: { params: vdbParams, body: { type: 'object', required: ['docs'], properties: { docs: { type: 'array', maxItems: 10_000 }, new_edits: { type: 'boolean' } } } }, config: scoped },
    async (r, reply) => {
      const results = await vdbs().bulkDocs(r.params.vdb, r.body.docs, r.body.new_edits !== false);
      reply.code(201);
      // A replicator's write (`new_edits: false`) answers as a database's, CouchDB's array:
      // PouchDB and CouchDB replicators read it so. Ordinary writes keep the spec's shape.
      return r.body.new_edits === false ? results : { results };
    },
  );

  // As for a database: 202 at once, the pass runs in the background (on a cluster, one log
  // entry per shard, applied at the same index by every replica).
  app.post<{ Params: { vdb: string } }>('/vdb/:vdb/_compact', { schema: { params: vdbParams }, config: admin }, async (r, reply) => {
    const service = vdbs();
    await service.info(r.params.vdb);
    void service.compact(r.params.vdb).catch((err: unknown) => r.log.error({ vdb: r.params.vdb, err }, 'VDB compaction failed'));
    reply.code(202);
    return { ok: true };
  });

  // `?consistency=stale`: on a cluster, each shard answers from a local replica when there is
  // one (no leader round trip, may miss the latest writes); the default reads every leader.
  app.post<{ Params: { vdb: string }; Querystring: { consistency?: 'linearizable' | 'stale' } }>(
    '/vdb/:vdb/_find',
    { schema: { params: vdbParams, querystring: { type: 'object', properties: { consistency: { enum: ['linearizable', 'stale'] } } } }, config: { ...scoped, ...READ } },
    async (r) => {
      const started = performance.now();
      const result = await vdbs().find(r.params.vdb, r.body, { stale: r.query.consistency === 'stale' });
      // The body parsed (or refused) already: only the flag is read again.
      return findAnswer(result, (r.body as { execution_stats?: unknown } | null)?.execution_stats === true, performance.now() - started);
    },
  );

  // What `_find` would run on each shard (docs/query.md's `_explain`, one plan a shard).
  app.post<{ Params: { vdb: string } }>('/vdb/:vdb/_explain', { schema: { params: vdbParams }, config: { ...scoped, ...READ } }, async (r) => vdbs().explain(r.params.vdb, r.body));

  // CouchDB's index routes, answered as a database's (docs/query.md: every field is indexed).
  indexRoutes(app, { base: '/vdb/:vdb', param: 'vdb', nameSchema: vdbParams.properties.vdb, config: scoped, requireDb: (name) => vdbs().info(name) });

  // Poll, long-poll (`feed=longpoll`, `timeout` ms) and server-sent events (`feed=eventsource`:
  // each page's last event carries the feed's cursor as its `id`, so EventSource resumes).
  // CouchDB's filters: `doc_ids` (query or body, `filter=_doc_ids`) and a body `selector`
  // (`filter=_selector`), applied on each shard.
  const changesAnswer = async (r: FastifyRequest<{ Params: { vdb: string }; Querystring: VdbChangesQuery }>, reply: FastifyReply, body: VdbChangesBody) => {
    const q = r.query;
    const name = r.params.vdb;
    const docIds = body.doc_ids ?? (q.doc_ids === undefined ? undefined : [...parseDocIds(q.doc_ids)!]);
    const selector = body.selector;
    checkCouchFilter(q.filter, { docIds: docIds !== undefined, selector: selector !== undefined });
    // A bad selector is the client's 400 before any shard is asked.
    if (selector !== undefined) changeFilterFrom(undefined, undefined, selector);
    const filters = { ...(docIds === undefined ? {} : { docIds }), ...(selector === undefined ? {} : { selector }) };
    const since = body.since === undefined ? q.since : String(body.since);
    const includeDocs = (body.include_docs ?? q.include_docs) === true;
    // A page of documents with their attachments inline could not be bounded (as on `_all_docs`).
    if (q.attachments === true) throw new FirkinError('bad_request', 'attachments=true is not offered on a VDB feed: read a document with ?attachments=true, or its attachments one by one');
    // The shards' feeds are merged oldest first; answering ascending to a client that asked
    // for the newest first would hand it the wrong end of the feed.
    if (q.descending === true) throw new FirkinError('bad_request', 'descending=true is not offered on a VDB feed: read it oldest first (since=now follows new changes)');
    const conflicts = includeDocs && q.conflicts === true;
    if (q.feed !== 'eventsource' && q.feed !== 'continuous') {
      const gone = clientGone(r, reply);
      const longpoll = q.feed === 'longpoll' ? { timeoutMs: q.timeout ?? LIMITS.longPollTimeoutMsDefault, signal: gone.signal } : undefined;
      const page = await vdbs().changes(name, { since, limit: body.limit ?? q.limit, includeDocs, conflicts, longpoll, allLeaves: q.style === 'all_docs', cursorSeqs: q.style !== undefined, ...filters });
      // `style` is a CouchDB replicator's parameter: it gets CouchDB's shape (`results`, each
      // change's revisions in `changes`); without it, the spec's.
      return q.style === undefined ? page : couchChanges(page);
    }
    // A feed that stays open: server-sent events (each page's last event carries the cursor as
    // its `id`), or CouchDB's continuous feed (a JSON line per change in CouchDB's shape, each
    // `seq` a cursor; an empty line per heartbeat; without a heartbeat it ends after `timeout`
    // without a change, and after `limit` changes, with a `{"last_seq"}` line).
    const continuous = q.feed === 'continuous';
    const total = continuous ? (body.limit ?? q.limit) : undefined;
    const heartbeat = parseHeartbeat(q.heartbeat);
    const couch = continuous ? { allLeaves: q.style === 'all_docs', cursorSeqs: true } : {};
    const feed = vdbs();
    // The first page answers errors (unknown VDB, bad since) as a plain HTTP error.
    let first: VdbChangesPage | undefined = await feed.changes(name, { since, limit: total === undefined ? LIMITS.streamPageSize : Math.min(LIMITS.streamPageSize, total), includeDocs, conflicts, ...couch, ...filters });
    let cursor = first.last_seq;
    await serveFeed(r, reply, {
      format: continuous ? 'continuous' : 'sse',
      heartbeatMs: continuous ? heartbeat : (heartbeat ?? heartbeatMs),
      // CouchDB: a heartbeat keeps a continuous feed open; without one it ends after `timeout` idle.
      ...(continuous && heartbeat === undefined ? { idleMs: q.timeout ?? LIMITS.longPollTimeoutMsDefault } : {}),
      ...(total === undefined ? {} : { limit: total }),
      lastSeq: cursor,
      next: async (limit, waitMs, signal) => {
        const page = first ?? (await feed.changes(name, { since: cursor, limit, includeDocs, conflicts, longpoll: { timeoutMs: waitMs, signal }, ...couch, ...filters }));
        first = undefined;
        cursor = page.last_seq;
        // Each SSE page's last event carries the feed's cursor as its `id`: EventSource resumes from it.
        const last = page.changes.length - 1;
        return { lines: page.changes.map((c, i) => (continuous ? `${JSON.stringify(couchChange(c))}\n` : `${i === last ? `id: ${cursor}\n` : ''}event: change\ndata: ${JSON.stringify(c)}\n\n`)), lastSeq: cursor };
      },
    });
  };
  app.get<{ Params: { vdb: string }; Querystring: VdbChangesQuery }>('/vdb/:vdb/_changes', { schema: { params: vdbParams, querystring: vdbChangesQuery }, config: scoped }, (r, reply) =>
    changesAnswer(r, reply, {}),
  );
  app.post<{ Params: { vdb: string }; Querystring: VdbChangesQuery; Body: VdbChangesBody | undefined }>(
    '/vdb/:vdb/_changes',
    { schema: { params: vdbParams, querystring: vdbChangesQuery, body: vdbChangesBody }, config: { ...scoped, ...READ } },
    (r, reply) => changesAnswer(r, reply, r.body ?? {}),
  );

  // ---- CouchDB's replication protocol: a VDB is a replication source and target (docs/vdb.md)
  app.post<{ Params: { vdb: string }; Body: Record<string, string[]> }>(
    '/vdb/:vdb/_revs_diff',
    { schema: { params: vdbParams, body: revsDiffBody }, config: { ...scoped, ...READ } },
    async (r) => vdbs().revsDiff(r.params.vdb, r.body),
  );

  app.post<{ Params: { vdb: string }; Querystring: { revs?: boolean; attachments?: boolean }; Body: { docs: BulkGetRequest[] } }>(
    '/vdb/:vdb/_bulk_get',
    { schema: { params: vdbParams, body: bulkGetBody, querystring: bulkGetQuery }, config: { ...scoped, ...READ } },
    async (r) => ({ results: await vdbs().bulkGet(r.params.vdb, r.body.docs, { revs: r.query.revs === true, attachments: r.query.attachments === true }) }),
  );

  // Every write is durable (a majority's, on a cluster) before it is acknowledged: nothing to
  // flush. Older replicators call it after every batch: no shard is asked.
  app.post<{ Params: { vdb: string } }>('/vdb/:vdb/_ensure_full_commit', { schema: { params: vdbParams }, config: scoped }, async (r, reply) => {
    if (!vdbs().has(r.params.vdb)) throw notFoundVdb(r.params.vdb);
    reply.code(201);
    return { ok: true, instance_start_time: '0' };
  });

  app.get<{ Params: { vdb: string; id: string } }>('/vdb/:vdb/_local/:id', { schema: { params: localParams }, config: scoped }, async (r) => {
    const doc = await vdbs().getLocal(r.params.vdb, r.params.id);
    if (doc === undefined) throw new FirkinError('not_found', `local document _local/${r.params.id} not found`);
    return doc;
  });
  app.put<{ Params: { vdb: string; id: string }; Querystring: { rev?: string }; Body: unknown }>(
    '/vdb/:vdb/_local/:id',
    { schema: { params: localParams, querystring: revQuery }, config: scoped },
    async (r, reply) => {
      const result = await vdbs().putLocal(r.params.vdb, r.params.id, r.body, r.query.rev);
      reply.code(201);
      return result;
    },
  );
  app.delete<{ Params: { vdb: string; id: string }; Querystring: { rev?: string } }>(
    '/vdb/:vdb/_local/:id',
    { schema: { params: localParams, querystring: revQuery }, config: scoped },
    async (r) => vdbs().deleteLocal(r.params.vdb, r.params.id, r.query.rev),
  );

  // ---- _all_docs: every shard's pages merged by id, streamed (docs/vdb.md)
  const allDocsAnswer = async (request: FastifyRequest, reply: FastifyReply, q: AllDocsQuery, bodyKeys: readonly string[] | undefined) => {
    if (q.attachments === true) throw new FirkinError('bad_request', 'attachments=true is not offered on a VDB listing: read a document with ?attachments=true, or its attachments one by one');
    const { keys, range } = allDocsRequest(q, bodyKeys);
    const answer = await vdbs().allDocs((request.params as { vdb: string }).vdb, { ...range, ...(keys === undefined ? {} : { keys }), conflicts: q.conflicts === true });
    return sendRows(request, reply, { total_rows: answer.total_rows, offset: answer.offset }, answer.rows);
  };
  app.get<{ Params: { vdb: string }; Querystring: AllDocsQuery }>('/vdb/:vdb/_all_docs', { schema: { params: vdbParams, querystring: allDocsQuery }, config: scoped }, (request, reply) =>
    allDocsAnswer(request, reply, request.query, undefined),
  );
  app.post<{ Params: { vdb: string }; Querystring: AllDocsQuery; Body: { keys?: string[] } | undefined }>(
    '/vdb/:vdb/_all_docs',
    { schema: { params: vdbParams, querystring: allDocsQuery, body: allDocsBody }, config: { ...scoped, ...READ } },
    (request, reply) => allDocsAnswer(request, reply, request.query, request.body?.keys),
  );

  // CouchDB's `_local_docs`: the checkpoints of every shard, listed as a database's (`_all_docs`'s
  // parameters over the full ids; `total_rows` and `offset` null, as CouchDB answers).
  const localDocsAnswer = async (name: string, q: AllDocsQuery, bodyKeys: readonly string[] | undefined) => {
    const { keys, range } = allDocsRequest(q, bodyKeys);
    return { total_rows: null, offset: null, rows: localDocsRows(await vdbs().localDocs(name), range, keys) };
  };
  app.get<{ Params: { vdb: string }; Querystring: AllDocsQuery }>('/vdb/:vdb/_local_docs', { schema: { params: vdbParams, querystring: allDocsQuery }, config: scoped }, (request) =>
    localDocsAnswer(request.params.vdb, request.query, undefined),
  );
  app.post<{ Params: { vdb: string }; Querystring: AllDocsQuery; Body: { keys?: string[] } | undefined }>(
    '/vdb/:vdb/_local_docs',
    { schema: { params: vdbParams, querystring: allDocsQuery, body: allDocsBody }, config: { ...scoped, ...READ } },
    (request) => localDocsAnswer(request.params.vdb, request.query, request.body?.keys),
  );

  // ---- documents, routed by hash
  /** A VDB's document as GET and COPY read it, each read through the shard that owns the id. */
  const vdbDocSource = (name: string, id: string, read: VdbRead = {}): DocSource => ({
    getDoc: (options) => vdbs().getDoc(name, id, options, read),
    attachment: (att, rev) => vdbs().getAttachment(name, id, att, rev),
    openRevs: async (wanted, latest) => {
      // The leaves: the winner and the others, live and deleted.
      const leavesOf = async () => {
        const winner = await vdbs().getDoc(name, id, { conflicts: true, deletedConflicts: true, deleted: true }, read);
        return [winner._rev, ...((winner._conflicts ?? []) as string[]), ...((winner._deleted_conflicts ?? []) as string[])] as string[];
      };
      if (wanted === 'all') return leavesOf();
      if (!latest) return [...wanted];
      // Every leaf descending from each asked revision, as a database answers: the tree is
      // rebuilt from the leaves' histories (reads the shards have always served).
      let leaves: string[];
      try {
        leaves = await leavesOf();
      } catch (err) {
        if (err instanceof FirkinError && err.code === 'not_found') return [...wanted];
        throw err;
      }
      const histories = await Promise.all(
        leaves.map(async (rev) => {
          const doc = await vdbs().getDoc(name, id, { rev, revs: true }, read);
          return { revisions: doc._revisions as { start: number; ids: string[] }, deleted: doc._deleted === true };
        }),
      );
      return openRevsLatest(treeOfLeaves(histories), wanted);
    },
  });

  // A database's read options (docs/docdb.md), each answered through the shard that owns the id;
  // `consistency=stale`: on a cluster, by any replica of it (as `_find`'s), this node's first.
  app.get<{ Params: { vdb: string; docid: string }; Querystring: GetDocQuery & { consistency?: 'linearizable' | 'stale' } }>(
    '/vdb/:vdb/:docid',
    { schema: { params: docParams, querystring: vdbGetDocQuery }, config: scoped },
    async (r, reply) => answerDocGet(vdbDocSource(r.params.vdb, checkDocId(r.params.docid), { stale: r.query.consistency === 'stale' }), r.query, reply),
  );

  app.put<{ Params: { vdb: string; docid: string }; Querystring: { rev?: string; new_edits?: boolean }; Body: unknown }>(
    '/vdb/:vdb/:docid',
    { schema: { params: docParams, querystring: { type: 'object', properties: { rev: { type: 'string' }, new_edits: { type: 'boolean' } } } }, config: scoped },
    async (r, reply) => {
      const id = checkDocId(r.params.docid);
      const doc = parseDoc(r.body);
      if (doc.id !== undefined && doc.id !== id) throw new FirkinError('bad_request', `body id ${JSON.stringify(doc.id)} differs from the path id ${JSON.stringify(id)}`);
      if (r.query.new_edits === false) {
        // A replicated revision, as a database's PUT takes it (routes/docdb.ts): the bulk path's
        // replicated write, which routes it to its shard and checks `_rev` and `_revisions`.
        if (doc.rev === undefined) throw new FirkinError('bad_request', 'with new_edits=false the document needs _rev');
        const [result] = await vdbs().bulkDocs(r.params.vdb, [{ ...(r.body as object), _id: id }], false);
        if (result === undefined || !result.ok) throw new FirkinError((result?.error ?? 'bad_request') as FirkinError['code'], result?.message ?? 'the revision was not written');
        reply.code(201).header('etag', `"${result.rev}"`);
        return result;
      }
      const rev = expectedRev({ ifMatch: r.headers['if-match'], query: r.query.rev, body: doc.rev });
      const result = await vdbs().putDoc(r.params.vdb, id, doc, rev);
      reply.code(201).header('etag', `"${result.rev}"`);
      return result;
    },
  );

  // CouchDB's COPY, as a database's (routes/docdb.ts): source and destination route on their own.
  app.route<{ Params: { vdb: string; docid: string }; Querystring: { rev?: string } }>({
    method: 'COPY',
    url: '/vdb/:vdb/:docid',
    schema: { params: docParams, querystring: { type: 'object', properties: { rev: { type: 'string' } } } },
    config: scoped,
    handler: async (r, reply) =>
      answerCopy(vdbDocSource(r.params.vdb, checkDocId(r.params.docid)), r.query.rev, r.headers.destination, (destId, doc, rev) => vdbs().putDoc(r.params.vdb, destId, doc, rev), reply),
  });

  app.delete<{ Params: { vdb: string; docid: string }; Querystring: { rev?: string } }>(
    '/vdb/:vdb/:docid',
    { schema: { params: docParams, querystring: { type: 'object', properties: { rev: { type: 'string' } } } }, config: scoped },
    async (r, reply) => {
      const id = checkDocId(r.params.docid);
      const rev = expectedRev({ ifMatch: r.headers['if-match'], query: r.query.rev });
      const result = await answerDelete(id, rev, () => hasLiveWinner(() => vdbs().getDoc(r.params.vdb, id, {})), (rev) => vdbs().deleteDoc(r.params.vdb, id, rev));
      reply.header('etag', `"${result.rev}"`);
      return result;
    },
  );
};

/** A VDB feed page in CouchDB's shape: `results`, each change's revisions (every leaf with `style=all_docs`) in `changes`. */
function couchChanges(page: VdbChangesPage): Record<string, unknown> {
  return { results: page.changes.map(couchChange), last_seq: page.last_seq };
}

function couchChange(c: VdbChange): Record<string, unknown> {
  return { seq: c.seq, id: c.id, changes: (c.revs ?? [c.rev]).map((rev) => ({ rev })), ...(c.deleted ? { deleted: true } : {}), ...(c.doc === undefined ? {} : { doc: c.doc }) };
}
