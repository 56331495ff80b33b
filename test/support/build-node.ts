// tap's `before` script (package.json): compiles src/ to .test-build/src/ with esbuild, file by
// file as tsx would (no bundling), so the node processes of the run start from JavaScript
// (test/support/built-node.ts says why and when the build is used).
import { renameSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { BUILD_CLI, BUILD_DIR, BUILD_STAMP, buildIsFresh, tsFiles } from './built-node.js';

// The suite's runner (scripts/test-suite.ts) builds once, then starts two tap runs whose own
// `before` would build again, each swapping the build under the other's starting nodes.
if (process.env.FIRKIN_TEST_BUILT === '1' && buildIsFresh()) process.exit(0);

const src = fileURLToPath(new URL('../../src', import.meta.url));
const CLI_ENTRY = `import { processIo, runCli } from './src/cli/firkin.js';
process.exitCode = await runCli(process.argv.slice(2), process.env, processIo());
`;
const startedAt = Date.now();
const sources = tsFiles(src);
// Built beside, then swapped in whole: a test of another run sees one build or the other.
const next = `${BUILD_DIR}.${process.pid}`;
rmSync(next, { recursive: true, force: true });
await build({ entryPoints: sources, outdir: path.join(next, 'src'), outbase: src, format: 'esm', platform: 'node', target: 'node20', logLevel: 'error' });
// The CLI's entry beside it: bin/firkin.js, reading this build (tsx costs each run ~0.5 s).
writeFileSync(path.join(next, path.basename(BUILD_CLI)), CLI_ENTRY);
writeFileSync(path.join(next, path.basename(BUILD_STAMP)), `${startedAt} ${sources.length}\n`);
// Two renames, then the old build's removal: the path is missing for an instant only, not for
// the time a recursive delete takes (another run's node may be starting from it).
const old = `${BUILD_DIR}.old.${process.pid}`;
try {
  renameSync(BUILD_DIR, old);
} catch (err) {
  if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
}
renameSync(next, BUILD_DIR);
rmSync(old, { recursive: true, force: true });
