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
import { lastCounts, splitLanes, summaryLine } from '../scripts/test-lanes.js';

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
  t.match(scripts.test!, /tap build && node --import tsx scripts\/test-suite\.ts$/);
  const files = ['test/a.test.ts', 'test/cluster/b.test.ts', 'test/c.test.ts', 'test/cluster/d.test.ts'];
  t.same(splitLanes(files, ['test/cluster/d.test.ts', 'test/cluster/b.test.ts', 'test/gone.test.ts']), {
    cluster: ['test/cluster/b.test.ts', 'test/cluster/d.test.ts'],
    unit: ['test/a.test.ts', 'test/c.test.ts'],
  }, 'in tap\'s order; a listed file that is not there is no test');
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
