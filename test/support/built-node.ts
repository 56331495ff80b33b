// Node processes that tests, the chaos runner and cluster.sh start run compiled JavaScript
// when a build of the current sources exists, else src/main.ts under tsx. tsx costs a process
// ~0.6 s of CPU at start (its loader thread), paid by every node a suite starts and restarts
// (a few hundred); tap builds once before any test file (test/support/build-node.ts, tap's
// `before`), in about a second with esbuild. A source edited after the build makes the build
// stale: the tsx path is taken again, so a test never runs code older than its sources.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../../', import.meta.url));

/** Where the build lives: beside package.json's directory tree (its `type: module` and proto/ apply). */
export const BUILD_DIR = path.join(root, '.test-build');
/** The `firkin` CLI's entry in the build (bin/firkin.js's body, importing the build's CLI). */
export const BUILD_CLI = path.join(BUILD_DIR, 'firkin.js');
/** Written last by a build: the time (ms) the build started reading the sources. */
export const BUILD_STAMP = path.join(BUILD_DIR, 'built-from');

/** Every .ts file under a directory. */
export function tsFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? tsFiles(path.join(dir, e.name)) : e.name.endsWith('.ts') ? [path.join(dir, e.name)] : []));
}

/**
 * Whether a build whose stamp reads `stamp` (`<started ms> <source count>`, or undefined when
 * there is none) holds the sources whose modification times are `sourceMtimesMs`.
 */
export function buildHolds(stamp: string | undefined, sourceMtimesMs: readonly number[]): boolean {
  const [startedAt, count] = (stamp ?? '').trim().split(' ').map(Number);
  if (!Number.isFinite(startedAt) || !Number.isInteger(count)) return false;
  // A deleted source leaves its compiled file behind: a different count is a stale build.
  return sourceMtimesMs.length === count && sourceMtimesMs.every((m) => m < startedAt!);
}

/** Whether `checkout`'s build (default: this one's) holds its sources. */
export function buildIsFresh(checkout: string = root): boolean {
  let stamp: string | undefined;
  try {
    stamp = readFileSync(path.join(checkout, path.basename(BUILD_DIR), path.basename(BUILD_STAMP)), 'utf8');
  } catch {
    stamp = undefined;
  }
  return buildHolds(stamp, tsFiles(path.join(checkout, 'src')).map((f) => statSync(f).mtimeMs));
}

let fresh: boolean | undefined;

/** Arguments after node's flags that run the node: the build's main.js, or src/main.ts under tsx. */
export function nodeMainArgs(): string[] {
  fresh ??= process.env.FIRKIN_TEST_TSX !== '1' && buildIsFresh();
  return fresh ? [path.join(BUILD_DIR, 'src', 'main.js')] : ['--import', 'tsx', 'src/main.ts'];
}

/** Arguments after node's flags that run the `firkin` CLI: the build's, or bin/firkin.js (its sources under tsx). */
export function firkinCliArgs(): string[] {
  fresh ??= process.env.FIRKIN_TEST_TSX !== '1' && buildIsFresh();
  return fresh ? [BUILD_CLI] : ['bin/firkin.js'];
}

/**
 * Arguments after node's flags that run `checkout`'s node (default: this one's) as compiled
 * JavaScript, building it first when its build is stale. Benches measure the product as
 * `npm start` runs it, compiled: under tsx a node answered GETs ~15-25 % slower (tsx's transform
 * keeps function names, a `__name` call each time a closure is made; docs/benchmarks.md,
 * "Benches run the compiled node"). The build is esbuild's, file by file as tsc's: the two
 * answered alike. A checkout from before the test build (no build script) runs under tsx.
 */
export function compiledMainArgs(at: string = root): string[] {
  const checkout = path.resolve(at);
  if (!existsSync(path.join(checkout, 'test', 'support', 'build-node.ts'))) return ['--import', 'tsx', 'src/main.ts'];
  if (!buildIsFresh(checkout)) {
    const built = spawnSync(process.execPath, ['--import', 'tsx', 'test/support/build-node.ts'], { cwd: checkout, stdio: 'inherit' });
    if (built.status !== 0) throw new Error(`building ${checkout} failed (exit ${built.status})`);
  }
  if (checkout === path.resolve(root)) fresh = true;
  return [path.join(checkout, path.basename(BUILD_DIR), 'src', 'main.js')];
}
