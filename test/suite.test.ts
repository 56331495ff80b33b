// The suite's own configuration. A test that starts a cluster of node processes (or a
// browser) must be listed in package.json's `tap.serial`: two of them at once on 2 cores turn
// elections and deadlines into flakes. `npm test` (scripts/test-suite.ts) runs those files one
// at a time in one lane and the rest one at a time in another, beside it; a plain `tap` runs
// two files at a time, the listed ones alone. The list names files, not directories; this test
// keeps it exact.
import { readFileSync, readdirSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import fc from 'fast-check';
import { commandCounts, fileCounts, LaneQueue, type Lanes, lastCounts, lineIndenter, splitLanes, summaryLine } from '../scripts/test-lanes.js';

const root = fileURLToPath(new URL('../', import.meta.url));
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { tap: { serial: string[]; plugin?: string[]; 'node-arg'?: string[] } };
const HARNESS = resolve(root, 'test/cluster/harness.ts');
const RUN_CHAOS = resolve(root, 'test/chaos/run-chaos.ts');

function testFiles(dir: string): string[] {
  return readdirSync(join(root, dir), { withFileTypes: true }).flatMap((e) => {
    const path = `${dir}/${e.name}`;
    if (e.isDirectory()) return testFiles(path);
    return e.name.endsWith('.test.ts') ? [path] : [];
  });
}

/** Why a test file needs to run alone, or undefined. */
function startsProcesses(file: string): string | undefined {
  if (file === 'test/suite.test.ts') return undefined; // names the probes' strings itself
  const source = readFileSync(join(root, file), 'utf8');
  for (const [, spec] of source.matchAll(/from '(\.[^']+)\.js'/g)) {
    const imported = resolve(root, dirname(file), `${spec}.ts`);
    if (imported === HARNESS) return 'starts a cluster (test/cluster/harness.ts)';
    if (imported === RUN_CHAOS) return 'runs the chaos runner (test/chaos/run-chaos.ts)';
  }
  if (source.includes("'chaos/run.ts'")) return 'runs the chaos runner';
  if (/URL\('[./]*scripts\/cluster\.sh'/.test(source)) return 'drives scripts/cluster.sh';
  if (source.includes("from 'playwright-core'")) return 'drives a browser';
  return undefined;
}

t.test('every test that starts a cluster, the chaos runner or a browser runs alone, and nothing else does', (t) => {
  const wanted = testFiles('test')
    .filter((f) => startsProcesses(f) !== undefined)
    .sort();
  t.ok(wanted.length >= 10, 'the cluster tests were found');
  t.same([...pkg.tap.serial].sort(), wanted, 'package.json tap.serial lists exactly these files');
  t.end();
});

t.test('test files are loaded by tsx, as the nodes the tests start are', (t) => {
  t.ok(pkg.tap.plugin?.includes('!@tapjs/typescript'), 'ts-node (tap\'s default) is off: it transpiled every module again in every test process');
  // Its loader hook sat in front of every import of every test process, and no test mocks a module.
  t.ok(pkg.tap.plugin?.includes('!@tapjs/mock'), '@tapjs/mock is off');
  t.same(pkg.tap['node-arg'], ['--import=tsx']);
  t.end();
});

t.test('the probe itself: a harness import from another directory is seen', (t) => {
  t.equal(relative(root, HARNESS), 'test/cluster/harness.ts');
  t.match(startsProcesses('test/cli/cluster-cli.test.ts') ?? '', /cluster/);
  t.equal(startsProcesses('test/cluster/placement.test.ts'), undefined);
  t.match(startsProcesses('test/chaos/short-data.test.ts') ?? '', /chaos runner/);
  t.end();
});

t.test('npm test runs two lanes at once: the serial files one at a time, the rest one at a time beside them', (t) => {
  const scripts = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts;
  t.equal(scripts.test, 'tap build && node --import tsx scripts/test-suite.ts', 'the type check runs inside the unit lane, not before both');
  const files = ['test/a.test.ts', 'test/cluster/b.test.ts', 'test/c.test.ts', 'test/cluster/d.test.ts'];
  t.same(splitLanes(files, ['test/cluster/d.test.ts', 'test/cluster/b.test.ts', 'test/gone.test.ts']), {
    cluster: ['test/cluster/b.test.ts', 'test/cluster/d.test.ts'],
    unit: ['test/a.test.ts', 'test/c.test.ts'],
  }, 'in tap\'s order; a listed file that is not there is no test');
  t.end();
});

t.test('the lanes share one queue: each file runs once, serial files only in the cluster lane, and the lanes end together', (t) => {
  const queue = new LaneQueue({ cluster: ['c1', 'c2'], unit: ['u1', 'u2', 'u3', 'u4'] });
  t.equal(queue.next('unit'), 'u1');
  t.equal(queue.next('cluster'), 'c1', 'its own files first, in order');
  t.equal(queue.next('cluster'), 'c2');
  t.equal(queue.next('cluster'), 'u4', 'then unit files, from the back');
  t.equal(queue.next('unit'), 'u2');
  t.equal(queue.next('cluster'), 'u3');
  t.equal(queue.next('unit'), undefined, 'nothing is run twice');
  t.equal(queue.next('cluster'), undefined);
  t.equal(new LaneQueue({ cluster: ['c1'], unit: [] }).next('unit'), undefined, 'the unit lane never takes a serial file');
  // Any interleaving of the two lanes' asks: every file handed out exactly once, and a serial file
  // only to the cluster lane (so no two of them ever run at once: that lane runs one at a time).
  fc.assert(
    fc.property(fc.nat(6), fc.nat(12), fc.array(fc.constantFrom<keyof Lanes>('unit', 'cluster'), { maxLength: 40 }), (nc, nu, asks) => {
      const lanes: Lanes = { cluster: Array.from({ length: nc }, (_, i) => `c${i}`), unit: Array.from({ length: nu }, (_, i) => `u${i}`) };
      const q = new LaneQueue(lanes);
      const seen: string[] = [];
      const order = [...asks, ...Array<keyof Lanes>(nc + nu + 1).fill('unit'), ...Array<keyof Lanes>(nc + 1).fill('cluster')];
      for (const lane of order) {
        const file = q.next(lane);
        if (file === undefined) continue;
        if (lane === 'unit' && file.startsWith('c')) return false;
        seen.push(file);
      }
      return seen.length === nc + nu && new Set(seen).size === seen.length;
    }),
  );
  t.end();
});

t.test('the type check is one test of the unit lane: passed when it exits 0', (t) => {
  t.same(commandCounts('src/a.ts(1,1): error TS2322\n', 2), { counts: { total: 1, pass: 0, fail: 1 }, ok: false });
  t.same(commandCounts('', 0), { counts: { total: 1, pass: 1 }, ok: true });
  t.same(commandCounts('', null), { counts: { total: 1, pass: 0, fail: 1 }, ok: false }, 'killed');
  t.end();
});

t.test('the suite\'s closing line is the sum of the lanes\' closing lines', (t) => {
  const unit = 'ok 1 - x\n    # { total: 3, pass: 3 }\n# { total: 10, pass: 9, fail: 1 }\n# time=5ms\n';
  const cluster = '# { total: 4, pass: 3, skip: 1 }\n';
  t.same(lastCounts(unit), { total: 10, pass: 9, fail: 1 }, 'the last top-level summary, not a subtest\'s');
  t.equal(lastCounts('crashed before its summary\n'), undefined);
  const line = summaryLine([lastCounts(unit)!, lastCounts(cluster)!]);
  t.equal(line, '# { total: 14, pass: 12, fail: 1, skip: 1 }');
  t.same(lastCounts(line), { total: 14, pass: 12, fail: 1, skip: 1 }, 'it reads back as tap\'s own');
  t.end();
});

t.test('a lane counts each file from its own closing line and exit, and a file without one as a failure', (t) => {
  const passed = 'TAP version 14\nok 1 - x\n1..1\n# { total: 3, pass: 2, skip: 1 }\n# time=4ms\n';
  t.same(fileCounts(passed, 0), { counts: { total: 3, pass: 2, skip: 1 }, ok: true });
  const failed = 'not ok 1 - x\n# { total: 2, pass: 1, fail: 1 }\n';
  t.same(fileCounts(failed, 1), { counts: { total: 2, pass: 1, fail: 1 }, ok: false }, 'its own failures, not one more');
  t.same(fileCounts('TAP version 14\nok 1 - x\n', null), { counts: { total: 1, pass: 0, fail: 1 }, ok: false }, 'killed before its closing line');
  t.same(fileCounts(passed, 1), { counts: { total: 4, pass: 2, skip: 1, fail: 1 }, ok: false }, 'every assertion passed but it exited non-zero (a crash after its summary)');
  t.same(fileCounts('    # { total: 5, pass: 5 }\n', 0).ok, false, 'a nested summary is a subtest\'s, not the file\'s');
  t.end();
});

t.test('a file\'s output is nested as tap nests a subtest, whole lines only, however it arrives', (t) => {
  let out = '';
  const indented = lineIndenter((text) => (out += text));
  indented.push('TAP vers');
  t.equal(out, '', 'half a line waits');
  indented.push('ion 14\nok 1 - a\n\n# { total: 1');
  t.equal(out, '    TAP version 14\n    ok 1 - a\n\n');
  indented.push(', pass: 1 }');
  indented.flush();
  t.equal(out, '    TAP version 14\n    ok 1 - a\n\n    # { total: 1, pass: 1 }\n', 'the last line without its newline comes out at the end');
  t.same(lastCounts(out), undefined, 'so a lane\'s own closing line is the only top-level one');
  t.end();
});
