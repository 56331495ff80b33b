// `npm run bench [name] [filter]`: runs bench/<name>.ts, or every bench in turn.
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const dir = fileURLToPath(new URL('.', import.meta.url));
const [name, ...rest] = process.argv.slice(2);
/** Modules the benches share, and `ab.ts`, which needs two checkouts to compare: not benches of their own. */
const NOT_BENCHES = ['run.ts', 'support.ts', 'http-client.ts', 'profile-summary.ts', 'profiled-node.ts', 'text-corpus.ts', 'vector-data.ts', 'ab.ts'];
const benches = readdirSync(dir)
  .filter((f) => f.endsWith('.ts') && !NOT_BENCHES.includes(f))
  .map((f) => f.replace(/\.ts$/, ''))
  .filter((b) => name === undefined || b === name);
if (benches.length === 0) {
  console.error(`no bench named ${name}`);
  process.exit(2);
}
for (const bench of benches) {
  console.log(`# bench/${bench}.ts`);
  const run = spawnSync(process.execPath, ['--import', 'tsx', `${dir}${bench}.ts`, ...rest], { stdio: 'inherit' });
  if (run.status !== 0) process.exit(run.status ?? 1);
}
