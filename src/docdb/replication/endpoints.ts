// The two ends of a replication behind one interface: a local database (the engine, plus
// read-only lookups on records.ts) or a remote one (the HTTP protocol of docs/replication.md).
// Reads for the source side, writes for the target side, `_local` checkpoints on both.
import { randomUUID } from 'node:crypto';
import { FirkinError } from '../../core/errors.js';
import { type Hlc, type HybridClock, compareHlc, hlcToText, parseHlc } from '../../core/hlc.js';
import type { DocEngine } from '../engine.js';
import { inlineAttachments } from '../inline-attachments.js';
import { leaves } from '../revtree.js';
import type { EndpointSpec } from './endpoint-spec.js';
import type { LocalDocs } from './local-docs.js';
import { RemoteDb } from './remote-client.js';

export interface ChangeRow {
  readonly seq: string;
  readonly id: string;
  /** Every leaf revision of the document (CouchDB `style=all_docs`). */
  readonly revs: readonly string[];
  readonly deleted: boolean;
  /** The winner's body, when asked for and the winner is live. */
  readonly doc?: Record<string, unknown>;
}

export interface ChangesPage {
  readonly rows: readonly ChangeRow[];
  readonly lastSeq: string;
}

/** A revision to fetch; `atts_since`: revisions the reader holds (its `possible_ancestors`). */
export interface Wanted {
  readonly id: string;
  readonly rev: string;
  readonly atts_since?: readonly string[];
}

export type RevsDiff = Record<string, { missing: string[]; possible_ancestors?: string[] }>;

export interface WriteOutcome {
  readonly written: number;
  readonly failures: readonly { id: string | null; error: string; message: string }[];
}

export interface Endpoint {
  readonly display: string;
  exists(): Promise<boolean>;
  create(): Promise<void>;
  /** Changes after `since` (undefined = the beginning); waits up to `waitMs` when there are none. */
  changes(since: string | undefined, limit: number, options: { includeDocs: boolean; waitMs: number }): Promise<ChangesPage>;
  revsDiff(request: Record<string, string[]>): Promise<RevsDiff>;
  /** Revisions with `_revisions`; attachments inline, except stubs for those `atts_since` shows the reader has. */
  bulkGet(wanted: readonly Wanted[]): Promise<Record<string, unknown>[]>;
  /** Replicated write (new_edits: false). `seq` is the source change's clock, merged into the target's. */
  bulkDocs(docs: readonly Record<string, unknown>[], seq: Hlc | undefined): Promise<WriteOutcome>;
  getLocal(id: string): Promise<Record<string, unknown> | undefined>;
  /** Write `_local/<id>`, replacing whatever revision is there. */
  putLocal(id: string, body: Record<string, unknown>): Promise<void>;
}

export interface EndpointDeps {
  readonly docs: DocEngine;
  readonly localDocs: LocalDocs;
  readonly hlc: HybridClock;
  readonly timeoutMs: number;
}

export function openEndpoint(spec: EndpointSpec, deps: EndpointDeps, signal: AbortSignal | undefined): Endpoint {
  return spec.kind === 'local'
    ? new LocalEndpoint(spec.db, deps, signal)
    : new RemoteEndpoint(new RemoteDb({ url: spec.url, auth: spec.auth, hlc: deps.hlc, timeoutMs: deps.timeoutMs, signal }), spec.vdb === true);
}

function cleanDoc(doc: Record<string, unknown>): Record<string, unknown> {
  const { id: _id, ...rest } = doc;
  return rest;
}

class LocalEndpoint implements Endpoint {
  readonly #db: string;
  readonly #d: EndpointDeps;
  readonly #signal: AbortSignal | undefined;

  constructor(db: string, deps: EndpointDeps, signal: AbortSignal | undefined) {
    this.#db = db;
    this.#d = deps;
    this.#signal = signal;
  }

  get display(): string {
    return this.#db;
  }

  async exists(): Promise<boolean> {
    return this.#d.docs.has(this.#db);
  }

  async create(): Promise<void> {
    if (this.#d.docs.has(this.#db)) return;
    await this.#d.docs.createDb(this.#db).catch((err: unknown) => {
      if (!(err instanceof FirkinError && err.code === 'conflict')) throw err;
    });
  }

  async changes(since: string | undefined, limit: number, options: { includeDocs: boolean; waitMs: number }): Promise<ChangesPage> {
    const { docs } = this.#d;
    const sinceHlc = since === undefined ? undefined : parseHlc(since);
    if (since !== undefined && sinceHlc === undefined) throw new FirkinError('bad_request', `invalid checkpoint sequence ${JSON.stringify(since)}`);
    let page = await docs.changes(this.#db, { since: sinceHlc, limit, descending: false, docIds: undefined, includeDocs: false });
    // Nothing new: wait for the next write, unless one landed since the read (no lost wakeup:
    // lastSeq and the listener registration happen in the same tick).
    if (page.results.length === 0 && options.waitMs > 0 && this.#signal?.aborted !== true) {
      const last = docs.lastSeq(this.#db);
      if (sinceHlc === undefined ? last.wallMs === 0 && last.logical === 0 : compareHlc(last, sinceHlc) <= 0) {
        await docs.waitForChange(this.#db, options.waitMs, this.#signal);
      }
      page = await docs.changes(this.#db, { since: sinceHlc, limit, descending: false, docIds: undefined, includeDocs: false });
    }
    const ids = page.results.map((r) => r.id);
    const records = await docs.getRecords(this.#db, ids);
    let bodies: (Record<string, unknown> | undefined)[] = [];
    if (options.includeDocs) {
      const live = records.flatMap((rec, i) => (rec === undefined || rec.deleted ? [] : [{ i, id: ids[i]!, rev: rec.winner }]));
      const found = await docs.getBodies(this.#db, live);
      bodies = new Array(ids.length).fill(undefined);
      live.forEach((d, j) => (bodies[d.i] = found[j]));
    }
    const rows: ChangeRow[] = page.results.map((r, i) => {
      const rec = records[i];
      const revs = rec === undefined ? [r.rev] : leaves(rec.tree).map((n) => n.rev);
      const doc = bodies[i];
      return doc === undefined ? { seq: r.seq, id: r.id, revs, deleted: rec?.deleted ?? r.deleted } : { seq: r.seq, id: r.id, revs, deleted: rec?.deleted ?? r.deleted, doc };
    });
    return { rows, lastSeq: page.last_seq };
  }

  revsDiff(request: Record<string, string[]>): Promise<RevsDiff> {
    return this.#d.docs.revsDiff(this.#db, request);
  }

  async bulkGet(wanted: readonly Wanted[]): Promise<Record<string, unknown>[]> {
    const docs = await readRevisions(this.#d.docs, this.#db, wanted.map(({ id, rev, atts_since }) => ({ id, rev, attsSince: atts_since })), { revs: true, attachments: true });
    return docs.filter((d): d is Record<string, unknown> => d !== undefined);
  }

  async bulkDocs(docs: readonly Record<string, unknown>[], seq: Hlc | undefined): Promise<WriteOutcome> {
    if (seq !== undefined) this.#d.hlc.update(seq);
    const results = await this.#d.docs.bulkDocs(this.#db, docs, false, randomUUID);
    let written = 0;
    const failures: { id: string | null; error: string; message: string }[] = [];
    for (const r of results) {
      if (r.ok) written++;
      else failures.push({ id: r.id, error: r.error, message: r.message });
    }
    return { written, failures };
  }

  getLocal(id: string): Promise<Record<string, unknown> | undefined> {
    this.#d.docs.assertDb(this.#db);
    return this.#d.localDocs.get(this.#db, id);
  }

  async putLocal(id: string, body: Record<string, unknown>): Promise<void> {
    this.#d.docs.assertDb(this.#db);
    await this.#d.localDocs.put(this.#db, id, body, { force: true });
  }
}

/**
 * One revision as a replication peer wants it: body, `_id`, `_rev`, `_deleted`,
 * `_revisions` (full known history) and attachments inline as base64. Undefined when the
 * revision is unknown or has no stored body (not a leaf).
 */
export async function readRevision(
  docs: DocEngine,
  db: string,
  id: string,
  rev: string,
  options: { revs: boolean; attachments: boolean; attsSince?: readonly string[] } = { revs: true, attachments: true },
): Promise<Record<string, unknown> | undefined> {
  const [doc] = await readRevisions(docs, db, [{ id, rev, attsSince: options.attsSince }], options);
  return doc;
}

/** `readRevision` for many at once: the records and bodies in one read each. */
export async function readRevisions(
  docs: DocEngine,
  db: string,
  wanted: readonly { id: string; rev: string; attsSince?: readonly string[] | undefined }[],
  options: { revs: boolean; attachments: boolean },
): Promise<(Record<string, unknown> | undefined)[]> {
  const found = await docs.getRevisions(db, wanted);
  const out: (Record<string, unknown> | undefined)[] = [];
  for (const [i, doc] of found.entries()) {
    if (doc === undefined) {
      out.push(undefined);
      continue;
    }
    const { id, rev, attsSince } = wanted[i]!;
    // Inlining reads `_revisions` (atts_since), so it goes first; most documents have none.
    if (doc._attachments !== undefined && options.attachments) doc._attachments = await inlineAttachments(docs, db, id, rev, doc, attsSince);
    if (!options.revs) delete doc._revisions;
    out.push(doc); // getRevisions renders without the `id` alias
  }
  return out;
}

interface RemoteChange {
  seq: unknown;
  id: string;
  changes?: { rev: string }[];
  rev?: string;
  deleted?: boolean;
  doc?: Record<string, unknown> | null;
}

class RemoteEndpoint implements Endpoint {
  readonly #db: RemoteDb;
  /** A virtual database (`/vdb/<name>`): created with `POST /vdb`, not by a replication. */
  readonly #vdb: boolean;

  constructor(db: RemoteDb, vdb: boolean) {
    this.#db = db;
    this.#vdb = vdb;
  }

  get display(): string {
    return this.#db.url;
  }

  async exists(): Promise<boolean> {
    const reply = await this.#db.call('GET', '', { accept: [404] });
    return reply.status !== 404;
  }

  async create(): Promise<void> {
    if (this.#vdb) throw new FirkinError('not_found', `${this.#db.url} does not exist, and create_target does not create a virtual database: create it with POST /vdb (its shard count and placement are its own)`);
    await this.#db.call('PUT', '', { accept: [409, 412] });
  }

  /**
   * Whether the remote's `_changes` lists every leaf (`style=all_docs`). A peer that refuses
   * the style (400) lists winners only; its leaves are then read through `_bulk_get` without
   * a rev, so conflicts still travel (at the price of reading bodies before the diff).
   */
  #allDocsStyle = true;

  async changes(since: string | undefined, limit: number, options: { includeDocs: boolean; waitMs: number }): Promise<ChangesPage> {
    try {
      return await this.#changes(since, limit, options);
    } catch (err) {
      if (!(this.#allDocsStyle && err instanceof FirkinError && err.details?.remote_status === 400)) throw err;
      this.#allDocsStyle = false;
      return this.#changes(since, limit, options);
    }
  }

  async #changes(since: string | undefined, limit: number, options: { includeDocs: boolean; waitMs: number }): Promise<ChangesPage> {
    const q = new URLSearchParams({ limit: String(limit) });
    if (this.#allDocsStyle) q.set('style', 'all_docs');
    if (since !== undefined) q.set('since', since);
    if (options.includeDocs) q.set('include_docs', 'true');
    let timeoutMs: number | undefined;
    if (options.waitMs > 0) {
      q.set('feed', 'longpoll');
      q.set('timeout', String(options.waitMs));
      timeoutMs = options.waitMs + 30_000;
    }
    const reply = await this.#db.call('GET', `/_changes?${q}`, { timeoutMs });
    const body = reply.body as { results?: RemoteChange[]; last_seq?: unknown };
    if (!Array.isArray(body.results)) throw new FirkinError('bad_gateway', `${this.#db.url}/_changes: the remote answered without results`);
    const rows: ChangeRow[] = body.results.map((r) => {
      const revs = r.changes?.map((c) => c.rev) ?? (r.rev === undefined ? [] : [r.rev]);
      const base = { seq: String(r.seq), id: r.id, revs, deleted: r.deleted === true };
      return r.doc !== undefined && r.doc !== null && r.deleted !== true ? { ...base, doc: r.doc } : base;
    });
    const lastSeq = body.last_seq === undefined ? (rows.at(-1)?.seq ?? since ?? hlcToText({ wallMs: 0, logical: 0 })) : String(body.last_seq);
    if (this.#allDocsStyle || rows.length === 0) return { rows, lastSeq };
    const reply2 = await this.#db.call('POST', '/_bulk_get', { body: { docs: rows.map((r) => ({ id: r.id })) } });
    const leavesById = new Map<string, string[]>();
    for (const r of (reply2.body as { results?: { id: string; docs?: { ok?: { _rev?: string } }[] }[] }).results ?? []) {
      leavesById.set(r.id, (r.docs ?? []).flatMap((d) => (typeof d.ok?._rev === 'string' ? [d.ok._rev] : [])));
    }
    return { rows: rows.map((r) => ({ ...r, revs: [...new Set([...r.revs, ...(leavesById.get(r.id) ?? [])])] })), lastSeq };
  }

  async revsDiff(request: Record<string, string[]>): Promise<RevsDiff> {
    if (Object.keys(request).length === 0) return {};
    return (await this.#db.call('POST', '/_revs_diff', { body: request })).body as RevsDiff;
  }

  async bulkGet(wanted: readonly Wanted[]): Promise<Record<string, unknown>[]> {
    if (wanted.length === 0) return [];
    const reply = await this.#db.call('POST', '/_bulk_get?revs=true&attachments=true', { body: { docs: wanted } });
    const results = (reply.body as { results?: { docs?: { ok?: Record<string, unknown> }[] }[] }).results ?? [];
    return results.flatMap((r) => (r.docs ?? []).flatMap((d) => (d.ok === undefined ? [] : [cleanDoc(d.ok)])));
  }

  async bulkDocs(docs: readonly Record<string, unknown>[], seq: Hlc | undefined): Promise<WriteOutcome> {
    if (docs.length === 0) return { written: 0, failures: [] };
    // The source change's clock goes out as our HLC header: the target merges it on receipt.
    const reply = await this.#db.call('POST', '/_bulk_docs', { body: { docs, new_edits: false }, sendHlc: seq });
    const results = Array.isArray(reply.body) ? (reply.body as { ok?: boolean; id?: string; error?: string; message?: string; reason?: string }[]) : [];
    const failures = results.filter((r) => r.ok === false || r.error !== undefined).map((r) => ({ id: r.id ?? null, error: r.error ?? 'error', message: r.message ?? r.reason ?? '' }));
    return { written: docs.length - failures.length, failures };
  }

  /** The `_local` revisions we last read or wrote: a checkpoint write is one call, not two. */
  readonly #localRevs = new Map<string, string | undefined>();

  async getLocal(id: string): Promise<Record<string, unknown> | undefined> {
    const reply = await this.#db.call('GET', `/_local/${encodeURIComponent(id)}`, { accept: [404] });
    const doc = reply.status === 404 ? undefined : (reply.body as Record<string, unknown>);
    this.#localRevs.set(id, typeof doc?._rev === 'string' ? doc._rev : undefined);
    return doc;
  }

  async putLocal(id: string, body: Record<string, unknown>): Promise<void> {
    const path = `/_local/${encodeURIComponent(id)}`;
    for (let attempt = 0; ; attempt++) {
      if (!this.#localRevs.has(id)) await this.getLocal(id);
      const rev = this.#localRevs.get(id);
      const reply = await this.#db.call('PUT', path, { body: rev === undefined ? body : { ...body, _rev: rev }, accept: attempt === 0 ? [409] : [] });
      if (reply.status !== 409) {
        this.#localRevs.set(id, (reply.body as { rev?: string }).rev);
        return;
      }
      this.#localRevs.delete(id); // someone else wrote it: read the revision again, once
    }
  }
}
