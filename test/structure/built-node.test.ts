// The node processes of a test run start from .test-build/ only while it holds every source.
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { BUILD_DIR, buildHolds, buildIsFresh, compiledMainArgs } from '../support/built-node.js';

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

// Benches measure the product as it ships, compiled: under tsx a node answered GETs 4-24 %
// slower in one A/B (docs/benchmarks.md, "Benches run the compiled node").
t.test('benches run the compiled node: compiledMainArgs, and no bench starts src/main.ts under tsx', async (t) => {
  const args = compiledMainArgs();
  t.same(args, [path.join(BUILD_DIR, 'src', 'main.js')], 'this checkout: its build');
  t.ok(existsSync(args[0]!), 'which exists');
  t.ok(buildIsFresh(), 'and holds the sources');
  const old = mkdtempSync(path.join(tmpdir(), 'firkin-old-checkout-'));
  t.teardown(() => rmSync(old, { recursive: true, force: true }));
  t.same(compiledMainArgs(old), ['--import', 'tsx', 'src/main.ts'], 'a checkout without the build script: tsx');
  const benchDir = fileURLToPath(new URL('../../bench/', import.meta.url));
  // support.ts is where spawnBenchNode calls spawnNode with the compiled entry.
  for (const file of readdirSync(benchDir).filter((f) => f.endsWith('.ts') && f !== 'support.ts')) {
    const text = readFileSync(path.join(benchDir, file), 'utf8');
    t.notMatch(text, /\bspawn(Test)?Node\(|'src\/main\.(ts|js)'|\.\.\/src\/main\.js/, `${file} starts the node through spawnBenchNode, compiledMainArgs or the cluster harness`);
  }
});
