// Tiered storage: documents of a database move between hot (the database itself), warm
// (`warm_db`) and cold (`cold_db`) by age, by capacity (oldest first) or by hand, and expire
// by TTL. A moved document is served transparently: `/db/:db/:doc_id` reads and writes
// follow it (`locate`). Ages are measured from creation, in seconds.
//
// State (system column family):
//   ['tier.cfg', db]            -> TierConfig
//   ['tier.created', db, id]    -> creation wall ms (written with the document, see `creationIndexer`)
//   ['tier.doc', db, id]        -> DocTier: where a document lives when not plainly hot
//   ['tier.exp', ms, db, id]    -> expiry index for the sweeper
//
// A move is crash-safe and a document is always in exactly one tier:
//   1. record the intent (`moving`); 2. copy every revision (history, attachments) into the
//   target, purging a stale tombstone there first; 3. switch `location` and set `cleanup` in
//   one synced write; 4. tombstone the source (a feed entry there); 5. clear `cleanup`.
//   Restart: `moving` set -> undo the copy; `cleanup` set -> finish step 4.
import type { Logger } from 'pino';
import { BOOLEAN, NUMBER, STRING, jsonRecordCodec, nullable, objectSchema } from '../../core/codec.js';
import { FirkinError } from '../../core/errors.js';
import { type Clock } from '../../core/hlc.js';
import { decodeKey, encodeKey, prefixRange } from '../../core/keys.js';
import type { BatchOp, Store } from '../../storage/db.js';
import type { DocEngine, WinnerChange } from '../engine.js';
import { copyDocs } from '../move.js';
import { DEFAULT_TIER_CONFIG, TIERS, type Tier, type TierConfig, mergeTierConfig, overCapacity, tierForAge } from './policy.js';

export interface DocTier {
  readonly tier: Tier;
  readonly location: string;
  readonly createdMs: number;
  readonly expiresMs: number | null;
  readonly ttl: number | null;
  readonly moving?: { readonly to: string; readonly toTier: Tier };
  readonly cleanup?: string;
}

export interface TiersOptions {
  store: Store;
  docs: DocEngine;
  clock: Clock;
  log: Logger;
  newId: () => string;
  /** How often the sweeper looks for expired documents. */
  sweepIntervalMs: number;
}

const BATCH = 200;
const TTL_SECONDS_MAX = 100 * 365 * 86_400;
const k = {
  cfg: (db: string) => encodeKey(['tier.cfg', db]),
  created: (db: string, id: string) => encodeKey(['tier.created', db, id]),
  createdOf: (db: string) => prefixRange(['tier.created', db]),
  doc: (db: string, id: string) => encodeKey(['tier.doc', db, id]),
  docsOf: (db: string) => prefixRange(['tier.doc', db]),
  allDocs: () => prefixRange(['tier.doc']),
  exp: (ms: number, db: string, id: string) => encodeKey(['tier.exp', ms, db, id]),
  expAll: () => prefixRange(['tier.exp']),
};
const tierConfigCodec = jsonRecordCodec<TierConfig>(
  'tier config record',
  objectSchema({
    enabled: BOOLEAN,
    warm_db: nullable(STRING),
    cold_db: nullable(STRING),
    hot_threshold: NUMBER,
    warm_threshold: NUMBER,
    capacity_limit: nullable(NUMBER),
    capacity_docs: nullable(NUMBER),
  }),
);
const docTierCodec = jsonRecordCodec<DocTier>(
  'document tier record',
  objectSchema(
    { tier: { enum: TIERS }, location: STRING, createdMs: NUMBER, expiresMs: nullable(NUMBER), ttl: nullable(NUMBER) },
    { moving: objectSchema({ to: STRING, toTier: { enum: TIERS } }), cleanup: STRING },
  ),
);
/** A document's creation time (unix ms), kept so its age survives moves between tiers. */
const createdMsCodec = jsonRecordCodec<number>('document creation time', NUMBER);

/** Records each document's creation time in the same batch as its first write. */
export function creationIndexer(change: WinnerChange, ops: BatchOp[]): void {
  if (change.before === undefined && change.after !== undefined) {
    ops.push({ type: 'put', cf: 'system', key: k.created(change.db, change.docId), value: createdMsCodec.encode(change.seq.wallMs) });
  }
}

export class Tiers {
  readonly #o: TiersOptions;
  readonly #configs = new Map<string, TierConfig>();
  /** One move per document at a time. */
  readonly #busy = new Set<string>();
  #sweeper: NodeJS.Timeout | undefined;
  #sweeping: Promise<unknown> = Promise.resolve();

  private constructor(options: TiersOptions) {
    this.#o = options;
  }

  static async open(options: TiersOptions): Promise<Tiers> {
    const tiers = new Tiers(options);
    for await (const [key, value] of options.store.entries('system', prefixRange(['tier.cfg']))) {
      tiers.#configs.set(decodeKey(key)[1] as string, tierConfigCodec.decode(value));
    }
    // Finish or undo moves a crash interrupted.
    for await (const [key, value] of options.store.entries('system', k.allDocs())) {
      const [, db, id] = decodeKey(key) as [string, string, string];
      const rec = docTierCodec.decode(value);
      if (rec.moving !== undefined || rec.cleanup !== undefined) await tiers.#recover(db, id, rec);
    }
    options.docs.onDrop((db) => tiers.#dropped(db));
    return tiers;
  }

  startSweeper(): void {
    this.#sweeper = setInterval(() => {
      this.#sweeping = this.sweep().catch((err: unknown) => this.#o.log.error({ err }, 'TTL sweep failed'));
    }, this.#o.sweepIntervalMs);
    this.#sweeper.unref();
  }

  async close(): Promise<void> {
    if (this.#sweeper !== undefined) clearInterval(this.#sweeper);
    await this.#sweeping;
  }

  // ---- config --------------------------------------------------------------------------

  config(db: string): TierConfig & { configured: boolean } {
    this.#o.docs.assertDb(db);
    const c = this.#configs.get(db);
    return { ...(c ?? DEFAULT_TIER_CONFIG), configured: c !== undefined };
  }

  async setConfig(db: string, patch: Record<string, unknown>): Promise<TierConfig> {
    this.#o.docs.assertDb(db);
    const next = mergeTierConfig(this.#configs.get(db) ?? DEFAULT_TIER_CONFIG, patch);
    for (const tierDb of [next.warm_db, next.cold_db]) {
      if (tierDb === null) continue;
      if (tierDb === db) throw new FirkinError('bad_request', 'a tier database must differ from the hot database');
      if (!this.#o.docs.has(tierDb)) throw new FirkinError('bad_request', `tier database ${JSON.stringify(tierDb)} does not exist`);
    }
    await this.#o.store.put('system', k.cfg(db), tierConfigCodec.encode(next), { sync: true });
    this.#configs.set(db, next);
    return next;
  }

  #enabled(db: string): TierConfig {
    this.#o.docs.assertDb(db);
    const c = this.#configs.get(db);
    if (c === undefined || !c.enabled) throw new FirkinError('bad_request', `tiering is not enabled on ${JSON.stringify(db)}: POST /db/${db}/_tier/config first`);
    return c;
  }

  #tierDb(db: string, c: TierConfig, tier: Tier): string {
    if (tier === 'warm') return c.warm_db ?? db;
    if (tier === 'cold') return c.cold_db ?? c.warm_db ?? db;
    return db;
  }

  // ---- per-document state ---------------------------------------------------------------

  async #record(db: string, id: string): Promise<DocTier | undefined> {
    const buf = await this.#o.store.get('system', k.doc(db, id));
    return buf === undefined ? undefined : docTierCodec.decode(buf);
  }

  async #createdMs(db: string, id: string): Promise<number> {
    const buf = await this.#o.store.get('system', k.created(db, id));
    if (buf !== undefined) return createdMsCodec.decode(buf);
    // Written before creation times were recorded: the last change is the best we know.
    const rec = await this.#o.docs.getRecord(db, id);
    return rec?.seq.wallMs ?? this.#o.clock.nowMs();
  }

  async #live(db: string, id: string): Promise<boolean> {
    if (!this.#o.docs.has(db)) return false;
    const rec = await this.#o.docs.getRecord(db, id);
    return rec !== undefined && !rec.deleted;
  }

  /**
   * Where a document's reads and writes go (its tier database), 404 once its TTL passed: `db`
   * itself, at once and not as a promise, unless `db` has tiers.
   */
  locate(db: string, id: string): string | Promise<string> {
    return this.#configs.has(db) ? this.#locateTiered(db, id) : db;
  }

  async #locateTiered(db: string, id: string): Promise<string> {
    const rec = await this.#record(db, id);
    if (rec === undefined) return db;
    if (rec.expiresMs !== null && rec.expiresMs <= this.#o.clock.nowMs()) throw new FirkinError('not_found', `document ${JSON.stringify(id)} has expired`);
    return rec.location;
  }

  async #state(db: string, id: string): Promise<DocTier> {
    const rec = await this.#record(db, id);
    const location = rec?.location ?? db;
    if (!(await this.#live(location, id))) throw new FirkinError('not_found', `document ${JSON.stringify(id)} not found`);
    return rec ?? { tier: 'hot', location: db, createdMs: await this.#createdMs(db, id), expiresMs: null, ttl: null };
  }

  async #save(db: string, id: string, rec: DocTier, extra: BatchOp[] = []): Promise<void> {
    await this.#o.store.batch([{ type: 'put', cf: 'system', key: k.doc(db, id), value: docTierCodec.encode(rec) }, ...extra], { sync: true });
  }

  async docTier(db: string, id: string) {
    this.#o.docs.assertDb(db);
    const s = await this.#state(db, id);
    return { doc_id: id, tier: s.tier, db: s.location, created_at: s.createdMs, expires_at: s.expiresMs, ttl: s.ttl };
  }

  // ---- moves -----------------------------------------------------------------------------

  async migrate(db: string, id: string, toTier: Tier) {
    const c = this.#enabled(db);
    const s = await this.#state(db, id);
    if (s.tier === toTier) return { ok: true, doc_id: id, from_tier: s.tier, to_tier: toTier, migrated: 0, skipped: 1, errors: 0 };
    await this.#move(db, id, s, toTier, this.#tierDb(db, c, toTier));
    return { ok: true, doc_id: id, from_tier: s.tier, to_tier: toTier, migrated: 1, skipped: 0, errors: 0 };
  }

  async #move(db: string, id: string, s: DocTier, toTier: Tier, to: string): Promise<void> {
    const lock = `${db}\u0000${id}`;
    if (this.#busy.has(lock)) throw new FirkinError('conflict', `document ${JSON.stringify(id)} is being moved`);
    this.#busy.add(lock);
    try {
      const from = s.location;
      if (from === to) return await this.#save(db, id, { ...s, tier: toTier });
      if (await this.#live(to, id)) throw new FirkinError('conflict', `${JSON.stringify(to)} already holds a live document ${JSON.stringify(id)}`);
      await this.#save(db, id, { ...s, moving: { to, toTier } });
      await this.#o.docs.purge(to, [id]); // a tombstone from an earlier move out would shadow the copy
      await copyDocs(this.#o.docs, from, to, [id], this.#o.newId);
      const moved: DocTier = { tier: toTier, location: to, createdMs: s.createdMs, expiresMs: s.expiresMs, ttl: s.ttl, cleanup: from };
      await this.#save(db, id, moved);
      await this.#tombstone(from, id);
      const { cleanup: _done, ...settled } = moved;
      await this.#save(db, id, settled);
    } finally {
      this.#busy.delete(lock);
    }
  }

  /** Delete every live leaf: real tombstones, so the feed shows the document leaving. */
  async #tombstone(db: string, id: string): Promise<number> {
    let n = 0;
    for (const leaf of await this.#o.docs.openRevs(db, id)) {
      if (leaf._deleted === true) continue;
      await this.#o.docs.deleteDoc(db, id, leaf._rev as string);
      n++;
    }
    return n;
  }

  async #recover(db: string, id: string, rec: DocTier): Promise<void> {
    this.#o.log.warn({ db, id, rec }, 'finishing an interrupted tier move');
    if (rec.moving !== undefined) {
      // The switch never happened: the source still holds the document; drop the copy.
      if (this.#o.docs.has(rec.moving.to)) await this.#o.docs.purge(rec.moving.to, [id]);
      const { moving: _m, ...rest } = rec;
      await this.#save(db, id, rest);
      return;
    }
    if (rec.cleanup !== undefined && this.#o.docs.has(rec.cleanup)) await this.#tombstone(rec.cleanup, id);
    const { cleanup: _c, ...rest } = rec;
    await this.#save(db, id, rest);
  }

  // ---- TTL -------------------------------------------------------------------------------

  async setTtl(db: string, id: string, ttl: number) {
    this.#o.docs.assertDb(db);
    if (!Number.isSafeInteger(ttl) || ttl < 0 || ttl > TTL_SECONDS_MAX) throw new FirkinError('bad_request', `ttl must be whole seconds from 0 to ${TTL_SECONDS_MAX}`);
    if (!this.#configs.has(db)) await this.setConfig(db, {}); // TTLs need the tier state: defaults apply
    const s = await this.#state(db, id);
    const expiresMs = this.#o.clock.nowMs() + ttl * 1000;
    const ops: BatchOp[] = [{ type: 'put', cf: 'system', key: k.exp(expiresMs, db, id), value: Buffer.alloc(0) }];
    if (s.expiresMs !== null) ops.push({ type: 'del', cf: 'system', key: k.exp(s.expiresMs, db, id) });
    await this.#save(db, id, { ...s, expiresMs, ttl }, ops);
    return { ok: true, doc_id: id, ttl, expires_at: expiresMs };
  }

  async getTtl(db: string, id: string) {
    this.#o.docs.assertDb(db);
    const s = await this.#state(db, id);
    const now = this.#o.clock.nowMs();
    return { doc_id: id, ttl: s.ttl, expires_at: s.expiresMs, remaining: s.expiresMs === null ? null : Math.max(0, Math.ceil((s.expiresMs - now) / 1000)) };
  }

  /** Delete every document whose TTL has passed (optionally of one database). */
  async sweep(onlyDb?: string): Promise<number> {
    const now = this.#o.clock.nowMs();
    const due: [number, string, string][] = [];
    for await (const key of this.#o.store.keys('system', { gte: k.expAll().gte, lt: encodeKey(['tier.exp', now + 1]) })) {
      const [, ms, db, id] = decodeKey(key) as [string, number, string, string];
      if (onlyDb === undefined || db === onlyDb) due.push([ms, db, id]);
    }
    let deleted = 0;
    for (const [ms, db, id] of due) {
      const rec = await this.#record(db, id);
      const location = rec?.location ?? db;
      if (this.#o.docs.has(location)) deleted += (await this.#tombstone(location, id)) > 0 ? 1 : 0;
      const ops: BatchOp[] = [{ type: 'del', cf: 'system', key: k.exp(ms, db, id) }];
      if (rec !== undefined) ops.push({ type: 'del', cf: 'system', key: k.doc(db, id) });
      await this.#o.store.batch(ops, { sync: true });
    }
    if (deleted > 0) this.#o.log.info({ deleted, db: onlyDb }, 'expired documents deleted');
    return deleted;
  }

  // ---- capacity and the migration run ----------------------------------------------------

  /** Live documents in the hot database (not moved out), with their stored bytes. */
  async #hotDocs(db: string): Promise<{ id: string; bytes: number }[]> {
    const out: { id: string; bytes: number }[] = [];
    for await (const batch of this.#o.docs.scanRecords(db)) {
      for (const { id, record } of batch) {
        if (record.deleted) continue;
        const bytes = Object.values(record.leaves).reduce((n, l) => n + l.b + Object.values(l.a ?? {}).reduce((m, x) => m + x, 0), 0);
        out.push({ id, bytes });
      }
    }
    return out;
  }

  async capacity(db: string) {
    const c = this.config(db);
    const hot = await this.#hotDocs(db);
    const sizeBytes = hot.reduce((n, d) => n + d.bytes, 0);
    const tiers: Record<string, { db: string; doc_count: number }> = { hot: { db, doc_count: hot.length } };
    const counts: Record<Tier, number> = { hot: 0, warm: 0, cold: 0 };
    for await (const [, value] of this.#o.store.entries('system', k.docsOf(db))) counts[docTierCodec.decode(value).tier]++;
    tiers.warm = { db: c.warm_db ?? db, doc_count: counts.warm };
    tiers.cold = { db: c.cold_db ?? c.warm_db ?? db, doc_count: counts.cold };
    const exceeded = (c.capacity_limit !== null && sizeBytes > c.capacity_limit) || (c.capacity_docs !== null && hot.length > c.capacity_docs);
    return {
      db,
      doc_count: hot.length,
      size_bytes: sizeBytes,
      capacity_limit: c.capacity_limit,
      capacity_docs: c.capacity_docs,
      used_percent: c.capacity_limit === null || c.capacity_limit === 0 ? null : Math.round((sizeBytes / c.capacity_limit) * 10_000) / 100,
      exceeded,
      tiers,
    };
  }

  /** Expire TTLs, move the oldest hot documents out while over capacity, then classify everything by age. */
  async runMigration(db: string) {
    const c = this.#enabled(db);
    const started = this.#o.clock.nowMs();
    const deleted = await this.sweep(db);

    let migrated = 0;
    if (c.capacity_limit !== null || c.capacity_docs !== null) {
      const hot = await this.#hotDocs(db);
      const withAge = [];
      for (const d of hot) {
        const rec = await this.#record(db, d.id);
        if (rec !== undefined && rec.tier !== 'hot') continue;
        withAge.push({ ...d, createdMs: rec?.createdMs ?? (await this.#createdMs(db, d.id)) });
      }
      for (const id of overCapacity(withAge, { bytes: c.capacity_limit, docs: c.capacity_docs })) {
        const s = await this.#state(db, id);
        await this.#move(db, id, s, 'warm', this.#tierDb(db, c, 'warm'));
        if (++migrated % BATCH === 0) this.#o.log.info({ db, migrated }, 'capacity migration progress');
      }
    }

    let classified = 0;
    const now = this.#o.clock.nowMs();
    const ids = new Set((await this.#hotDocs(db)).map((d) => d.id));
    for await (const key of this.#o.store.keys('system', k.docsOf(db))) ids.add(decodeKey(key)[2] as string);
    let seen = 0;
    for (const id of ids) {
      if (++seen % 1000 === 0) this.#o.log.info({ db, seen, total: ids.size, classified }, 'age classification progress');
      let s: DocTier;
      try {
        s = await this.#state(db, id);
      } catch {
        continue; // deleted meanwhile
      }
      // Age only cools a document: one moved out by capacity (or by hand) is not pulled back.
      const want = tierForAge(c, now - s.createdMs);
      if (TIERS.indexOf(want) <= TIERS.indexOf(s.tier)) continue;
      await this.#move(db, id, s, want, this.#tierDb(db, c, want));
      classified++;
    }
    this.#o.log.info({ db, expired: deleted, migrated, classified, ms: this.#o.clock.nowMs() - started }, 'tier migration run');
    return { ok: true, action: 'migration_run', expired: { deleted }, capacity: { migrated }, age: { classified } };
  }

  async #dropped(db: string): Promise<void> {
    this.#configs.delete(db);
    const ops: BatchOp[] = [{ type: 'del', cf: 'system', key: k.cfg(db) }];
    for await (const key of this.#o.store.keys('system', k.expAll())) if (decodeKey(key)[2] === db) ops.push({ type: 'del', cf: 'system', key });
    await this.#o.store.batch(ops, { sync: true });
    await this.#o.store.clearRange('system', k.createdOf(db));
    await this.#o.store.clearRange('system', k.docsOf(db));
  }
}
