// One round of the filtered vector search oracle, for any place that serves a collection over
// HTTP (a standalone node, a cluster whose collections fan out to several shards): upsert
// random points, change metadata under the filter, delete some, then check each search, each
// search of a batch and each scroll page against a client-side scan. The collection must be
// flat (`index.m: 0`) and f32, so searches are exact.
import fc from 'fast-check';

/** Sends one request (a body is JSON) and answers its status and parsed body. */
export type Send = (method: string, path: string, body?: unknown) => Promise<{ status: number; body: any }>;

export type Meta = Record<string, unknown>;
export interface Point {
  id: string;
  vector: number[];
  metadata: Meta;
}

export const DIMS = 3;
const arbMetaValue = fc.oneof(fc.integer({ min: -3, max: 3 }), fc.constantFrom('a', 'b', 'ab', ''), fc.boolean(), fc.constant(null), fc.constantFrom([1], ['a', 1], { k: 1 }));
const arbMeta = fc.dictionary(fc.constantFrom('x', 'y', 'z'), arbMetaValue, { maxKeys: 3 });
const arbVector = fc.array(fc.double({ min: -1, max: 1, noNaN: true }), { minLength: DIMS, maxLength: DIMS });
const arbOperand = fc.oneof(fc.integer({ min: -3, max: 3 }), fc.constantFrom('a', 'b', 'ab', ''));
const arbCondition = fc.oneof(
  arbMetaValue,
  fc.record({ $eq: arbMetaValue }),
  fc.record({ $ne: arbMetaValue }),
  fc.record({ $in: fc.array(arbMetaValue, { maxLength: 3 }) }),
  fc.record({ $nin: fc.array(arbMetaValue, { maxLength: 3 }) }),
  fc.record({ $gt: arbOperand, $lte: arbOperand }, { requiredKeys: [] }).filter((r) => Object.keys(r).length > 0),
  fc.record({ $gte: arbOperand, $lt: arbOperand }, { requiredKeys: [] }).filter((r) => Object.keys(r).length > 0),
);
const arbFilter = fc.option(fc.dictionary(fc.constantFrom('x', 'y', 'z', 'w'), arbCondition, { maxKeys: 2 }), { nil: undefined });

const distance = (a: readonly number[], b: readonly number[]) => Math.sqrt(a.reduce((s, v, i) => s + (v - b[i]!) ** 2, 0));

/** The same rules as `vector/filter.ts`, written again from its documentation. */
function passes(filter: Record<string, unknown> | undefined, meta: Meta): boolean {
  if (filter === undefined) return true;
  const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);
  // Numbers with numbers, strings with strings (by code unit, as `<` compares them).
  const ordered = (v: unknown, o: unknown, test: (c: number) => boolean) => {
    if (!((typeof v === 'number' && typeof o === 'number') || (typeof v === 'string' && typeof o === 'string'))) return false;
    const [a, b] = [v, o] as [string, string];
    return test(a < b ? -1 : a > b ? 1 : 0);
  };
  return Object.entries(filter).every(([key, cond]) => {
    const present = Object.hasOwn(meta, key);
    const v = meta[key];
    const isOps = cond !== null && typeof cond === 'object' && !Array.isArray(cond) && Object.keys(cond).length > 0 && Object.keys(cond).every((k) => k.startsWith('$'));
    if (!isOps) return present && same(v, cond);
    return Object.entries(cond as Record<string, unknown>).every(([op, o]) => {
      switch (op) {
        case '$eq':
          return present && same(v, o);
        case '$ne':
          return !(present && same(v, o));
        case '$in':
          return present && (o as unknown[]).some((x) => same(v, x));
        case '$nin':
          return !(present && (o as unknown[]).some((x) => same(v, x)));
        case '$gt':
          return present && ordered(v, o, (c) => c > 0);
        case '$gte':
          return present && ordered(v, o, (c) => c >= 0);
        case '$lt':
          return present && ordered(v, o, (c) => c < 0);
        case '$lte':
          return present && ordered(v, o, (c) => c <= 0);
        default:
          throw new Error(`operator ${op}`);
      }
    });
  });
}

/** Hits agree with brute force when they rank the same distances (ties in any order) over passing live points. */
function agrees(hits: readonly { id: string }[], live: ReadonlyMap<string, Point>, query: readonly number[], filter: Record<string, unknown> | undefined, k: number): string | undefined {
  const expected = [...live.values()].filter((p) => passes(filter, p.metadata)).map((p) => distance(p.vector, query)).sort((a, b) => a - b).slice(0, k);
  if (hits.length !== expected.length) return `${hits.length} hits, brute force has ${expected.length}`;
  const seen = new Set<string>();
  for (const [i, h] of hits.entries()) {
    const p = live.get(h.id);
    if (p === undefined) return `hit ${h.id} is not a live point`;
    if (seen.has(h.id)) return `hit ${h.id} twice`;
    seen.add(h.id);
    if (!passes(filter, p.metadata)) return `hit ${h.id} (${JSON.stringify(p.metadata)}) does not pass the filter`;
    if (Math.abs(distance(p.vector, query) - expected[i]!) > 1e-5) return `hit ${i} (${h.id}) is at ${distance(p.vector, query)}, brute force's ${i}th at ${expected[i]}`;
  }
  return undefined;
}

export interface FilterCase {
  readonly points: readonly { vector: number[]; metadata: Meta }[];
  readonly edits: readonly ({ kind: 'delete'; at: number } | { kind: 'update'; at: number; metadata: Meta })[];
  readonly searches: readonly { vector: number[]; filter: Record<string, unknown> | undefined; k: number }[];
  readonly scrollLimit: number;
}

export const arbFilterCase: fc.Arbitrary<FilterCase> = fc.record({
  points: fc.array(fc.record({ vector: arbVector, metadata: arbMeta }), { minLength: 1, maxLength: 40 }),
  edits: fc.array(fc.oneof(fc.record({ kind: fc.constant('delete' as const), at: fc.nat() }), fc.record({ kind: fc.constant('update' as const), at: fc.nat(), metadata: arbMeta })), { maxLength: 6 }),
  searches: fc.array(fc.record({ vector: arbVector, filter: arbFilter, k: fc.integer({ min: 1, max: 12 }) }), { minLength: 1, maxLength: 4 }),
  scrollLimit: fc.integer({ min: 1, max: 7 }),
});

/**
 * One round on `/vectordb/collections/${c}` (created flat and f32 by the caller, holding no
 * point): the case's points get ids `${prefix}p00`…, so rounds sharing a collection do not
 * collide. Throws what differed from brute force; answers how many hits the searches returned
 * and the round's live ids (to delete them for the next round).
 */
export async function filterRound(send: Send, c: string, { points, edits, searches, scrollLimit }: FilterCase, prefix = ''): Promise<{ hits: number; live: string[] }> {
  let hitsSeen = 0;
  const idOf = (i: number) => `${prefix}p${String(i).padStart(2, '0')}`;
  const live = new Map<string, Point>(points.map((p, i) => [idOf(i), { id: idOf(i), ...p }]));
  const written = await send('POST', `/vectordb/collections/${c}/docs`, { documents: [...live.values()] });
  if (written.status !== 200) throw new Error(`insert answered ${written.status}`);
  const ids = [...live.keys()];
  for (const e of edits) {
    const id = ids[e.at % ids.length]!;
    if (e.kind === 'delete') {
      const r = await send('DELETE', `/vectordb/collections/${c}/docs/${id}`);
      if (r.status !== (live.has(id) ? 200 : 404)) throw new Error(`delete ${id} answered ${r.status}`);
      live.delete(id);
    } else {
      const p = live.get(id) ?? { id, vector: points[e.at % points.length]!.vector, metadata: {} };
      const r = await send('POST', `/vectordb/collections/${c}/docs`, { id, vector: p.vector, metadata: e.metadata });
      if (r.status !== 201) throw new Error(`upsert ${id} answered ${r.status}`);
      live.set(id, { ...p, metadata: e.metadata });
    }
  }
  for (const s of searches) {
    const r = await send('POST', `/vectordb/collections/${c}/search`, { vector: s.vector, k: s.k, ...(s.filter === undefined ? {} : { filter: s.filter }) });
    if (r.status !== 200) throw new Error(`search answered ${r.status}: ${JSON.stringify(r.body)}`);
    const wrong = agrees(r.body.results, live, s.vector, s.filter, s.k);
    if (wrong !== undefined) throw new Error(`search ${JSON.stringify(s)}: ${wrong}`);
    hitsSeen += r.body.results.length;
    for (const h of r.body.results as { id: string; metadata: Meta }[]) {
      if (JSON.stringify(h.metadata) !== JSON.stringify(live.get(h.id)!.metadata)) throw new Error(`hit ${h.id} carries ${JSON.stringify(h.metadata)}`);
    }
  }
  const batch = await send('POST', `/vectordb/collections/${c}/search/batch`, {
    searches: searches.map((s) => ({ vector: s.vector, k: s.k, with_payload: false, ...(s.filter === undefined ? {} : { filter: s.filter }) })),
  });
  if (batch.status !== 200) throw new Error(`batch answered ${batch.status}: ${JSON.stringify(batch.body)}`);
  for (const [i, s] of searches.entries()) {
    const wrong = agrees(batch.body.results[i], live, s.vector, s.filter, s.k);
    if (wrong !== undefined) throw new Error(`batch search ${i} ${JSON.stringify(s)}: ${wrong}`);
  }
  // Scroll with the first search's filter: every passing live point once, in id order.
  const filter = searches[0]!.filter;
  const listed: string[] = [];
  let offset: string | null | undefined;
  for (let pages = 0; pages <= live.size + 1 && offset !== null; pages++) {
    const r = await send('POST', `/vectordb/collections/${c}/docs/scroll`, { limit: scrollLimit, ...(offset === undefined ? {} : { offset }), ...(filter === undefined ? {} : { filter }) });
    if (r.status !== 200) throw new Error(`scroll answered ${r.status}: ${JSON.stringify(r.body)}`);
    listed.push(...(r.body.documents as { id: string }[]).map((d) => d.id));
    offset = r.body.next_offset;
  }
  const want = [...live.values()].filter((p) => passes(filter, p.metadata)).map((p) => p.id).sort();
  if (JSON.stringify(listed) !== JSON.stringify(want)) throw new Error(`scroll of ${JSON.stringify(filter)} listed ${JSON.stringify(listed)}, brute force ${JSON.stringify(want)}`);
  return { hits: hitsSeen, live: [...live.keys()] };
}
