// Federations: one `_find` over several local databases and remote database URLs, merged.
// Members are queried in parallel under one deadline; duplicates (the same `_id` in several
// members) keep the CouchDB winner (higher generation, then the greater rev; a tie keeps the
// earlier member, local ones first); one global order and offset/limit apply to the merge.
// A member that fails is reported in `meta.errors`, never silently dropped.
import type { Logger } from 'pino';
import { NUMBER, OBJECT, STRING, STRING_ARRAY, jsonRecordCodec, objectSchema } from '../../core/codec.js';
import { FirkinError } from '../../core/errors.js';
import type { Clock, HybridClock } from '../../core/hlc.js';
import { Catalog } from '../../core/catalog.js';
import type { Store } from '../../storage/db.js';
import type { DocEngine } from '../engine.js';
import { type Json, pageEnd } from '../query/ast.js';
import type { ValueCounts } from '../query/counts.js';
import { executeFind, sourceQuery } from '../query/execute.js';
import { compareForOrder, project } from '../query/match.js';
import { QUERY_LIMITS, parseFind } from '../query/parse.js';
import { type FindStats, executionStats, fullScanWarning, sumStats } from '../query/stats.js';
import type { OutboundPolicy } from '../../core/outbound.js';
import { type EndpointSpec, type RemoteAuth, checkOutbound, parseAuth, parseEndpoint } from '../replication/endpoint-spec.js';
import { RemoteDb } from '../replication/remote-client.js';
import { compareRevs } from '../revtree.js';
import { isPlainObject } from '../../core/values.js';

export const FEDERATION_LIMITS = {
  membersMax: 64,
  nameChars: 63,
  /** The exact-total round asks each member for at most this many ids; past it `total` is an estimate. */
  exactTotalIdsMax: 100_000,
} as const;
const NAME = /^[a-z][a-z0-9_-]*$/;
const KIND = 'federation';

export interface FederationRecord {
  readonly name: string;
  readonly members: readonly string[];
  /** Raw `{bearer_token}` / `{basic_auth}`: stored server-side, never returned. */
  readonly auth: unknown;
  /** The default `_find` body, in JSON form. */
  readonly query: Record<string, unknown> | undefined;
  readonly createdMs: number;
}

const federationCodec = jsonRecordCodec<FederationRecord>(
  'federation record',
  objectSchema({ name: STRING, members: STRING_ARRAY, createdMs: NUMBER }, { query: OBJECT }),
);

export interface FederationDeps {
  store: Store;
  /** Exact per-value counts for `_find` totals (optional: without, totals walk the index). */
  counts?: ValueCounts;
  docs: DocEngine;
  hlc: HybridClock;
  log: Logger;
  outbound: OutboundPolicy;
  timeoutMs: number;
  clock: Clock;
}

const bad = (message: string) => new FirkinError('bad_request', message);

/** Stored query and request merged: request keys win, `where` lists are AND-ed. */
export function mergeQueries(stored: Record<string, unknown> | undefined, request: Record<string, unknown>): Record<string, unknown> {
  const merged: Record<string, unknown> = { ...stored, ...request };
  const a = stored?.where;
  const b = request.where;
  if (a !== undefined && b !== undefined) merged.where = [...(Array.isArray(a) ? a : [a]), ...(Array.isArray(b) ? b : [b])];
  return merged;
}

export interface MemberAnswer {
  member: string;
  docs: Record<string, unknown>[];
  total: number;
  /** What the member read (a remote's from its `execution_stats` and `warning`). */
  stats?: FindStats;
}

/**
 * The exact number of distinct documents matched, from every member's full id list; undefined
 * when a list is missing (the member failed the id round) or was cut at the cap.
 */
export function exactTotal(idLists: readonly (readonly string[] | undefined)[], cap: number): number | undefined {
  if (idLists.some((ids) => ids === undefined || ids.length > cap)) return undefined;
  return new Set(idLists.flatMap((ids) => ids!)).size;
}

/** Pure merge of member answers (in member order): dedupe by winner, order, page. */
export function mergeAnswers(answers: readonly MemberAnswer[], q: { orderBy: Parameters<typeof compareForOrder>[2]; offset: number; limit: number | undefined }) {
  const best = new Map<string, { doc: Record<string, unknown>; member: string }>();
  let duplicates = 0;
  for (const a of answers) {
    for (const doc of a.docs) {
      const id = doc._id as string;
      const seen = best.get(id);
      if (seen === undefined) {
        best.set(id, { doc, member: a.member });
        continue;
      }
      duplicates++;
      const rev = typeof doc._rev === 'string' ? doc._rev : undefined;
      const seenRev = typeof seen.doc._rev === 'string' ? seen.doc._rev : undefined;
      if (rev !== undefined && (seenRev === undefined || compareRevs(rev, seenRev) > 0)) best.set(id, { doc, member: a.member });
    }
  }
  const merged = [...best.values()].sort((x, y) =>
    compareForOrder({ id: x.doc._id as string, body: x.doc as Json }, { id: y.doc._id as string, body: y.doc as Json }, q.orderBy),
  );
  const page = merged.slice(q.offset, pageEnd(q));
  const sourceCounts: Record<string, number> = {};
  for (const m of page) sourceCounts[m.member] = (sourceCounts[m.member] ?? 0) + 1;
  // Members count their own matches exactly; documents held by several members are
  // subtracted as far as they were seen (all of them when no limit is given).
  const total = answers.reduce((n, a) => n + a.total, 0) - duplicates;
  return { results: page.map((m) => m.doc), total, sourceCounts };
}

export class Federations {
  readonly #d: FederationDeps;
  readonly #byName: Catalog<FederationRecord>;

  private constructor(deps: FederationDeps, byName: Catalog<FederationRecord>) {
    this.#d = deps;
    this.#byName = byName;
  }

  static async open(deps: FederationDeps): Promise<Federations> {
    return new Federations(deps, await Catalog.open(deps.store, { prefix: KIND, codec: federationCodec, keyOf: (r) => r.name }));
  }

  #get(name: string): FederationRecord {
    const rec = this.#byName.get(name);
    if (rec === undefined) throw new FirkinError('not_found', `federation ${JSON.stringify(name)} does not exist`);
    return rec;
  }

  async #save(rec: FederationRecord): Promise<void> {
    await this.#byName.put(rec);
  }

  /** A member as stored: a local database that exists, or a normalised remote URL we may call. */
  #member(raw: unknown, auth: RemoteAuth): string {
    const spec = parseEndpoint(raw, auth, 'member');
    if (spec.kind === 'local') {
      if (!this.#d.docs.has(spec.db)) throw bad(`member database ${JSON.stringify(spec.db)} does not exist`);
      return spec.db;
    }
    checkOutbound(spec, this.#d.outbound);
    return spec.url;
  }

  #query(raw: unknown): Record<string, unknown> | undefined {
    if (raw === undefined || raw === null) return undefined;
    if (!isPlainObject(raw)) throw bad('query must be a _find body object');
    parseFind(raw); // validate now, not at the first query
    return raw;
  }

  view(rec: FederationRecord) {
    return { name: rec.name, members: rec.members, ...(rec.query === undefined ? {} : { query: rec.query }), has_auth: rec.auth !== undefined, created_at: rec.createdMs };
  }

  list() {
    return [...this.#byName.values()].sort((a, b) => (a.name < b.name ? -1 : 1)).map((r) => this.view(r));
  }

  info(name: string) {
    return this.view(this.#get(name));
  }

  async create(body: Record<string, unknown>) {
    const { name, members, auth, query } = body;
    if (typeof name !== 'string' || name.length > FEDERATION_LIMITS.nameChars || !NAME.test(name)) {
      throw bad(`federation name must be 1 to ${FEDERATION_LIMITS.nameChars} characters: a lowercase letter, then a-z 0-9 _ -`);
    }
    if (!Array.isArray(members) || members.length === 0 || members.length > FEDERATION_LIMITS.membersMax) {
      throw bad(`members must be a list of 1 to ${FEDERATION_LIMITS.membersMax} database names or URLs`);
    }
    if (this.#byName.has(name)) throw new FirkinError('conflict', `federation ${JSON.stringify(name)} already exists`);
    const parsedAuth = parseAuth(auth);
    const normal = [...new Set(members.map((m) => this.#member(m, parsedAuth)))];
    const rec: FederationRecord = { name, members: normal, auth: auth ?? undefined, query: this.#query(query), createdMs: this.#d.clock.nowMs() };
    await this.#save(rec);
    return this.view(rec);
  }

  async setQuery(name: string, query: unknown) {
    const rec = this.#get(name);
    if (query === undefined) throw bad('no query provided');
    await this.#save({ ...rec, query: this.#query(query) });
    return this.view(this.#get(name));
  }

  async delete(name: string): Promise<void> {
    this.#get(name);
    await this.#byName.delete(name);
  }

  async addMember(name: string, member: string) {
    const rec = this.#get(name);
    const normal = this.#member(member, parseAuth(rec.auth));
    if (!rec.members.includes(normal)) {
      if (rec.members.length >= FEDERATION_LIMITS.membersMax) throw bad(`a federation has at most ${FEDERATION_LIMITS.membersMax} members`);
      await this.#save({ ...rec, members: [...rec.members, normal] });
    }
    return this.view(this.#get(name));
  }

  async removeMember(name: string, member: string) {
    const rec = this.#get(name);
    let normal = member;
    try {
      const spec = parseEndpoint(member, { kind: 'none' }, 'member');
      normal = spec.kind === 'remote' ? spec.url : spec.db;
    } catch {
      // not a valid member string: nothing to remove (a no-op, like removing a non-member)
    }
    if (rec.members.includes(normal)) await this.#save({ ...rec, members: rec.members.filter((m) => m !== normal) });
    return this.view(this.#get(name));
  }

  async find(name: string, requestBody: Record<string, unknown>) {
    const startedMs = performance.now();
    const rec = this.#get(name);
    const { auth: authOverride, ...request } = requestBody;
    const auth = parseAuth(authOverride ?? rec.auth);
    const raw = mergeQueries(rec.query, request);
    const q = parseFind(raw);
    if (q.after !== undefined) throw new FirkinError('bad_request', 'a bookmark pages one database or VDB; a federation pages with offset and limit');
    const perMember = pageEnd(q);
    // Each member is asked for offset + limit documents, and a member's `_find` takes at most this.
    if (perMember !== undefined && perMember > QUERY_LIMITS.limitMax) {
      throw new FirkinError('bad_request', `offset + limit must be at most ${QUERY_LIMITS.limitMax} on a federation (each member is asked for that many), got ${perMember}`);
    }
    const deadline = AbortSignal.timeout(this.#d.timeoutMs);
    const errors: Record<string, string> = {};
    const ask = async (member: string, limit: number | undefined, includeDocs: boolean): Promise<MemberAnswer> => {
      const spec: EndpointSpec = parseEndpoint(member, auth, 'member');
      if (spec.kind === 'local') {
        const r = await executeFind({ docs: this.#d.docs, store: this.#d.store, counts: this.#d.counts }, spec.db, sourceQuery(q, limit, includeDocs));
        return { member, docs: r.docs, total: r.meta.total, stats: r.stats };
      }
      checkOutbound(spec, this.#d.outbound);
      const remote = new RemoteDb({ url: spec.url, auth: spec.auth, hlc: this.#d.hlc, timeoutMs: this.#d.timeoutMs, signal: deadline });
      const body = { ...raw, offset: 0, include_docs: includeDocs, ...(limit === undefined ? {} : { limit }), fields: includeDocs ? undefined : ['_id', '_rev'], execution_stats: true };
      const reply = (await remote.call('POST', '/_find', { body })).body as { docs?: unknown; meta?: { total?: unknown }; execution_stats?: Record<string, unknown>; warning?: unknown };
      if (!Array.isArray(reply.docs)) throw new FirkinError('bad_gateway', 'the member answered without docs');
      const docs = reply.docs.filter((d): d is Record<string, unknown> => isPlainObject(d) && typeof d._id === 'string');
      const count = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) && v >= 0 ? v : 0);
      // A CouchDB member (or an older Firkin) may send neither: it counts as nothing read.
      const stats: FindStats = { keysExamined: count(reply.execution_stats?.total_keys_examined), docsExamined: count(reply.execution_stats?.total_docs_examined), ...(typeof reply.warning === 'string' ? { fullScan: reply.warning } : {}) };
      return { member, docs, total: typeof reply.meta?.total === 'number' ? reply.meta.total : docs.length, stats };
    };
    const answers = await Promise.all(
      rec.members.map(async (member): Promise<MemberAnswer | undefined> => {
        try {
          return await ask(member, perMember, true);
        } catch (err) {
          errors[member] = err instanceof FirkinError ? `${err.code}: ${err.message}` : (err as Error).message;
          this.#d.log.warn({ federation: name, member, err: errors[member] }, 'federation member failed');
          return undefined;
        }
      }),
    );
    const ok = answers.filter((a): a is MemberAnswer => a !== undefined);
    if (ok.length === 0) {
      throw new FirkinError('bad_gateway', `every member of federation ${JSON.stringify(name)} failed`, { details: { errors } });
    }
    const merged = mergeAnswers(ok, q);
    // A member cut at the page window may hold documents another member also holds outside
    // every returned page: the sum of totals would count those twice. A second round asks
    // the members that answered for their matching ids only (up to a cap) and counts the union.
    let total = merged.total;
    let totalExact = ok.length <= 1 || ok.every((a) => a.docs.length >= a.total);
    if (!totalExact && ok.every((a) => a.total <= FEDERATION_LIMITS.exactTotalIdsMax)) {
      const cap = FEDERATION_LIMITS.exactTotalIdsMax;
      const idLists = await Promise.all(
        ok.map((a) =>
          // At most `cap` ids (a `_find` limit past 100,000 is a 400): a member whose total
          // grew past what it listed cannot be counted exactly.
          ask(a.member, cap, false).then(
            (r) => (r.docs.length < r.total ? undefined : r.docs.map((d) => d._id as string)),
            (err: unknown) => {
              this.#d.log.warn({ federation: name, member: a.member, err: (err as Error).message }, 'federation member failed the exact-total round');
              return undefined;
            },
          ),
        ),
      );
      const exact = exactTotal(idLists, cap);
      if (exact !== undefined) (total = exact), (totalExact = true);
    }
    // Members answered whole documents (the order may need fields the projection drops).
    const results = q.includeDocs ? merged.results.map((d) => project(d, q.fields)) : merged.results.map((d) => ({ _id: d._id, _rev: d._rev }));
    // CouchDB's `warning` and `execution_stats`, over the members that answered the first round.
    const scanned = ok.filter((a) => a.stats?.fullScan !== undefined).map((a) => a.member);
    const stats = sumStats(ok.map((a) => a.stats));
    return {
      ...(scanned.length === 0 ? {} : { warning: fullScanWarning(`on ${scanned.join(', ')}: every document there was read`) }),
      ...(request.execution_stats === true ? { execution_stats: executionStats(stats, results.length, performance.now() - startedMs) } : {}),
      results,
      meta: {
        total,
        total_exact: totalExact,
        offset: q.offset,
        limit: q.limit ?? null,
        sources: ok.map((a) => a.member),
        errors,
        members_queried: rec.members.length,
        source_counts: merged.sourceCounts,
      },
    };
  }
}
