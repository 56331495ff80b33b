// Where a node -> node replication spends each side's main-thread time: CPU profiles of the
// source (which runs the replicator: changes, `_revs_diff` and `_bulk_get` answered locally,
// `_bulk_docs` with new_edits=false sent over HTTP) and of the target, taken while one
// one-shot replication of bench/replication.ts's documents runs, summarised per document.
// Usage: npx tsx bench/replication-profile.ts   (REPL_PROFILE_N documents, default 50000)
import { mkdirSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { spawnScript } from '../test/support/process.js';
import { TEST_ADMIN_KEY, tempDir } from '../test/support/node.js';
import { agent, call } from './http-client.js';
import { profileWindow, summarise, table } from './profile-summary.js';
import { benchDoc } from './support.js';

const N = Number(process.env.REPL_PROFILE_N ?? 50_000);
const auth = { authorization: `Bearer ${TEST_ADMIN_KEY}` };

const dirs = [tempDir('firkin-bench-rprof-a-'), tempDir('firkin-bench-rprof-b-')];
const profDir = tempDir('firkin-bench-rprof-cpu-');
mkdirSync(profDir, { recursive: true });
const profiled = (dir: string, out: string) =>
  spawnScript({
    script: 'bench/profiled-node.ts',
    env: { SERVICE_DATA_DIR: dir, SERVICE_HTTP_PORT: '0', SERVICE_ADMIN_KEY: TEST_ADMIN_KEY, SERVICE_LOG_LEVEL: 'info', FIRKIN_PROFILE_OUT: out },
    ready: /listening on (https?:\/\/[^\s]+) /,
    what: 'profiled node',
  });
const sourceProfile = path.join(profDir, 'source.cpuprofile');
const targetProfile = path.join(profDir, 'target.cpuprofile');
const source = await profiled(dirs[0]!, sourceProfile);
const target = await profiled(dirs[1]!, targetProfile);
try {
  await call(source.url, 'PUT', '/db/src', undefined, false, auth);
  for (let start = 0; start < N; start += 1_000) {
    const docs = Array.from({ length: Math.min(1_000, N - start) }, (_, i) => ({ _id: `doc${String(start + i).padStart(7, '0')}`, ...benchDoc(start + i) }));
    await call(source.url, 'POST', '/db/src/_bulk_docs', { docs }, false, auth);
  }
  const body = { target: `${target.url}/db/copy`, create_target: true, auth: { bearer_token: TEST_ADMIN_KEY } };
  const { seconds, written } = await profileWindow(source, () =>
    profileWindow(target, async () => {
      const t0 = performance.now();
      const result = await call(source.url, 'POST', '/db/src/_replicate', body, false, auth);
      return { seconds: (performance.now() - t0) / 1000, written: result.docs_written as number };
    }),
  );
  console.log(`${written} documents node -> node: ${(written / seconds).toFixed(0)} docs/s`);
  for (const [name, file] of [
    ['source (replicator)', sourceProfile],
    ['target', targetProfile],
  ] as const) {
    const s = summarise(JSON.parse(readFileSync(file, 'utf8')));
    table(`${name} by place (${s.totalMs.toFixed(0)} ms sampled), per document`, s.byPlace, s.totalMs, 16, written);
    table(`${name} by function (self time), per document`, s.byFunction, s.totalMs, 25, written);
  }
} finally {
  agent.destroy();
  await source.stop();
  await target.stop();
  for (const dir of [...dirs, profDir]) rmSync(dir, { recursive: true, force: true });
}
