// The node processes of a test run start from .test-build/ only while it holds every source.
import t from 'tap';
import { buildHolds } from '../support/built-node.js';

t.test('a build holds the sources older than its start, and as many as it compiled', async (t) => {
  t.equal(buildHolds('1000 3\n', [10, 500, 999]), true, 'every source older than the build');
  t.equal(buildHolds('1000 3\n', [10, 500, 1000]), false, 'a source written as the build started');
  t.equal(buildHolds('1000 3\n', [10, 500, 2000]), false, 'a source edited since');
  t.equal(buildHolds('1000 3\n', [10, 500]), false, 'a source deleted since (its compiled file remains)');
  t.equal(buildHolds('1000 3\n', [10, 500, 600, 700]), false, 'a source added since');
  t.equal(buildHolds(undefined, [10]), false, 'no build');
  t.equal(buildHolds('', [10]), false, 'an empty stamp');
  t.equal(buildHolds('x y', []), false, 'a damaged stamp');
});
