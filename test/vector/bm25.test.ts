// BM25 scoring against hand-computed values, and properties of the ranking.
import fc from 'fast-check';
import t from 'tap';
import { type Posting, byScoreThenId, idf, rankBm25, termFrequencies, termScore, topK } from '../../src/vector/bm25.js';
import { ENGLISH_STOPWORDS, tokenize } from '../../src/vector/tokenize.js';
import { fcParams } from '../support/fc.js';

const params = { k1: 1.2, b: 0.75 };

/** Builds postings for a query over a small corpus (the same way both backends do). */
function postingsFor(corpus: Record<string, string>, query: string): { byTerm: Map<string, Posting[]>; docCount: number; totalLength: number } {
  const byTerm = new Map<string, Posting[]>();
  let totalLength = 0;
  const docs = Object.entries(corpus).map(([id, text]) => {
    const tokens = tokenize(text);
    totalLength += tokens.length;
    return { id, tokens, tf: termFrequencies(tokens) };
  });
  for (const term of new Set(tokenize(query))) {
    const list = docs.filter((d) => d.tf.has(term)).map((d) => ({ docId: d.id, tf: d.tf.get(term)!, docLength: d.tokens.length }));
    if (list.length > 0) byTerm.set(term, list);
  }
  return { byTerm, docCount: docs.length, totalLength };
}

t.test('tokenizer: Unicode-aware, lowercase, split on non letters/digits', async (t) => {
  t.same(tokenize('Hello, World! 42x'), ['hello', 'world', '42x']);
  t.same(tokenize('Café-au-lait ÉCOLE'), ['café', 'au', 'lait', 'école']);
  t.same(tokenize('Москва и мир'), ['москва', 'и', 'мир']);
  t.same(tokenize('東京 タワー'), ['東京', 'タワー']);
  t.same(tokenize('  ...  '), []);
  t.same(tokenize('The cat is on the mat', ENGLISH_STOPWORDS), ['cat', 'mat']);
});

t.test('idf and term score match hand-computed values', async (t) => {
  // N = 3, df = 1: ln(1 + 2.5 / 1.5) = ln(2.6667) = 0.980829
  t.ok(Math.abs(idf(3, 1) - 0.9808292530117262) < 1e-12);
  // N = 3, df = 3: ln(1 + 0.5 / 3.5) = ln(1.142857) = 0.133531
  t.ok(Math.abs(idf(3, 3) - 0.1335313926245226) < 1e-12);
  // tf 2, |d| 4, avgdl 3: 0.980829 * 2 * 2.2 / (2 + 1.2 * (0.25 + 0.75 * 4/3)) = 4.315649 / 3.5 = 1.2330425
  t.ok(Math.abs(termScore(idf(3, 1), 2, 4, 3, params) - 1.2330425) < 1e-6);
});

t.test('a small corpus ranks as computed by hand', async (t) => {
  const corpus = {
    d1: 'the quick brown fox', //       4 tokens
    d2: 'the lazy dog', //               3 tokens
    d3: 'the quick dog quick', //        4 tokens... "quick" twice
  };
  // N = 3, total = 11, avgdl = 11/3 = 3.6667
  // query "quick dog":
  //   quick: df 2 -> idf = ln(1 + 1.5/2.5) = ln(1.6) = 0.4700036
  //   dog:   df 2 -> idf = 0.4700036
  //   d1: quick tf1 |d|4: 0.4700036 * 2.2 / (1 + 1.2 * (0.25 + 0.75 * 4/3.6667)) = 1.0340079 / 2.2818182 = 0.4531508
  //   d2: dog tf1 |d|3:   1.0340079 / (1 + 1.2 * (0.25 + 0.75 * 3/3.6667)) = 1.0340079 / 2.0363636 = 0.5077718
  //   d3: quick tf2 |d|4: 0.4700036 * 2 * 2.2 / (2 + 1.2818182) = 2.0680158 / 3.2818182 = 0.6301434
  //       dog   tf1 |d|4: 0.4531508                          -> 1.0832943
  const { byTerm, docCount, totalLength } = postingsFor(corpus, 'quick dog');
  const ranked = rankBm25(byTerm, { docCount, totalLength }, params, 10);
  t.same(ranked.map((r) => r.id), ['d3', 'd2', 'd1']);
  const expected: Record<string, number> = { d3: 1.0832943, d2: 0.5077718, d1: 0.4531508 };
  for (const r of ranked) t.ok(Math.abs(r.score - expected[r.id]!) < 1e-6, `${r.id}: ${r.score} ~ ${expected[r.id]}`);
  t.same(rankBm25(byTerm, { docCount, totalLength }, params, 1).map((r) => r.id), ['d3'], 'top k');
  t.same(rankBm25(new Map(), { docCount, totalLength }, params, 10), [], 'no matching term');
});

t.test('properties: scores positive, sorted, only docs with a query term, more tf never hurts', async (t) => {
  const arbCorpus = fc.dictionary(
    fc.string({ minLength: 1, maxLength: 4, unit: fc.constantFrom('a', 'b', 'c', 'd') }).map((s) => `d${s}`),
    fc.array(fc.constantFrom('red', 'green', 'blue', 'cyan', 'gray'), { minLength: 0, maxLength: 12 }).map((w) => w.join(' ')),
    { minKeys: 1, maxKeys: 12 },
  );
  const arbQuery = fc.array(fc.constantFrom('red', 'green', 'blue', 'pink'), { minLength: 1, maxLength: 3 }).map((w) => w.join(' '));
  fc.assert(
    fc.property(arbCorpus, arbQuery, (corpus, query) => {
      const { byTerm, docCount, totalLength } = postingsFor(corpus, query);
      const ranked = rankBm25(byTerm, { docCount, totalLength }, params, 100);
      const qterms = new Set(tokenize(query));
      for (let i = 0; i < ranked.length; i++) {
        if (!(ranked[i]!.score > 0)) return false;
        if (i > 0 && ranked[i - 1]!.score < ranked[i]!.score) return false;
        if (!tokenize(corpus[ranked[i]!.id]!).some((w) => qterms.has(w))) return false;
      }
      const withTerm = Object.values(corpus).filter((text) => tokenize(text).some((w) => qterms.has(w))).length;
      return ranked.length === withTerm;
    }),
    fcParams(200),
  );
  fc.assert(
    fc.property(fc.integer({ min: 1, max: 50 }), fc.integer({ min: 1, max: 100 }), fc.integer({ min: 1, max: 100 }), fc.integer({ min: 1, max: 50 }), (tf, dl, avgdl, df) => {
      const w = idf(100, df);
      return termScore(w, tf + 1, dl, avgdl, params) >= termScore(w, tf, dl, avgdl, params) - 1e-12 && w >= 0;
    }),
    fcParams(200),
  );
});

t.test('topK equals sorting everything and cutting (oracle)', async (t) => {
  const arbItems = fc.array(fc.record({ id: fc.string({ maxLength: 3 }), score: fc.integer({ min: 0, max: 20 }).map((n) => n / 4) }), { maxLength: 60 });
  fc.assert(
    fc.property(arbItems, fc.integer({ min: 1, max: 20 }), (items, k) => {
      const expected = [...items].sort(byScoreThenId).slice(0, k);
      const got = topK(items, k);
      return got.length === expected.length && got.every((x, i) => x.score === expected[i]!.score && x.id === expected[i]!.id);
    }),
    fcParams(300),
  );
});
