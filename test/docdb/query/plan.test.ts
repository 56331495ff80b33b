import fc from 'fast-check';
import t from 'tap';
import type { Condition } from '../../../src/docdb/query/ast.js';
import { matches } from '../../../src/docdb/query/match.js';
import { type Scan, anchoredLiteral, candidateTest, choosePlan, conjuncts, keyPrefix, scansFor, wholeInKey } from '../../../src/docdb/query/plan.js';
import { decodeKey, extendKey, prefixRange } from '../../../src/core/keys.js';
import { POSTINGS_PER_DOC_MAX, postingKey, postingKeysOf, postingsDiff, postingsOf } from '../../../src/docdb/query/postings.js';
import { fcParams } from '../../support/fc.js';
import { arbCondition, arbDoc } from '../../support/query-arbitraries.js';

function inRanges(key: Buffer, ranges: readonly { gte: Buffer; lt: Buffer }[]): boolean {
  return ranges.some((r) => Buffer.compare(key, r.gte) >= 0 && Buffer.compare(key, r.lt) < 0);
}

/** What the executor does with a scan's key filter (a whole value failing it drops the key). */
function keptByFilter(key: Buffer, scan: Scan): boolean {
  if (scan.keyFilter === undefined) return true;
  const [value] = decodeKey(key.subarray(scan.keyFilter.valueOffset)) as [string];
  return !wholeInKey(value) || scan.keyFilter.keep(value);
}

t.test('every scan returns a superset of the matches; an exact scan returns exactly the matches', (t) => {
  fc.assert(
    fc.property(arbDoc, arbCondition, (doc, cond) => {
      const keys = postingsOf(doc).map((p) => postingKey('db', p, 'id1'));
      for (const c of conjuncts(cond)) {
        const truth = matches(doc, c);
        for (const scan of scansFor('db', c)) {
          const candidate = keys.some((k) => inRanges(k, scan.ranges) && keptByFilter(k, scan));
          if (truth && !candidate) return false;
          if (scan.exact && candidate !== truth) return false;
        }
      }
      return true;
    }),
    fcParams(2000),
  );
  t.end();
});

t.test('scans never cross databases', (t) => {
  fc.assert(
    fc.property(arbDoc, arbCondition, (doc, cond) => {
      const keys = postingsOf(doc).map((p) => postingKey('db2', p, 'id'));
      return scansFor('db', cond).every((s) => !keys.some((k) => inRanges(k, s.ranges)));
    }),
    fcParams(300),
  );
  t.end();
});

t.test('postingsDiff turns the old posting set into the new one', (t) => {
  fc.assert(
    fc.property(fc.option(arbDoc, { nil: undefined }), fc.option(arbDoc, { nil: undefined }), (before, after) => {
      const set = (d: typeof before) => new Set((d === undefined ? [] : postingsOf(d)).map((p) => postingKey('db', p, 'x').toString('hex')));
      const state = set(before);
      const { del, put } = postingsDiff('db', 'x', before, after);
      for (const k of del) if (!state.delete(k.toString('hex'))) return false;
      for (const k of put) {
        if (state.has(k.toString('hex'))) return false;
        state.add(k.toString('hex'));
      }
      const want = set(after);
      return state.size === want.size && [...want].every((k) => state.has(k));
    }),
    fcParams(500),
  );
  t.end();
});

t.test('the plan picks the smallest estimate; nothing indexable means a full scan', (t) => {
  const cond = { kind: 'and' as const, all: [{ kind: 'exists' as const, path: ['a'] }, { kind: 'eq' as const, path: ['b'], value: 1 }] };
  const scans = scansFor('db', cond);
  t.equal(scans.length, 2);
  const plan = choosePlan(scans, [100, 3]);
  t.equal(plan.kind, 'index');
  t.equal(plan.kind === 'index' && plan.scan.describe, 'b = 1');
  t.same(choosePlan(scansFor('db', { kind: 'not', condition: cond }), []), { kind: 'full_scan', reason: 'no indexable condition' });
  t.end();
});

t.test('postingKeysOf builds the same keys as postingKey over postingsOf, once each', (t) => {
  fc.assert(
    fc.property(arbDoc, fc.string({ maxLength: 6 }), fc.string({ minLength: 1, maxLength: 6 }), (doc, db, id) => {
      const want = new Set(postingsOf(doc).map((p) => postingKey(db, p, id).toString('hex')));
      const got = postingKeysOf(db, id, doc).map((k) => k.toString('hex'));
      return got.length === want.size && got.every((k) => want.has(k));
    }),
    fcParams(1000),
  );
  // Past the cap both index the same first leaves.
  const wide = { many: Array.from({ length: POSTINGS_PER_DOC_MAX + 50 }, (_, i) => i), after: 'x' };
  const want = new Set(postingsOf(wide).map((p) => postingKey('db', p, 'id').toString('hex')));
  const got = postingKeysOf('db', 'id', wide).map((k) => k.toString('hex'));
  t.equal(got.length, want.size);
  t.ok(got.every((k) => want.has(k)));
  t.end();
});

t.test('anchoredLiteral: every match starts with it', (t) => {
  const token = fc.constantFrom('a', 'b', '.', '\\.', '\\d', '*', '+', '?', '{2}', '|', '(a)', '[ab]', '😀', '$');
  fc.assert(
    fc.property(fc.boolean(), fc.array(token, { maxLength: 6 }), fc.string({ unit: fc.constantFrom('a', 'b', '.', '1', '😀'), maxLength: 8 }), (anchored, tokens, input) => {
      const source = (anchored ? '^' : '') + tokens.join('');
      let re: RegExp;
      try {
        re = new RegExp(source, 'u');
      } catch {
        return true; // not a pattern the parser would accept
      }
      return !re.test(input) || input.startsWith(anchoredLiteral(source));
    }),
    fcParams(3000),
  );
  t.equal(anchoredLiteral('^name12'), 'name12');
  t.equal(anchoredLiteral('^ab*'), 'a');
  t.equal(anchoredLiteral('^a\\.b\\d'), 'a.b');
  t.equal(anchoredLiteral('^a|b'), '');
  t.equal(anchoredLiteral('name'), '');
  t.end();
});

t.test('keyPrefix: at most 198 code units, never half a surrogate pair', (t) => {
  t.same(keyPrefix('abc'), { prefix: 'abc', whole: true });
  t.same(keyPrefix('x'.repeat(198)), { prefix: 'x'.repeat(198), whole: true });
  t.same(keyPrefix('x'.repeat(199)), { prefix: 'x'.repeat(198), whole: false });
  t.same(keyPrefix('x'.repeat(197) + '😀'), { prefix: 'x'.repeat(197), whole: false });
  t.end();
});

t.test("one value's postings hold a document's key at the value's prefix and its id: looking that key up tests the condition", (t) => {
  fc.assert(
    fc.property(arbDoc, arbCondition, fc.string({ unit: 'binary', maxLength: 6 }), fc.nat(), (doc, cond, id, pick) => {
      const keys = new Set(postingKeysOf('db', id, doc).map((k) => k.toString('latin1')));
      // Random conditions seldom match: add an equality and an \`in\` on a value the document holds.
      const held = Object.entries(doc).filter(([, v]) => v === null || typeof v !== 'object' || (Array.isArray(v) ? v.length === 0 : Object.keys(v).length === 0));
      const [path, value] = held.length === 0 ? ['a', 1] : held[pick % held.length]!;
      const conditions: Condition[] = [...conjuncts(cond), { kind: 'eq', path: [path], value }, { kind: 'in', path: [path], values: ['zz', value] }];
      for (const c of conditions) {
        for (const scan of scansFor('db', c)) {
          if (scan.idOffsets === undefined) continue;
          if (scan.ranges.some((r, i) => r.gte.length !== scan.idOffsets![i])) return false;
          const posted = scan.ranges.some((r) => keys.has(extendKey(r.gte, [id]).toString('latin1')));
          // Every match is posted there (the lookup never drops one); an exact scan posts nothing else.
          if (matches(doc, c) && !posted) return false;
          if (scan.exact && posted !== matches(doc, c)) return false;
        }
      }
      return true;
    }),
    fcParams(1000),
  );
  t.end();
});

t.test('candidateTest: a read costs no more than the lookups or the bodies, and is chosen only for a scan that fits it', (t) => {
  const one = (values: number): Scan => {
    const ranges = Array.from({ length: values }, (_, i) => prefixRange(['db', 'f', 3, i]));
    return { ranges, exact: true, describe: 'f', idOffsets: ranges.map((r) => r.gte.length) };
  };
  const range: Scan = { ranges: [prefixRange(['db', 'f', 3])], exact: true, describe: 'f > 0' };
  fc.assert(
    fc.property(fc.oneof(fc.integer({ min: 1, max: 12 }).map(one), fc.constant(range)), fc.nat({ max: 100_000 }), fc.integer({ min: 1, max: 10_000 }), fc.integer({ min: 1, max: 10_000 }), (scan, estimate, fewer, more) => {
      const [small, large] = fewer <= more ? [fewer, more] : [more, fewer];
      const test = candidateTest(scan, estimate, small);
      if (test.lookup !== (scan.idOffsets !== undefined && scan.ranges.length <= 8)) return false;
      if (test.readMax !== undefined && estimate > test.readMax) return false;
      // Reading keys (1 a string key, 3.5 a decoded one) costs at most looking each up (4 a key) or the bodies (20 each).
      const perKey = scan.idOffsets !== undefined ? 1 : 3.5;
      if (test.readMax !== undefined && test.readMax * perKey > Math.min(test.lookup ? small * scan.ranges.length * 4 : Infinity, small * 20)) return false;
      // More candidates never make reading the scan less worth it.
      const bigger = candidateTest(scan, estimate, large);
      return test.readMax === undefined || (bigger.readMax !== undefined && bigger.readMax >= test.readMax);
    }),
    fcParams(1000),
  );
  t.end();
});
