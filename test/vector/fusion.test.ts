// Hybrid fusion: RRF and linear, checked on examples and by properties against a naive oracle.
import fc from 'fast-check';
import t from 'tap';
import type { ScoredId } from '../../src/vector/bm25.js';
import { RRF_K, fuse } from '../../src/vector/fusion.js';
import { fcParams } from '../support/fc.js';

const arbList = fc
  .uniqueArray(fc.record({ id: fc.constantFrom('a', 'b', 'c', 'd', 'e', 'f', 'g'), score: fc.double({ min: -5, max: 5, noNaN: true }) }), {
    selector: (h) => h.id,
    maxLength: 7,
  })
  .map((l) => [...l].sort((x, y) => y.score - x.score));
const arbWeight = fc.double({ min: 0, max: 1, noNaN: true });

function naiveRrf(lists: [readonly ScoredId[], number][]): Map<string, number> {
  const out = new Map<string, number>();
  for (const [list, w] of lists) list.forEach((h, i) => out.set(h.id, (out.get(h.id) ?? 0) + w / (RRF_K + i + 1)));
  return out;
}

t.test('rrf: sum of weight / (60 + rank) over the lists a doc is in', async (t) => {
  const hits = fuse('rrf', {
    bm25: [{ id: 'a', score: 9 }, { id: 'b', score: 3 }],
    vector: [{ id: 'b', score: 0.9 }, { id: 'c', score: 0.5 }],
    bm25Weight: 0.5,
    vectorWeight: 0.5,
    k: 10,
  });
  t.same(hits.map((h) => h.id), ['b', 'a', 'c']);
  t.ok(Math.abs(hits[0]!.score - (0.5 / 62 + 0.5 / 61)) < 1e-15);
  t.same(hits[0], { id: 'b', score: hits[0]!.score, bm25_score: 3, vector_score: 0.9 });
  t.same(hits[2], { id: 'c', score: 0.5 / 62, bm25_score: null, vector_score: 0.5 });
});

t.test('linear: weighted sum of min-max normalised scores', async (t) => {
  const hits = fuse('linear', {
    bm25: [{ id: 'a', score: 10 }, { id: 'b', score: 6 }, { id: 'c', score: 2 }],
    vector: [{ id: 'c', score: 0.9 }, { id: 'a', score: 0.1 }],
    bm25Weight: 0.3,
    vectorWeight: 0.7,
    k: 10,
  });
  // a: 0.3 * 1 + 0.7 * 0 = 0.3; b: 0.3 * 0.5 = 0.15; c: 0.3 * 0 + 0.7 * 1 = 0.7
  t.same(hits.map((h) => [h.id, Number(h.score.toFixed(12))]), [['c', 0.7], ['a', 0.3], ['b', 0.15]]);
  const same = fuse('linear', { bm25: [{ id: 'x', score: 4 }], vector: [], bm25Weight: 0.5, vectorWeight: 0.5, k: 10 });
  t.same(same.map((h) => h.score), [0.5], 'a list of equal scores normalises to 1');
});

t.test('properties', async (t) => {
  fc.assert(
    fc.property(arbList, arbList, arbWeight, arbWeight, fc.integer({ min: 1, max: 10 }), (bm25, vector, wb, wv, k) => {
      const hits = fuse('rrf', { bm25, vector, bm25Weight: wb, vectorWeight: wv, k });
      const oracle = naiveRrf([[bm25, wb], [vector, wv]]);
      const union = new Set([...bm25, ...vector].map((h) => h.id));
      if (hits.length !== Math.min(k, union.size)) return false;
      for (let i = 0; i < hits.length; i++) {
        const h = hits[i]!;
        if (Math.abs(h.score - oracle.get(h.id)!) > 1e-12) return false;
        if (i > 0 && hits[i - 1]!.score < h.score) return false;
        if (h.bm25_score !== (bm25.find((x) => x.id === h.id)?.score ?? null)) return false;
        if (h.vector_score !== (vector.find((x) => x.id === h.id)?.score ?? null)) return false;
      }
      // nothing better was cut
      const cut = [...oracle.values()].sort((a, b) => b - a)[hits.length];
      return cut === undefined || hits.length === 0 || hits[hits.length - 1]!.score >= cut - 1e-15;
    }),
    fcParams(300),
  );
  fc.assert(
    fc.property(arbList, arbList, arbWeight, arbWeight, (bm25, vector, wb, wv) => {
      const hits = fuse('linear', { bm25, vector, bm25Weight: wb, vectorWeight: wv, k: 100 });
      // each fused score lies in [0, wb + wv]; a doc that tops both lists gets wb + wv
      if (!hits.every((h) => h.score >= -1e-12 && h.score <= wb + wv + 1e-12)) return false;
      const top = bm25[0]?.id;
      if (top !== undefined && top === vector[0]?.id && bm25.length > 1 && vector.length > 1) {
        const h = hits.find((x) => x.id === top)!;
        const bm25Distinct = bm25[0]!.score > bm25[bm25.length - 1]!.score;
        const vecDistinct = vector[0]!.score > vector[vector.length - 1]!.score;
        if (bm25Distinct && vecDistinct && Math.abs(h.score - (wb + wv)) > 1e-9) return false;
      }
      return true;
    }),
    fcParams(300),
  );
  fc.assert(
    fc.property(arbList, arbWeight, fc.constantFrom('rrf' as const, 'linear' as const), (list, w, fusion) => {
      // with the other list empty, fusion keeps the list's order
      const hits = fuse(fusion, { bm25: list, vector: [], bm25Weight: Math.max(w, 0.01), vectorWeight: 0.5, k: 100 });
      return hits.every((h, i) => i === 0 || hits[i - 1]!.score >= h.score) && hits.length === list.length;
    }),
    fcParams(200),
  );
});
