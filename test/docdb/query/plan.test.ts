import fc from 'fast-check';
import t from 'tap';
import { matches } from '../../../src/docdb/query/match.js';
import { type Scan, anchoredLiteral, choosePlan, conjuncts, keyPrefix, scansFor, wholeInKey } from '../../../src/docdb/query/plan.js';
import { decodeKey } from '../../../src/core/keys.js';
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
