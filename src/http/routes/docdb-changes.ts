// The changes feed: poll, long-poll and CouchDB's continuous feed (`GET|POST /db/:db/_changes`)
// and server-sent events (`GET /db/:db/_changes/stream`). All wait on the engine's notifier: a
// write wakes them, nothing polls. The open feeds run in `feed-stream.ts`, a VDB's too.
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { type Hlc, type HybridClock, hlcToBase64, hlcToText } from '../../core/hlc.js';
import type { ChangeEntry, ChangeFilter, ChangesOptions, DocEngine } from '../../docdb/engine.js';
import { changeFilterFrom, checkCouchFilter } from '../../docdb/query/change-filter.js';
import { type PageExtras, withExtras } from '../../docdb/change-extras.js';
import { LIMITS } from '../../docdb/names.js';
import { FirkinError } from '../../core/errors.js';
import { clientGone, parseHeartbeat, serveFeed } from '../feed-stream.js';
import { HLC_HEADER } from '../hooks/observe.js';
import { dbParams, existingDb, parseDocIds, parseSince } from './docdb-shared.js';
import { READ } from '../hooks/auth.js';

export interface ChangesRouteDeps {
  docs: DocEngine;
  hlc: HybridClock;
  /** Default SSE heartbeat (SERVICE_STREAM_HEARTBEAT_MS). */
  heartbeatMs: number;
}

const changesQuery = {
  type: 'object',
  properties: {
    since: { type: 'string' },
    limit: { type: 'integer', minimum: 0, maximum: LIMITS.changesLimitMax },
    descending: { type: 'boolean' },
    include_docs: { type: 'boolean' },
    feed: { enum: ['normal', 'longpoll', 'continuous'] },
    timeout: { type: 'integer', minimum: 0, maximum: LIMITS.longPollTimeoutMsMax },
    doc_ids: { type: 'string' },
    style: { enum: ['main_only', 'all_docs'] },
    conflicts: { type: 'boolean' },
    attachments: { type: 'boolean' },
    heartbeat: { type: 'string' },
    filter: { type: 'string' },
    paths: { type: 'array', maxItems: 16, items: { type: 'string' } },
  },
} as const;

const changesBody = {
  type: 'object',
  additionalProperties: false,
  properties: {
    doc_ids: { type: 'array', maxItems: LIMITS.bulkDocsMax, items: { type: 'string' } },
    since: { anyOf: [{ type: 'string' }, { type: 'integer', minimum: 0, maximum: 0 }] },
    include_docs: { type: 'boolean' },
    limit: { type: 'integer', minimum: 0, maximum: LIMITS.changesLimitMax },
    descending: { type: 'boolean' },
    query: { type: ['object', 'array'] },
    selector: { type: 'object' },
    paths: { type: 'array', maxItems: 16, items: { type: 'string' } },
  },
} as const;

const streamQuery = {
  type: 'object',
  properties: {
    since: { type: 'string' },
    include_docs: { type: 'boolean' },
    heartbeat: { type: 'integer', minimum: 10, maximum: 3_600_000 },
    doc_ids: { type: 'string' },
    paths: { type: 'array', maxItems: 16, items: { type: 'string' } },
  },
} as const;

const streamBody = {
  type: 'object',
  additionalProperties: false,
  properties: {
    since: { type: 'string' },
    include_docs: { type: 'boolean' },
    heartbeat: { type: 'integer', minimum: 10, maximum: 3_600_000 },
    doc_ids: { type: 'array', maxItems: LIMITS.bulkDocsMax, items: { type: 'string' } },
    query: { type: ['object', 'array'] },
    paths: { type: 'array', maxItems: 16, items: { type: 'string' } },
  },
} as const;

interface StreamBody {
  since?: string;
  include_docs?: boolean;
  heartbeat?: number;
  doc_ids?: string[];
  query?: unknown;
  paths?: string[];
}

interface ChangesQuery {
  since?: string;
  limit?: number;
  descending?: boolean;
  include_docs?: boolean;
  feed?: 'normal' | 'longpoll' | 'continuous';
  timeout?: number;
  heartbeat?: string;
  filter?: string;
  doc_ids?: string;
  paths?: string[];
  style?: 'main_only' | 'all_docs';
  conflicts?: boolean;
  attachments?: boolean;
}

interface ChangesBody {
  doc_ids?: string[];
  since?: string | number;
  include_docs?: boolean;
  limit?: number;
  descending?: boolean;
  query?: unknown;
  selector?: Record<string, unknown>;
  paths?: string[];
}

/** What an open feed sends, and when it ends (`serveStream`). */
interface StreamFeed {
  format: 'sse' | 'continuous';
  since: Hlc | undefined;
  docIds: ReadonlySet<string> | undefined;
  includeDocs: boolean;
  filter: ChangeFilter | undefined;
  heartbeatMs: number | undefined;
  /** Continuous without a heartbeat: end after this long without a change. */
  idleMs?: number;
  /** Continuous: end after this many changes. */
  limit?: number;
  extras: PageExtras;
}

/** A page as `_changes` answers it (its cursor as text only). */
const answerPage = ({ results, last_seq }: { results: ChangeEntry[]; last_seq: string }) => ({ results, last_seq });

const extrasOf = (q: ChangesQuery): PageExtras => ({ style: q.style, conflicts: q.conflicts, attachments: q.attachments });

/** `feed=continuous`: the request's options as an open feed. */
function continuousFeed(options: ChangesOptions, q: ChangesQuery): StreamFeed {
  if (options.descending) throw new FirkinError('bad_request', 'feed=continuous follows new changes forward: descending is not taken with it');
  const heartbeatMs = parseHeartbeat(q.heartbeat);
  return {
    format: 'continuous',
    since: options.since,
    docIds: options.docIds,
    includeDocs: options.includeDocs,
    filter: options.filter,
    heartbeatMs,
    // CouchDB: a heartbeat keeps the feed open; without one it ends after `timeout` idle.
    ...(heartbeatMs === undefined ? { idleMs: q.timeout ?? LIMITS.longPollTimeoutMsDefault } : {}),
    ...(options.limit === undefined ? {} : { limit: options.limit }),
    extras: extrasOf(q),
  };
}

/** A page of changes; with `feed=longpoll`, waiting up to `timeoutMs` for one when there are none yet. */
async function read(
  docs: DocEngine,
  db: string,
  options: ChangesOptions,
  feed: 'normal' | 'longpoll',
  timeoutMs: number,
  gone: AbortSignal,
): Promise<{ results: ChangeEntry[]; last_seq: string; lastSeq: Hlc }> {
  if (feed === 'normal') return docs.changes(db, options);
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    // Subscribe before reading, so a write landing between the read and the wait still wakes us.
    const waiter = new AbortController();
    const stop = () => waiter.abort();
    gone.addEventListener('abort', stop, { once: true });
    const woken = docs.waitForChange(db, Math.max(0, deadline - Date.now()), waiter.signal);
    try {
      const page = await docs.changes(db, options);
      if (page.results.length > 0 || Date.now() >= deadline || gone.aborted || docs.stopping) return page;
      await woken;
    } finally {
      waiter.abort();
      gone.removeEventListener('abort', stop);
    }
  }
}

export const docdbChangesRoutes: FastifyPluginAsync<ChangesRouteDeps> = async (app, { docs, hlc, heartbeatMs }) => {
  app.get<{ Params: { db: string }; Querystring: ChangesQuery }>(
    '/db/:db/_changes',
    { schema: { params: dbParams, querystring: changesQuery } },
    async (request, reply) => {
      const db = existingDb(docs, request.params.db);
      const q = request.query;
      const options: ChangesOptions = {
        since: parseSince(docs, db, q.since),
        limit: q.limit,
        descending: q.descending === true,
        docIds: parseDocIds(q.doc_ids),
        includeDocs: q.include_docs === true,
        filter: changeFilterFrom(undefined, q.paths),
      };
      checkCouchFilter(q.filter, { docIds: options.docIds !== undefined, selector: false });
      if (q.feed === 'continuous') return serveStream(request, reply, db, continuousFeed(options, q));
      const gone = clientGone(request, reply);
      return answerPage(await withExtras(docs, db, extrasOf(q), await read(docs, db, options, q.feed ?? 'normal', q.timeout ?? LIMITS.longPollTimeoutMsDefault, gone.signal)));
    },
  );

  // Body fields win over the query string (the original read only doc_ids from the body).
  app.post<{ Params: { db: string }; Querystring: ChangesQuery; Body: ChangesBody | undefined }>(
    '/db/:db/_changes',
    { schema: { params: dbParams, querystring: changesQuery, body: changesBody }, config: READ },
    async (request, reply) => {
      const db = existingDb(docs, request.params.db);
      const q = request.query;
      const b = request.body ?? {};
      const options: ChangesOptions = {
        since: parseSince(docs, db, b.since ?? q.since),
        limit: b.limit ?? q.limit,
        descending: (b.descending ?? q.descending) === true,
        docIds: b.doc_ids === undefined ? parseDocIds(q.doc_ids) : new Set(b.doc_ids),
        includeDocs: (b.include_docs ?? q.include_docs) === true,
        filter: changeFilterFrom(b.query, b.paths ?? q.paths, b.selector),
      };
      checkCouchFilter(q.filter, { docIds: options.docIds !== undefined, selector: b.selector !== undefined });
      if (q.feed === 'continuous') return serveStream(request, reply, db, continuousFeed(options, q));
      const gone = clientGone(request, reply);
      return answerPage(await withExtras(docs, db, extrasOf(q), await read(docs, db, options, q.feed ?? 'normal', q.timeout ?? LIMITS.longPollTimeoutMsDefault, gone.signal)));
    },
  );

  /**
   * A feed that stays open (`feed-stream.ts`): server-sent events (`id:` is the entry's seq, so
   * EventSource resumes with Last-Event-ID; runs until the client leaves), or CouchDB's
   * continuous feed.
   */
  const serveStream = (request: FastifyRequest, reply: FastifyReply, db: string, feed: StreamFeed) => {
    const { docIds, includeDocs, filter } = feed;
    const sse = feed.format === 'sse';
    let cursor = feed.since;
    return serveFeed(request, reply, {
      format: feed.format,
      heartbeatMs: feed.heartbeatMs,
      ...(feed.idleMs === undefined ? {} : { idleMs: feed.idleMs }),
      ...(feed.limit === undefined ? {} : { limit: feed.limit }),
      lastSeq: hlcToText(cursor ?? { wallMs: 0, logical: 0 }),
      headers: { [HLC_HEADER]: hlcToBase64(hlc.now()) },
      next: async (limit, waitMs, signal) => {
        const page = await withExtras(docs, db, feed.extras, await read(docs, db, { since: cursor, limit, descending: false, docIds, includeDocs, filter }, 'longpoll', waitMs, signal));
        cursor = page.lastSeq;
        return { lines: page.results.map((entry) => (sse ? `id: ${entry.seq}\nevent: change\ndata: ${JSON.stringify(entry)}\n\n` : `${JSON.stringify(entry)}\n`)), lastSeq: page.last_seq };
      },
      onSourceClose: (stop) => docs.onClose(stop),
    });
  };

  app.get<{ Params: { db: string }; Querystring: { since?: string; include_docs?: boolean; heartbeat?: number; doc_ids?: string; paths?: string[] } }>(
    '/db/:db/_changes/stream',
    { schema: { params: dbParams, querystring: streamQuery } },
    async (request, reply) => {
      const db = existingDb(docs, request.params.db);
      const q = request.query;
      const lastEventId = request.headers['last-event-id'];
      const since = parseSince(docs, db, typeof lastEventId === 'string' && lastEventId !== '' ? lastEventId : q.since);
      const filter = changeFilterFrom(undefined, q.paths);
      await serveStream(request, reply, db, { format: 'sse', since, docIds: parseDocIds(q.doc_ids), includeDocs: q.include_docs === true, filter, heartbeatMs: q.heartbeat ?? heartbeatMs, extras: {} });
    },
  );

  // The same stream with its filter in a body: `{query: {where}, paths, doc_ids, since, include_docs, heartbeat}`.
  app.post<{ Params: { db: string }; Body: StreamBody | undefined }>(
    '/db/:db/_changes/stream',
    { schema: { params: dbParams, body: streamBody }, config: READ },
    async (request, reply) => {
      const db = existingDb(docs, request.params.db);
      const b = request.body ?? {};
      const lastEventId = request.headers['last-event-id'];
      const since = parseSince(docs, db, typeof lastEventId === 'string' && lastEventId !== '' ? lastEventId : b.since);
      const filter = changeFilterFrom(b.query, b.paths);
      await serveStream(request, reply, db, { format: 'sse', since, docIds: b.doc_ids === undefined ? undefined : new Set(b.doc_ids), includeDocs: b.include_docs === true, filter, heartbeatMs: b.heartbeat ?? heartbeatMs, extras: {} });
    },
  );
};
