// Node processes that tests, the chaos runner and cluster.sh start run compiled JavaScript
// when a build of the current sources exists, else src/main.ts under tsx. tsx costs a process
// ~0.6 s of CPU at start (its loader thread), paid by every node a suite starts and restarts
// (a few hundred); tap builds once before any test file (test/support/build-node.ts, tap's
// `before`), in about a second with esbuild. A source edited after the build makes the build
// stale: the tsx path is taken again, so a test never runs code older than its sources.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../../', import.meta.url));

/** Where the build lives: beside package.json's directory tree (its `type: module` and proto/ apply). */
export const BUILD_DIR = path.join(root, '.test-build');
/** Written last by a build: the time (ms) the build started reading the sources. */
export const BUILD_STAMP = path.join(BUILD_DIR, 'built-from');

/** Every .ts file under a directory. */
export function tsFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? tsFiles(path.join(dir, e.name)) : e.name.endsWith('.ts') ? [path.join(dir, e.name)] : []));
}

/** True when the build's stamp is newer than every source file (and the tree's shape is unchanged). */
function buildIsFresh(): boolean {
  let startedAt: number;
  let count: number;
  try {
    [startedAt, count] = readFileSync(BUILD_STAMP, 'utf8').trim().split(' ').map(Number) as [number, number];
  } catch {
    return false;
  }
  const sources = tsFiles(path.join(root, 'src'));
  // A deleted source leaves its compiled file behind: a different count is a stale build.
  return sources.length === count && sources.every((f) => statSync(f).mtimeMs < startedAt);
}

let fresh: boolean | undefined;

/** Arguments after node's flags that run the node: the build's main.js, or src/main.ts under tsx. */
export function nodeMainArgs(): string[] {
  fresh ??= process.env.FIRKIN_TEST_TSX !== '1' && buildIsFresh();
  return fresh ? [path.join(BUILD_DIR, 'src', 'main.js')] : ['--import', 'tsx', 'src/main.ts'];
}
