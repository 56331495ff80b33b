// The listing checker: cases by hand, then random sets listed correctly (no anomaly) and
// listed with one fault of each kind (that kind found).
import t from 'tap';
import fc from 'fast-check';
import { checkListings } from '../../../chaos/checker/listing.js';
import { fcParams } from '../../support/fc.js';

const types = (present: string[] | undefined, listed: string[] | undefined) => checkListings([{ node: 'n1', present, listed }]).anomalies.map((a) => a.type);

t.test('cases', (t) => {
  t.same(types(['e2', 'e1', 'e10'], ['e1', 'e10', 'e2']), [], 'id order is code-point order: e10 before e2');
  t.same(types(['e1', 'e2'], ['e1']), ['missing']);
  t.same(types(['e1'], ['e1', 'e2']), ['extra']);
  t.same(types(['e1', 'e2'], ['e1', 'e2', 'e2']), ['repeated']);
  t.same(types(['e1', 'e2'], ['e2', 'e1']), ['unordered']);
  t.same(types(['e1'], undefined), ['no-listing']);
  t.same(types(undefined, ['e1']), [], 'no final read: nothing to hold the listing to');
  t.same(types(['\u{1F600}', '\uFFFF'], ['\uFFFF', '\u{1F600}']), [], 'an astral character after U+FFFF, as UTF-8 orders them');
  const r = checkListings([{ node: 'n2', present: ['e1', 'e2', 'e3'], listed: [] }]);
  t.match(r.anomalies, [{ type: 'missing', node: 'n2', count: 3, ids: ['e1', 'e2', 'e3'] }]);
  t.end();
});

const sorted = (ids: Iterable<string>) => [...ids].sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
const arbSet = fc.uniqueArray(fc.string({ minLength: 1, maxLength: 6, unit: 'grapheme' }), { minLength: 2, maxLength: 40 });

t.test('a correct listing: no anomaly; each broken one: its kind', (t) => {
  fc.assert(
    fc.property(arbSet, fc.nat(), (ids, pick) => {
      const listed = sorted(ids);
      if (types(ids, listed).length !== 0) return false;
      const i = pick % listed.length;
      const without = listed.filter((_, j) => j !== i);
      const swapped = [...listed];
      [swapped[0], swapped[1]] = [swapped[1]!, swapped[0]!];
      return (
        types(ids, without).join() === 'missing' &&
        types(ids.filter((_, j) => j !== ids.indexOf(listed[i]!)), listed).join() === 'extra' &&
        types(ids, sorted([...listed, listed[i]!])).join() === 'repeated' &&
        types(ids, swapped).join() === 'unordered'
      );
    }),
    fcParams(),
  );
  t.end();
});
