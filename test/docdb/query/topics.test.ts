import fc from 'fast-check';
import t from 'tap';
import { changeMatchesPatterns, parsePattern, patternMatchesTopic, topicsOf } from '../../../src/docdb/query/topics.js';
import { fcParams } from '../../support/fc.js';

t.test('topics of a document', (t) => {
  const topics = topicsOf({ type: 'user', tags: ['red', 'blue'], age: 3, ok: true, none: null, p: { city: 'Oslo' }, _rev: 'x' })
    .map((x) => x.join('/'))
    .sort();
  t.same(topics, ['age/3', 'none/null', 'ok/true', 'p/city/Oslo', 'tags/0/red', 'tags/1/blue', 'type/user']);
  t.end();
});

t.test('pattern semantics', (t) => {
  const doc = { type: 'user', profile: { city: 'Oslo' }, tags: ['red'] };
  const yes = ['type/user', 'type', 'type/#', 'type/+', '+/user', '#', 'profile/city/Oslo', 'profile/+/Oslo', 'tags/0/red', 'tags/+/red', 'profile/#'];
  const no = ['type/admin', 'type/user/x', '+/admin', 'profile/city/Paris', 'tags/1/red', 'nope', 'nope/#'];
  for (const p of yes) t.ok(changeMatchesPatterns([parsePattern(p)], 'id', doc), p);
  for (const p of no) t.notOk(changeMatchesPatterns([parsePattern(p)], 'id', doc), p);
  t.ok(changeMatchesPatterns([parsePattern('users/+/profile')], 'users/ada/profile', undefined), 'a deletion matches by id');
  t.end();
});

t.test('invalid patterns', (t) => {
  for (const p of ['', 'a/#/b', 'a#', 'a/b+', '#/a']) t.throws(() => parsePattern(p), { code: 'bad_request' }, p);
  t.end();
});

t.test('a pattern built from a topic (with any level widened to +) matches it; # matches every prefix', (t) => {
  fc.assert(
    fc.property(fc.array(fc.stringMatching(/^[a-z0-9]{1,4}$/), { minLength: 1, maxLength: 6 }), fc.array(fc.boolean(), { maxLength: 6 }), fc.nat(), (topic, plus, cut) => {
      const pattern = topic.map((level, i) => (plus[i] ? '+' : level));
      const k = cut % (topic.length + 1);
      return patternMatchesTopic(pattern, topic) && patternMatchesTopic([...topic.slice(0, k), '#'], topic) && !patternMatchesTopic([...topic, 'extra'], topic);
    }),
    fcParams(300),
  );
  t.end();
});
