import fc from 'fast-check';
import t from 'tap';
import { DESCRIPTORS_RESERVED, descriptorsProblem, openFilesSoftLimit } from '../../src/storage/descriptors.js';
import { fcParams } from '../support/fc.js';

const limits = (soft: string, hard: string) =>
  [
    'Limit                     Soft Limit           Hard Limit           Units     ',
    'Max processes             96362                96362                processes ',
    `Max open files            ${soft.padEnd(21)}${hard.padEnd(21)}files     `,
    'Max locked memory         8388608              8388608              bytes     ',
  ].join('\n');

t.test("the soft limit on open files, from /proc's limits", (t) => {
  t.equal(openFilesSoftLimit(limits('1024', '524288')), 1024, 'the soft one, not the hard one');
  t.equal(openFilesSoftLimit(limits('unlimited', 'unlimited')), undefined, 'unlimited: nothing to watch');
  t.equal(openFilesSoftLimit(''), undefined, 'not Linux: unknown');
  t.equal(openFilesSoftLimit('Max processes 10 10 processes'), undefined, 'no such line');
  t.end();
});

t.test('a problem exactly when the table files leave less than the headroom: a quarter of the limit, at least the reserve', (t) => {
  fc.assert(
    fc.property(fc.integer({ min: 0, max: 2_000_000 }), fc.integer({ min: 1, max: 2_000_000 }), (files, limit) => {
      const problem = descriptorsProblem(files, limit);
      const headroom = Math.max(DESCRIPTORS_RESERVED, Math.floor(limit / 4));
      if (files + headroom <= limit) return problem === undefined;
      return problem !== undefined && problem.includes(`${files} table files`) && problem.includes(`open ${limit} files`);
    }),
    fcParams(),
  );
  t.equal(descriptorsProblem(1_000_000, undefined), undefined, 'an unknown limit says nothing');
  t.equal(descriptorsProblem(0, 1024), undefined, 'a fresh node under the common 1,024');
  t.equal(descriptorsProblem(512, 1024), undefined, 'half of it in tables: still the reserve left');
  t.match(descriptorsProblem(513, 1024), /513 table files .* 1024 files \(ulimit -n\)/, 'past it: said, with what to do');
  t.equal(descriptorsProblem(15_000, 20_000), undefined, "this machine's 20,000: a quarter kept free");
  t.ok(descriptorsProblem(15_001, 20_000));
  t.end();
});
