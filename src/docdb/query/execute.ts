// Runs a parsed `_find` against one database: measure the candidate scans, scan the
// cheapest, check every candidate's winning body, count, order, page.
// `meta.total` is always exact. When the chosen scan alone decides the query (an "exact"
// plan: one indexable condition), counting reads posting keys only and bodies are fetched
// for the returned page alone; for one value (equality) the count comes from `ValueCounts`
// and only the page's keys are read.
import { FirkinError } from '../../core/errors.js';
import { ELEMENT_TAG, type KeyRange, decodeKey, extendKey, keyStringLength, prefixRange, stringPartAfter } from '../../core/keys.js';
import { isDesignDocId } from '../names.js';
import type { Store } from '../../storage/db.js';
import type { DocReader } from '../engine.js';
import type { Condition, FindQuery, Json } from './ast.js';
import type { FindStats } from './stats.js';
import type { ValueCounts } from './counts.js';
import { compareForOrder, compareToPosition, matches, project, valueAt } from './match.js';
import { bookmarkAfter } from './bookmark.js';
import { MISSING, collate, compareStrings } from './collate.js';
import { QUERY_LIMITS } from './parse.js';
import { type Plan, type Scan, candidateTest, choosePlan, conjuncts, describeTest, planIsExact, scansFor, wholeInKey } from './plan.js';
import { TYPE_TAG, docIdOfPosting, leafKey } from './postings.js';
import { conflicts } from '../revtree.js';

/** Counting a scan's postings stops here: past it, the scan is "big" and its exact size is irrelevant. */
const ESTIMATE_CAP = 5_000;
const FETCH_BATCH = 256;
/** An `in` with more values than this counts by walking (one count build per value would queue too many jobs). */
const IN_COUNTED_VALUES_MAX = 64;

/** Where a query reads: documents through the engine, its own index (the `paths` family) from
 * the store, and the exact per-value counts when the node keeps them. */
export interface FindContext {
  readonly docs: DocReader;
  readonly store: Store;
  readonly counts?: ValueCounts;
}

export interface FoundDoc {
  id: string;
  rev: string;
  body: Record<string, Json>;
}

export interface FindResult {
  docs: Record<string, unknown>[];
  meta: { total: number; offset: number; limit: number | null };
  /** CouchDB's: pass it back (same query) for the page after this one. */
  bookmark: string;
  /** What answering read (CouchDB's `execution_stats`, less the time the caller measures). */
  stats: FindStats;
}

export interface Explained {
  plan: Plan;
  exact: boolean;
  estimates: { scan: string; postings: number; capped: boolean }[];
  /** Each top-level condition's best scan (undefined: none applies) and its measure. */
  conditions: ConditionScan[];
  /** Several conditions: how the others would test the smallest one's ids, as estimated (`narrowByConditions`). */
  narrowing?: { candidates: string; tests: { scan: string; postings: number; test: string }[]; exact: boolean };
}

interface ConditionScan {
  readonly scan: Scan | undefined;
  readonly estimate: number;
  /** The estimate is the counting cap: the scan holds at least that many postings. */
  readonly capped: boolean;
}

async function countRange(store: Store, ranges: readonly KeyRange[], cap: number): Promise<number> {
  let n = 0;
  for (const r of ranges) {
    n += await store.count('paths', { gte: r.gte, lt: r.lt, limit: cap - n });
    if (n >= cap) break;
  }
  return n;
}

/** The document ids of one value's postings (`prefix ++ encoded id`), in id order, read as strings (`Store.keyStringBatches`). */
async function* idsAfter(store: Store, range: KeyRange & { limit?: number }): AsyncGenerator<string[]> {
  const prefixChars = keyStringLength(range.gte);
  for await (const batch of store.keyStringBatches('paths', range)) yield batch.map((key) => stringPartAfter(key, prefixChars));
}

/**
 * A scan's document ids as a set: one value's ranges (equality, `in`) decode only the id past
 * the value; a key filter drops the keys whose whole value fails it. With `keysMax`, undefined
 * once the scan holds more keys than that (the caller has a cheaper way).
 */
async function idSetOf(store: Store, scan: Scan): Promise<Set<string>>;
async function idSetOf(store: Store, scan: Scan, keysMax: number): Promise<Set<string> | undefined>;
async function idSetOf(store: Store, scan: Scan, keysMax = Infinity): Promise<Set<string> | undefined> {
  const ids = new Set<string>();
  const filter = scan.keyFilter;
  let read = 0;
  for (let i = 0; i < scan.ranges.length; i++) {
    if (scan.idOffsets !== undefined) {
      for await (const batch of idsAfter(store, scan.ranges[i]!)) {
        read += batch.length;
        if (read > keysMax) return undefined;
        for (const id of batch) ids.add(id);
      }
      continue;
    }
    for await (const batch of store.keyBatches('paths', scan.ranges[i]!)) {
      read += batch.length;
      if (read > keysMax) return undefined;
      for (const key of batch) {
        if (filter === undefined) {
          ids.add(docIdOfPosting(key));
        } else {
          const [value, id] = decodeKey(key.subarray(filter.valueOffset)) as [string, string];
          if (!wholeInKey(value) || filter.keep(value)) ids.add(id);
        }
      }
    }
  }
  return ids;
}

/** A scan's document ids in id order. */
async function idsOf(store: Store, scan: Scan): Promise<string[]> {
  return sortIds([...(await idSetOf(store, scan))]);
}

const HIGH_UNITS = /[\uD800-\uFFFF]/;

/** Tuple keys order strings by code point (UTF-8 bytes): sort ids the same way so pages are stable. */
function sortIds(ids: string[]): string[] {
  // Below U+D800, UTF-16 order is code point order: the native string sort (ids are mostly ASCII).
  if (!ids.some((id) => HIGH_UNITS.test(id))) return ids.sort();
  // Encode each id once, not once per comparison.
  const encoded = ids.map((id) => ({ id, bytes: Buffer.from(id) }));
  encoded.sort((a, b) => Buffer.compare(a.bytes, b.bytes));
  return encoded.map((e) => e.id);
}

/** Bodies an index-order walk reads at once, at most (`orderedByIndex`). */
const WALK_FETCH_MAX = 256;
/** Postings under a path at deeper paths a desc walk looks through before giving up on the index order. */
const DEEPER_POSTINGS_MAX = 4_096;
/**
 * Postings of the sort path a walk testing each against the matches' ids goes through, at least,
 * before it gives up for the general path (which reads every match's body): with few matches
 * spread over a long path (one document sorted among 100,000) the walk would cost more. Past
 * this, the walk may go on for 8 postings a match.
 */
const WALK_POSTINGS_MIN = 4_096;

/** The value a posting at a path's own band stands for: the value itself, or for a string its key form (cut to STRING_CHARS_MAX, lone surrogates as U+FFFD). */
function postedValue(tag: number, value: number | string | undefined): Json {
  switch (tag) {
    case TYPE_TAG.null:
      return null;
    case TYPE_TAG.false:
      return false;
    case TYPE_TAG.true:
      return true;
    case TYPE_TAG.emptyArray:
      return [];
    case TYPE_TAG.emptyObject:
      return {};
    default:
      return value as number | string;
  }
}

/**
 * Whether a posted value is the document's real one, placed where the key order puts it: not a
 * string possibly cut (`wholeInKey`), nor one holding anything at or above U+FFFD or a surrogate
 * (a lone surrogate is posted as U+FFFD and sorts above those).
 */
function exactInKey(v: Json): boolean {
  return typeof v !== 'string' || (wholeInKey(v) && !/[\uD800-\uDFFF\uFFFD-\uFFFF]/.test(v));
}

/**
 * Whether every document after this posting in a walk has a sort value no better than it.
 * Ascending always: a posted string is a lower bound of the real one (cut short, or a lone
 * surrogate posted as U+FFFD, which sorts below any surrogate). Descending only when the value
 * is exact in its key.
 */
function boundHolds(v: Json, dir: 'asc' | 'desc'): boolean {
  return dir === 'asc' || exactInKey(v);
}

/** The condition kinds on a path whose match means the path is present in the document. */
const PRESENCE_KINDS = new Set<Condition['kind']>(['eq', 'ne', 'cmp', 'in', 'contains', 'prefix', 'regex', 'exists', 'size', 'mod', 'type', 'elemMatch', 'allMatch', 'keyMapMatch']);

const samePath = (a: readonly (string | number)[], b: readonly (string | number)[]) => a.length === b.length && a.every((s, i) => s === b[i]);

/**
 * A sorted page of an exact plan read in the first sort key's order, from that path's own
 * postings, instead of reading every match's body. The matches are the plan's ids (keys only:
 * a set to test each posting against), or, when the plan scans the sort path itself, its own
 * postings there (counted, no set: the walk goes through the scan's ranges), or every document.
 * The walk goes through the path's values in the sort's direction (from a bookmark's value, the
 * matches before it counted from keys), reads the bodies of the matches it meets, and stops once
 * the page is full and the next posted value is worse than the page's last (ties go on: the id
 * decides them from keys with one sort key, bodies with more). Order is CouchDB's
 * collation with "missing" lowest, so the walk answers only when the documents it cannot see
 * could not be on the page: ascending, the selector must imply the path is present (a missing
 * one would come first); descending, no match may hold an array or object there (they come first,
 * and are posted at deeper paths). Anything else, or a walk that ends before every match was
 * seen with the page not decided, is undefined: the caller runs the general path.
 */
async function orderedByIndex(ctx: FindContext, db: string, q: FindQuery, scan: Scan | Narrowed | 'every document', owns: ((id: string) => boolean) | undefined, windowEnd: number, spent: { keys: number; bodies: number }): Promise<{ docs: FoundDoc[]; total: number } | undefined> {
  const first = q.orderBy[0]!;
  const path = first.path;
  if (path.some((s) => typeof s !== 'string') || (path[0] as string).startsWith('_')) return undefined;
  const under = prefixRange([db, ...(path as string[])]);
  const prefix = under.gte;
  // Under the path, the element after it is a type tag (a number) for the path's own value, an
  // array segment (bytes) or an object key (a string) for deeper paths.
  const band = (lo: number, hi: number): KeyRange => ({ gte: Buffer.concat([prefix, Buffer.of(lo)]), lt: Buffer.concat([prefix, Buffer.of(hi)]) });
  const ownBand = band(ELEMENT_TAG.number, ELEMENT_TAG.bigint); // the path's own values, in collation order
  const deeperBand = band(ELEMENT_TAG.bytes, ELEMENT_TAG.number); // arrays and objects at the path
  // A scan on the sort path itself (every range under it): its postings there are the matches, met in order.
  const onPath = scan !== 'every document' && 'ranges' in scan && owns === undefined && scan.exact && scan.keyFilter === undefined && scan.ranges.every((r) => Buffer.compare(r.gte, under.gte) >= 0 && Buffer.compare(r.lt, under.lt) <= 0);
  // Every match meets every condition: one on the sort path that needs the field there rules out missing ones.
  const present = conjuncts(q.where).some((c) => 'path' in c && samePath(c.path, path) && PRESENCE_KINDS.has(c.kind));
  if (first.dir === 'asc' && !onPath && !present) return undefined;

  let walkRanges: KeyRange[] = [ownBand];
  /** Whether a posting met in the walk is a match; undefined: every one is. */
  let isMatch: ((id: string) => boolean) | undefined;
  let total: number;
  /** Matches holding an array or an object at the path, when counted (on-path scans). */
  let deeperMatches: number | undefined;
  if (scan === 'every document') {
    // Each posting is a live document's, and the database's record counts them.
    if (owns !== undefined) return undefined;
    total = await findableDocs(ctx.docs, db);
  } else if (onPath) {
    walkRanges = clipRanges(scan.ranges, ownBand);
    const deeperIds = new Set<string>();
    for (const r of clipRanges(scan.ranges, deeperBand)) {
      for await (const batch of ctx.store.keyBatches('paths', r)) {
        spent.keys += batch.length;
        for (const key of batch) deeperIds.add(docIdOfPosting(key));
      }
    }
    let own = 0;
    for (const r of walkRanges) own += await ctx.store.count('paths', r);
    spent.keys += own;
    deeperMatches = deeperIds.size;
    total = own + deeperMatches; // one value at the path: a document is in one band or the other
  } else if ('ids' in scan) {
    // Narrowed by every condition, the owner's filter applied.
    const { ids } = scan;
    isMatch = (id) => ids.has(id);
    total = ids.size;
  } else {
    const ids = await idSetOf(ctx.store, scan);
    if (owns !== undefined) for (const id of ids) if (!owns(id)) ids.delete(id);
    spent.keys += ids.size;
    isMatch = (id) => ids.has(id);
    total = ids.size;
  }
  const after = q.after;
  if (after === undefined && (q.limit === 0 || total === 0)) return { docs: [], total };
  // A bookmark's page starts after its position: the walk starts at its first key's value.
  let bookmarkGroup: KeyRange | undefined;
  if (after !== undefined) {
    // A missing field or a container has no posting of its own; a long string may be cut in its key.
    const b = after.keys[0];
    if (b === undefined) return undefined;
    const leaf = leafKey(b);
    if (leaf === undefined || !exactInKey(b)) return undefined;
    bookmarkGroup = prefixRange([db, ...(path as string[]), leaf.tag, ...(leaf.value === undefined ? [] : [leaf.value])]);
  }

  if (first.dir === 'desc') {
    // Arrays and objects at the path sort above every value posted there.
    if (deeperMatches !== undefined) {
      if (deeperMatches > 0) return undefined;
    } else {
      let deeper = 0;
      for await (const batch of ctx.store.keyBatches('paths', { ...deeperBand, limit: DEEPER_POSTINGS_MAX + 1 })) {
        spent.keys += batch.length;
        deeper += batch.length;
        if (deeper > DEEPER_POSTINGS_MAX) return undefined;
        for (const key of batch) if (isMatch === undefined || isMatch(docIdOfPosting(key))) return undefined;
      }
    }
  }

  /** Of the bookmark's value's matches, those after its position (the rest, like everything walked before that value, is before it). */
  let afterInGroup: Set<string> | undefined;
  if (after !== undefined && bookmarkGroup !== undefined) {
    const desc = first.dir === 'desc';
    // Before the bookmark: what the walk meets before its value (missing fields, sorting first, are
    // ruled out ascending; arrays and objects, first descending, were looked for above).
    const before = clipRanges(walkRanges, desc ? { gte: bookmarkGroup.lt, lt: ownBand.lt } : { gte: ownBand.gte, lt: bookmarkGroup.gte });
    let beforeCount = 0;
    for (const r of before) {
      if (isMatch === undefined) {
        beforeCount += await ctx.store.count('paths', r);
        continue;
      }
      for await (const batch of ctx.store.keyBatches('paths', r)) for (const key of batch) if (isMatch(docIdOfPosting(key))) beforeCount++;
    }
    const tied: string[] = [];
    for (const r of clipRanges(walkRanges, bookmarkGroup)) {
      for await (const batch of ctx.store.keyBatches('paths', r)) {
        for (const key of batch) {
          const id = docIdOfPosting(key);
          if (isMatch === undefined || isMatch(id)) tied.push(id);
        }
      }
    }
    spent.keys += beforeCount + tied.length;
    if (q.orderBy.length === 1) {
      // One sort key: the bookmark's value ties, and the id decides.
      afterInGroup = new Set(tied.filter((id) => compareStrings(id, after.id) > 0));
    } else {
      afterInGroup = new Set<string>();
      for (let i = 0; i < tied.length; i += FETCH_BATCH) {
        const slice = tied.slice(i, i + FETCH_BATCH);
        spent.bodies += slice.length;
        for (const d of await winners(ctx.docs, db, slice)) {
          if (d === undefined) return undefined; // a write raced the walk
          if (compareToPosition(d, after, q.orderBy) > 0) afterInGroup.add(d.id);
        }
      }
    }
    total -= beforeCount + (tied.length - afterInGroup.size);
    walkRanges = clipRanges(walkRanges, desc ? { gte: ownBand.gte, lt: bookmarkGroup.lt } : { gte: bookmarkGroup.gte, lt: ownBand.lt });
  }
  if (q.limit === 0 || total === 0) return { docs: [], total };

  const page: FoundDoc[] = [];
  let worst: Json | undefined; // the page's last first-key value, once the page is full
  let pending: string[] = [];
  let seen = 0;
  let lost = false; // a match's body was gone when read (a write raced the walk)
  const flush = async () => {
    if (pending.length === 0) return;
    const found = await winners(ctx.docs, db, pending);
    spent.bodies += pending.length;
    pending = [];
    for (const d of found) if (d !== undefined) page.push(d);
    if (found.includes(undefined)) lost = true;
    page.sort((a, b) => compareForOrder(a, b, q.orderBy));
    if (page.length >= windowEnd) {
      page.length = windowEnd;
      const v = valueAt(page[windowEnd - 1]!.body, path);
      worst = v === MISSING ? undefined : v;
    }
  };
  // Bodies are read a chunk of matches at a time: the page's size, so the first read can fill it.
  const chunk = Math.min(WALK_FETCH_MAX, Math.max(4, windowEnd));
  const desc = first.dir === 'desc';
  // The postings of one value come together, in id order. With one sort key and every value met
  // so far whole in its key, a value's matches tie and the id decides among them: only as many as
  // the page still has room for are read, the lowest ids, and the page is done once it is full
  // (what follows is worse: a key after a whole one holds a worse value even when cut, since a cut
  // key is 199 code units or more of its value). Otherwise every match goes to the bodies.
  const oneKey = q.orderBy.length === 1;
  let exactSoFar = true;
  let group: { tag: number; raw: number | string | undefined; value: Json; ids: string[] } | undefined;
  const closeGroup = async () => {
    if (group === undefined || group.ids.length === 0) return;
    let ids = group.ids;
    if (oneKey && exactSoFar) {
      if (desc) ids.reverse(); // met from the highest id down
      ids = ids.slice(0, Math.max(0, windowEnd - page.length - pending.length));
    }
    for (const id of ids) {
      pending.push(id);
      if (pending.length >= chunk) await flush();
    }
  };
  let stopped = false;
  const walkMax = isMatch === undefined ? Infinity : Math.max(WALK_POSTINGS_MIN, 8 * total);
  let walked = 0;
  walk: for (const range of desc ? [...walkRanges].reverse() : walkRanges) {
    for await (const batch of ctx.store.keyBatches('paths', { ...range, reverse: desc }, 256)) {
      for (const key of batch) {
        spent.keys++;
        if (++walked > walkMax) return undefined;
        const [tag, ...rest] = decodeKey(key.subarray(prefix.length)) as [number, ...(number | string)[]];
        const id = rest.at(-1) as string;
        const raw = rest.length === 2 ? rest[0] : undefined;
        if (group === undefined || tag !== group.tag || raw !== group.raw) {
          exactSoFar &&= group === undefined || exactInKey(group.value);
          await closeGroup();
          const value = postedValue(tag, raw);
          if (oneKey && exactSoFar && page.length + pending.length >= windowEnd) {
            stopped = true;
            break walk;
          }
          if (worst !== undefined && boundHolds(value, first.dir)) {
            const c = collate(value, worst);
            if (desc ? c < 0 : c > 0) {
              stopped = true;
              break walk;
            }
          }
          group = { tag, raw, value, ids: [] };
        }
        if (isMatch !== undefined && !isMatch(id)) continue;
        if (afterInGroup !== undefined && bookmarkGroup !== undefined && Buffer.compare(key, bookmarkGroup.gte) >= 0 && Buffer.compare(key, bookmarkGroup.lt) < 0 && !afterInGroup.has(id)) continue;
        seen++;
        group.ids.push(id);
      }
    }
  }
  if (!stopped) {
    exactSoFar &&= group === undefined || exactInKey(group.value);
    await closeGroup();
  }
  await flush();
  // A body gone under the walk: the page may be short of one; the general path decides.
  if (lost) return undefined;
  // Every match seen: the page is whole whatever the walk could not see.
  if (!stopped && seen < total) return undefined;
  return { docs: page.slice(q.offset, windowEnd), total };
}

/** The parts of `ranges` inside `band`, in key order. */
function clipRanges(ranges: readonly KeyRange[], band: KeyRange): KeyRange[] {
  const out: KeyRange[] = [];
  for (const r of ranges) {
    const gte = Buffer.compare(r.gte, band.gte) > 0 ? r.gte : band.gte;
    const lt = Buffer.compare(r.lt, band.lt) < 0 ? r.lt : band.lt;
    if (Buffer.compare(gte, lt) < 0) out.push({ gte, lt });
  }
  return out.sort((a, b) => Buffer.compare(a.gte, b.gte));
}

/** The live documents `_find` can return: the record's count, less the live design documents it includes. */
async function findableDocs(docs: DocReader, db: string): Promise<number> {
  return docs.dbInfo(db).doc_count - (await liveDesignDocs(docs, db));
}

/** How many live design documents a database holds. */
async function liveDesignDocs(docs: DocReader, db: string): Promise<number> {
  let n = 0;
  // Design ids are `_design/…`: between `_design` and `_design0` (`0` follows `/`).
  for await (const batch of docs.scanRecords(db, 64, '_design', '_design0')) {
    for (const d of batch) {
      if (!isDesignDocId(d.id)) return n;
      if (!d.record.deleted) n++;
    }
  }
  return n;
}

/** One value's postings (an equality): its size is a per-value count. */
const oneValue = (scan: Scan) => scan.idOffsets?.length === 1;

/** A scan's size: exact from the value counts for one value, else counted up to the cap. */
function measure(ctx: FindContext, db: string, scan: Scan): Promise<number> {
  if (oneValue(scan) && ctx.counts !== undefined) return ctx.counts.count(db, scan.ranges[0]!.gte);
  return countRange(ctx.store, scan.ranges, ESTIMATE_CAP);
}

export async function planFind(ctx: FindContext, db: string, q: FindQuery): Promise<Explained> {
  const byCondition = conjuncts(q.where).map((c) => scansFor(db, c));
  const scans = byCondition.flat();
  const estimates = await Promise.all(scans.map((s) => measure(ctx, db, s)));
  const capped = scans.map((s, i) => !(oneValue(s) && ctx.counts !== undefined) && estimates[i]! >= ESTIMATE_CAP);
  const plan = choosePlan(scans, estimates);
  let at = 0;
  const conditions = byCondition.map((own): ConditionScan => {
    let best: number | undefined;
    for (let i = at; i < at + own.length; i++) if (best === undefined || estimates[i]! < estimates[best]!) best = i;
    at += own.length;
    return best === undefined ? { scan: undefined, estimate: Infinity, capped: false } : { scan: scans[best], estimate: estimates[best]!, capped: capped[best]! };
  });
  return {
    plan,
    exact: planIsExact(plan, q.where),
    estimates: scans.map((s, i) => ({ scan: s.describe, postings: estimates[i]!, capped: capped[i]! })),
    conditions,
    ...(plan.kind === 'index' && conditions.length > 1 ? { narrowing: predictNarrowing(conditions) } : {}),
  };
}

/** `_explain`'s account of a plan (a database's answer, and each shard's in a VDB's). */
export function describePlan({ plan, exact, estimates, narrowing }: Explained): Record<string, unknown> {
  return {
    plan:
      plan.kind === 'index'
        ? { kind: 'index', scan: plan.scan.describe, estimated_postings: plan.estimate, alternatives: plan.alternatives }
        : { kind: 'full_scan', reason: plan.reason },
    // An exact plan counts from the index alone; otherwise every candidate's body is checked.
    exact: exact || narrowing?.exact === true,
    candidates: estimates,
    // Several conditions: the plan's ids tested against each other condition's keys.
    ...(narrowing === undefined ? {} : { narrowing: { candidates: narrowing.candidates, tests: narrowing.tests } }),
  };
}

/**
 * The conditions with a scan, smallest first (the first gives the candidates), and whether every
 * condition has an exact one (then testing each from keys decides the matches).
 */
function bySize(conditions: readonly ConditionScan[]): { driver: ConditionScan & { scan: Scan }; others: (ConditionScan & { scan: Scan })[]; exactScans: boolean } {
  const scanned = conditions.filter((c): c is ConditionScan & { scan: Scan } => c.scan !== undefined).sort((a, b) => a.estimate - b.estimate);
  const [driver, ...others] = scanned;
  return { driver: driver!, others, exactScans: scanned.length === conditions.length && scanned.every((c) => c.scan.exact) };
}

/** What `narrowByConditions` would do, with the smallest scan's estimate for its number of ids (at most what it reads). */
function predictNarrowing(conditions: readonly ConditionScan[]): NonNullable<Explained['narrowing']> {
  const { driver, others, exactScans } = bySize(conditions);
  let exact = exactScans;
  const tests = others.map(({ scan, estimate, capped }) => {
    const test = candidateTest(scan, estimate, driver.estimate);
    // A read given up leaves the condition to the bodies unless the keys can be looked up.
    if (!test.lookup && (test.readMax === undefined || capped)) exact = false;
    return { scan: scan.describe, postings: estimate, test: describeTest(test, capped) };
  });
  return { candidates: driver.scan.describe, tests, exact };
}

/** The candidates of a selector of several conditions, narrowed by each condition's keys. */
interface Narrowed {
  readonly ids: Set<string>;
  /** Every condition was decided from keys alone: the ids are exactly the matches. */
  readonly exact: boolean;
}

/**
 * The ids of the smallest condition's scan, kept where every other condition's scan holds them:
 * each is tested as `candidateTest` (plan.ts) says: look the candidates' keys up, or read its
 * keys for a set, whichever costs less, or leave it to the bodies. Sound for any scan, exact or
 * not: every match of a condition is in its scan. When each condition has an exact scan and
 * each was tested, the ids left are exactly the matches (no body read to count them or to
 * filter; read at different moments, as an exact plan's ids and page always were).
 */
async function narrowByConditions(ctx: FindContext, conditions: readonly ConditionScan[], owns: ((id: string) => boolean) | undefined, spent: { keys: number }): Promise<Narrowed> {
  const { driver, others, exactScans } = bySize(conditions);
  let exact = exactScans;
  const ids = await idSetOf(ctx.store, driver.scan);
  spent.keys += ids.size;
  if (owns !== undefined) for (const id of ids) if (!owns(id)) ids.delete(id);
  for (const { scan, estimate } of others) {
    if (ids.size === 0) break;
    // A scan past the counting cap (its size unknown) is read up to its limit, then given up.
    const { readMax, lookup } = candidateTest(scan, estimate, ids.size);
    const other = readMax === undefined ? undefined : await idSetOf(ctx.store, scan, readMax);
    if (other !== undefined) {
      spent.keys += other.size;
      for (const id of ids) if (!other.has(id)) ids.delete(id);
    } else {
      if (readMax !== undefined) spent.keys += readMax;
      if (lookup) spent.keys += await keepPosted(ctx.store, scan.ranges, ids);
      else exact = false;
    }
  }
  return { ids, exact };
}

/** Keeps the ids that have a posting in one of `ranges` (each one value's postings: its prefix, then the id); how many keys were looked up. */
async function keepPosted(store: Store, ranges: readonly KeyRange[], ids: Set<string>): Promise<number> {
  const all = [...ids];
  let looked = 0;
  for (let i = 0; i < all.length; i += FETCH_BATCH * 4) {
    const slice = all.slice(i, i + FETCH_BATCH * 4);
    const found = new Set<string>();
    for (const r of ranges) {
      const values = await store.getMany('paths', slice.map((id) => extendKey(r.gte, [id])));
      looked += slice.length;
      values.forEach((v, j) => v !== undefined && found.add(slice[j]!));
    }
    for (const id of slice) if (!found.has(id)) ids.delete(id);
  }
  return looked;
}

/** The ids at positions [from, to) of one value's postings (in id order), and how many keys the range holds. */
async function pageOfOrderedScan(store: Store, range: KeyRange & { limit?: number }, from: number, to: number): Promise<{ ids: string[]; total: number }> {
  const ids: string[] = [];
  let total = 0;
  const prefixChars = keyStringLength(range.gte);
  for await (const batch of store.keyStringBatches('paths', range)) {
    for (let i = Math.max(0, from - total); i < batch.length && total + i < to; i++) ids.push(stringPartAfter(batch[i]!, prefixChars));
    total += batch.length;
  }
  return { ids, total };
}

/**
 * Winning, live documents for these ids (undefined for missing or deleted ones). Without
 * bodies (an exact plan answering ids only) no body is read and each `body` is empty.
 */
async function winners(docs: DocReader, db: string, ids: readonly string[], withBodies = true): Promise<(FoundDoc | undefined)[]> {
  const recs = await docs.getRecords(db, ids);
  const live: { i: number; id: string; rev: string }[] = [];
  recs.forEach((rec, i) => {
    if (rec !== undefined && !rec.deleted) live.push({ i, id: ids[i]!, rev: rec.winner });
  });
  const out: (FoundDoc | undefined)[] = new Array(ids.length).fill(undefined);
  if (!withBodies) {
    for (const d of live) out[d.i] = { id: d.id, rev: d.rev, body: {} };
    return out;
  }
  const bodies = await docs.getBodies(db, live);
  live.forEach((d, j) => {
    const body = bodies[j];
    if (body !== undefined) out[d.i] = { id: d.id, rev: d.rev, body };
  });
  return out;
}

/** Every live document of a database in id order (or the reverse), in batches. */
async function* allDocs(docs: DocReader, db: string, afterId?: string, descending = false): AsyncGenerator<FoundDoc[]> {
  for await (const batch of docs.scanRecords(db, FETCH_BATCH, afterId, undefined, descending)) {
    // Design documents have no postings, so index plans never see them; a scan skips them too.
    const live = batch.filter((d) => !d.record.deleted && !isDesignDocId(d.id)).map((d) => ({ id: d.id, rev: d.record.winner }));
    const bodies = await docs.getBodies(db, live);
    const out: FoundDoc[] = [];
    live.forEach((d, i) => {
      const body = bodies[i];
      if (body !== undefined) out.push({ ...d, body });
    });
    if (out.length > 0) yield out;
  }
}

function output(d: FoundDoc, q: FindQuery, conflicting?: readonly string[]): Record<string, unknown> {
  if (!q.includeDocs) return { _id: d.id, _rev: d.rev };
  const doc = { ...d.body, _id: d.id, _rev: d.rev, ...(conflicting !== undefined && conflicting.length > 0 ? { _conflicts: conflicting } : {}) };
  return project(doc, q.fields);
}

/** The page as returned; with CouchDB's `conflicts: true`, each document's other leaves as `_conflicts`. */
async function outputAll(reader: DocReader, db: string, docs: readonly FoundDoc[], q: FindQuery): Promise<Record<string, unknown>[]> {
  if (q.conflicts !== true || !q.includeDocs || docs.length === 0) return docs.map((d) => output(d, q));
  const records = await reader.getRecords(db, docs.map((d) => d.id));
  return docs.map((d, i) => output(d, q, records[i] === undefined ? undefined : conflicts(records[i]!.tree)));
}

/**
 * The query one source of a merged `_find` runs (a VDB shard, a federation member): its first
 * `limit` matches from the start, as whole documents, since the merge may order by a field the
 * projection drops; the merge then cuts the window and projects to `fields`.
 */
export function sourceQuery(q: FindQuery, limit: number | undefined, includeDocs = true): FindQuery {
  return { ...q, offset: 0, limit, includeDocs, fields: undefined };
}

/** Keeps the best `k` documents by the query order without sorting everything. */
class TopK {
  #items: FoundDoc[] = [];
  constructor(
    readonly k: number,
    readonly order: FindQuery['orderBy'],
  ) {}
  push(d: FoundDoc): void {
    this.#items.push(d);
    if (this.#items.length >= this.k * 2 + 64) this.#trim();
  }
  #trim(): void {
    this.#items.sort((a, b) => compareForOrder(a, b, this.order));
    this.#items.length = Math.min(this.#items.length, this.k);
  }
  result(): FoundDoc[] {
    this.#trim();
    return this.#items;
  }
}

/** No condition, or only conditions on `_id`: CouchDB's `_all_docs` index serves those. */
function onlyIds(where: Condition): boolean {
  return conjuncts(where).every((c) => 'path' in c && c.path.length === 1 && c.path[0] === '_id');
}

/**
 * `owns`: a filter on document ids (a VDB shard keeps only the ids its hash range owns, so a
 * document being moved between shards is never counted twice).
 */
export async function executeFind(ctx: FindContext, db: string, q: FindQuery, owns?: (id: string) => boolean): Promise<FindResult> {
  const { store } = ctx;
  const { plan, exact, conditions } = await planFind(ctx, db, q);
  if (plan.kind === 'full_scan' && q.allowFallback === false && !onlyIds(q.where)) {
    throw new FirkinError('bad_request', `no index can serve this selector (${plan.reason}) and "allow_fallback" is false: add a condition on a field (equality, range, $in, $exists, $prefix, $regex), or allow the full scan`);
  }
  const limit = q.limit;
  const windowEnd = limit === undefined ? Number.POSITIVE_INFINITY : q.offset + limit;
  const tooMany = (total: number) => {
    if (limit === undefined && total - q.offset > QUERY_LIMITS.resultsMax) {
      throw new FirkinError('bad_request', `${total} documents match, more than ${QUERY_LIMITS.resultsMax} in one response: page with limit and offset`);
    }
  };
  const stats: FindStats = { keysExamined: 0, docsExamined: 0 };
  /** What an index-order walk read, whether it answered or gave way to the general path. */
  const spent = { keys: 0, bodies: 0 };
  // Asking for everything reads everything; a selector with conditions that no index served is worth a warning.
  if (plan.kind === 'full_scan' && conjuncts(q.where).length > 0 && !onlyIds(q.where)) stats.fullScan = plan.reason;
  /** The answer for a page (before projection: the bookmark may need a field it drops). */
  const answer = async (docs: readonly FoundDoc[], total: number): Promise<FindResult> => ({
    docs: await outputAll(ctx.docs, db, docs, q),
    meta: { total, offset: q.offset, limit: limit ?? null },
    bookmark: bookmarkAfter(docs, q),
    stats: { ...stats, keysExamined: stats.keysExamined + spent.keys, docsExamined: stats.docsExamined + spent.bodies },
  });

  const idOffsets = plan.kind === 'index' ? plan.scan.idOffsets : undefined;
  // A bookmark's page starts after a position: the paths that count or page from the index
  // alone do not know positions (the ids-only one below filters by id).
  const keyset = q.after !== undefined;
  if (!keyset && plan.kind === 'index' && exact && q.orderBy.length === 0 && idOffsets !== undefined && idOffsets.length <= IN_COUNTED_VALUES_MAX && owns === undefined && ctx.counts !== undefined && limit !== undefined) {
    // Equality or `in` on distinct values at a path without array indexes: a document holds
    // one value there, so it is in exactly one range. Total = sum of the per-value counts;
    // the page = the first ids of each range (each in id order), merged.
    const { ranges } = plan.scan;
    const counts = ctx.counts;
    const totals = await Promise.all(ranges.map((r) => counts.count(db, r.gte)));
    const total = totals.reduce((a, b) => a + b, 0);
    let ids: string[] = [];
    if (limit > 0) {
      const single = ranges.length === 1;
      const lists = await Promise.all(ranges.map((r, i) => pageOfOrderedScan(store, { ...r, limit: windowEnd }, single ? q.offset : 0, windowEnd)));
      ids = single ? lists[0]!.ids : sortIds(lists.flatMap((l) => l.ids)).slice(q.offset, windowEnd);
      stats.keysExamined = lists.reduce((n, l) => n + l.ids.length, 0);
    }
    const docs = (await winners(ctx.docs, db, ids, q.includeDocs)).filter((d): d is FoundDoc => d !== undefined);
    stats.docsExamined = ids.length;
    return answer(docs, total);
  }
  if (!keyset && plan.kind === 'index' && exact && q.orderBy.length === 0 && idOffsets?.length === 1 && owns === undefined) {
    // One value's postings are already in id order: count keys without decoding them and
    // decode only the page's ids.
    const { ids, total } = await pageOfOrderedScan(store, plan.scan.ranges[0]!, q.offset, windowEnd);
    tooMany(total);
    const docs = (await winners(ctx.docs, db, ids, q.includeDocs)).filter((d): d is FoundDoc => d !== undefined);
    return answer(docs, total);
  }
  // `_id` descending is id order read backwards.
  const idDesc = q.orderBy.length === 1 && samePath(q.orderBy[0]!.path, ['_id']) && q.orderBy[0]!.dir === 'desc';
  const idOrder = q.orderBy.length === 0 || idDesc;
  if (!keyset && conjuncts(q.where).length === 0 && idOrder && owns === undefined) {
    // Everything: the database record counts live documents (design ones too, which `_find` never returns); the page comes in id order.
    const total = await findableDocs(ctx.docs, db);
    tooMany(total);
    const docs: FoundDoc[] = [];
    if (limit !== 0) {
      let seen = 0;
      for await (const batch of allDocs(ctx.docs, db, undefined, idDesc)) {
        stats.docsExamined += batch.length;
        stats.keysExamined += batch.length; // a scan in id order: each document is its own key
        for (const d of batch) if (seen++ >= q.offset && docs.length < windowEnd - q.offset) docs.push(d);
        if (docs.length >= windowEnd - q.offset) break;
      }
    }
    return answer(docs, total);
  }
  // Several conditions: the smallest one's ids narrowed by the others' keys.
  const narrowed = plan.kind === 'index' && conditions.length > 1 ? await narrowByConditions(ctx, conditions, owns, spent) : undefined;
  /** The candidates in id order: the narrowed ids (their keys counted in `spent`), or the plan's scan read now. */
  const candidateIds = async (scan: Scan): Promise<string[]> => {
    if (narrowed !== undefined) return sortIds([...narrowed.ids]);
    const ids = await idsOf(store, scan);
    stats.keysExamined = ids.length;
    return ids;
  };
  if (plan.kind === 'index' && (exact || narrowed?.exact === true) && idOrder) {
    const after = q.after?.id;
    const scanned = await candidateIds(plan.scan);
    const ids = scanned.filter((id) => (owns === undefined || owns(id)) && (after === undefined || (idDesc ? compareStrings(id, after) < 0 : compareStrings(id, after) > 0)));
    if (idDesc) ids.reverse();
    tooMany(ids.length);
    if (limit === 0) return answer([], ids.length);
    const page = ids.slice(q.offset, windowEnd);
    const docs = (await winners(ctx.docs, db, page, q.includeDocs)).filter((d): d is FoundDoc => d !== undefined);
    stats.docsExamined = page.length;
    return answer(docs, ids.length);
  }

  const everything = conjuncts(q.where).length === 0;
  if (q.orderBy.length > 0 && limit !== undefined && ((plan.kind === 'index' && exact) || narrowed?.exact === true || everything)) {
    const walked = await orderedByIndex(ctx, db, q, narrowed ?? (plan.kind === 'index' ? plan.scan : 'every document'), owns, windowEnd, spent);
    if (walked !== undefined) return answer(walked.docs, walked.total);
  }

  const ordered = q.orderBy.length > 0;
  const top = new TopK(Number.isFinite(windowEnd) ? windowEnd : Number.MAX_SAFE_INTEGER, q.orderBy);
  const page: FoundDoc[] = [];
  let total = 0;
  const consider = (d: FoundDoc) => {
    stats.docsExamined++;
    if (owns !== undefined && !owns(d.id)) return;
    if (q.after !== undefined && compareToPosition(d, q.after, q.orderBy) <= 0) return;
    if (!matches({ ...d.body, _id: d.id, _rev: d.rev }, q.where)) return;
    if (ordered) {
      if (limit !== 0) top.push(d);
    } else if (total >= q.offset && total < windowEnd) {
      page.push(d);
    }
    total++;
  };
  if (plan.kind === 'index') {
    const ids = await candidateIds(plan.scan);
    for (let i = 0; i < ids.length; i += FETCH_BATCH) {
      for (const d of await winners(ctx.docs, db, ids.slice(i, i + FETCH_BATCH))) if (d !== undefined) consider(d);
    }
  } else {
    // In id order, a bookmark's page starts with a seek to its id.
    for await (const batch of allDocs(ctx.docs, db, q.orderBy.length === 0 ? q.after?.id : undefined)) for (const d of batch) consider(d);
    stats.keysExamined = stats.docsExamined; // a full scan reads documents in id order: each is its own key
  }
  tooMany(total);
  const docs = ordered ? top.result().slice(q.offset, windowEnd) : page;
  return answer(docs, total);
}
