// A changes feed that stays open, for a database and a VDB alike: server-sent events, or
// CouchDB's continuous feed (a JSON line per change, an empty line per heartbeat; without a
// heartbeat it ends after `idleMs` without a change, and after `limit` changes, with a
// `{"last_seq"}` line). The route says how to read and render a page; this runs the loop, the
// heartbeats, back-pressure, the end and an error in the stream.
import type { FastifyReply, FastifyRequest } from 'fastify';
import { once } from 'node:events';
import { FirkinError } from '../core/errors.js';
import { LIMITS } from '../docdb/names.js';
import { errorInStream } from './errors.js';

/** A page of the feed as it goes on the wire. */
export interface FeedPage {
  /** Each change rendered for the feed's format (an SSE event, or a JSON line with its newline). */
  readonly lines: readonly string[];
  /** The feed's position after this page: the continuous feed's last line says it. */
  readonly lastSeq: string;
}

export interface OpenFeed {
  readonly format: 'sse' | 'continuous';
  /** Send a heartbeat this often (undefined: none). */
  readonly heartbeatMs: number | undefined;
  /** Continuous without a heartbeat: end after this long without a change. */
  readonly idleMs?: number;
  /** Continuous: end after this many changes. */
  readonly limit?: number;
  /** Where the feed starts, for an end or error line before the first page. */
  readonly lastSeq: string;
  readonly headers?: Readonly<Record<string, string>>;
  /**
   * The changes after the last page, at most `limit`, waiting up to `waitMs` for one when there
   * are none yet (an empty page after that); `signal` aborts the wait when the client leaves.
   */
  next(limit: number, waitMs: number, signal: AbortSignal): Promise<FeedPage>;
  /** Called with a stop function: the feed ends when the source closes (returns the unsubscribe). */
  onSourceClose?(stop: () => void): () => void;
}

/** Abort when the client goes away (the response closes before we end it). */
export function clientGone(request: FastifyRequest, reply: FastifyReply): AbortController {
  const ac = new AbortController();
  reply.raw.once('close', () => ac.abort());
  request.raw.once('aborted', () => ac.abort());
  return ac;
}

/**
 * CouchDB's `heartbeat`: milliseconds, or `true` for 60 s (`false`: none). On a continuous
 * feed a heartbeat keeps it open; without one it ends after `timeout` ms without a change.
 */
export function parseHeartbeat(raw: string | undefined): number | undefined {
  if (raw === undefined || raw === 'false') return undefined;
  if (raw === 'true') return 60_000;
  const ms = Number(raw);
  if (!Number.isSafeInteger(ms) || ms < 10 || ms > 3_600_000) throw new FirkinError('bad_request', `heartbeat must be true or a number of milliseconds from 10 to 3600000, got ${JSON.stringify(raw)}`);
  return ms;
}

/** A long wait is re-armed by the loop; this only bounds one wait's timer. */
const WAIT_MS_MAX = 60_000;

/** Take over the response and run the feed until it ends or the client leaves. */
export async function serveFeed(request: FastifyRequest, reply: FastifyReply, feed: OpenFeed): Promise<void> {
  const sse = feed.format === 'sse';
  let lastSeq = feed.lastSeq;
  let sent = 0;
  const gone = clientGone(request, reply);
  const raw = reply.raw;
  reply.hijack();
  raw.writeHead(200, {
    'content-type': sse ? 'text/event-stream; charset=utf-8' : 'application/json; charset=utf-8',
    'cache-control': 'no-cache',
    'x-accel-buffering': 'no',
    ...(request.raw.httpVersionMajor < 2 ? { connection: 'keep-alive' } : {}),
    ...feed.headers,
  });
  // The headers now, not with the first change or heartbeat: a client waits for them before it
  // reads a line (a quiet continuous feed with `heartbeat=true` held them back for 60 s).
  raw.flushHeaders();
  const write = async (text: string) => {
    if (gone.signal.aborted) return;
    if (!raw.write(text)) await Promise.race([once(raw, 'drain'), once(gone.signal, 'abort')]);
  };
  if (sse) await write(': stream open\n\n');
  const heartbeat = feed.heartbeatMs === undefined ? undefined : setInterval(() => void write(sse ? ': heartbeat\n\n' : '\n'), feed.heartbeatMs);
  const unsubscribe = feed.onSourceClose?.(() => gone.abort());
  let idleSince = Date.now();
  try {
    for (;;) {
      if (gone.signal.aborted) return;
      if (feed.limit !== undefined && sent >= feed.limit) break;
      const limit = feed.limit === undefined ? LIMITS.streamPageSize : Math.min(LIMITS.streamPageSize, feed.limit - sent);
      const waitMs = feed.idleMs === undefined ? WAIT_MS_MAX : Math.max(0, idleSince + feed.idleMs - Date.now());
      const page = await feed.next(limit, waitMs, gone.signal);
      for (const line of page.lines) await write(line);
      lastSeq = page.lastSeq;
      sent += page.lines.length;
      if (page.lines.length > 0) idleSince = Date.now();
      else if (feed.idleMs !== undefined && Date.now() - idleSince >= feed.idleMs) break;
    }
    if (!sse) await write(`${JSON.stringify({ last_seq: lastSeq })}\n`);
  } catch (err) {
    // The database was dropped (or storage closed) under the stream: say so, then end.
    const body = JSON.stringify({ ...errorInStream(err, request), last_seq: lastSeq });
    await write(sse ? `event: error\ndata: ${body}\n\n` : `${body}\n`);
  } finally {
    clearInterval(heartbeat);
    unsubscribe?.();
    if (!raw.writableEnded) raw.end();
  }
}
