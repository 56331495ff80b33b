// RocksDB keeps every table file open: /health and /metrics say when the process's limit on
// open files comes near, and recover once an operator raises it on the running process.
import { spawnSync } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import t from 'tap';
import { TEST_ADMIN_KEY, request, tempDir } from '../support/node.js';
import { spawnTestNode } from '../support/process.js';
import { waitFor } from '../support/wait.js';

const prlimit = spawnSync('prlimit', ['--version']).status === 0;

t.test('a soft limit on open files too low for the data is a degraded /health, and raising it clears it', { skip: prlimit ? false : 'no prlimit (util-linux) here' }, async (t) => {
  const dataDir = tempDir('firkin-nofile-');
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
  const child = await spawnTestNode({ SERVICE_DATA_DIR: dataDir });
  t.teardown(() => child.kill9());
  const pid = child.proc.pid!;
  const soft = Number(/^Max open files\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/limits`, 'utf8'))?.[1]);
  t.ok(soft > 1_000, `the node starts with room (${soft})`);
  const health = async () => (await request(child.url, 'GET', '/health', { key: TEST_ADMIN_KEY })).body;
  t.equal((await health()).storage.status, 'ok');

  // The soft limit only: an unprivileged process may raise it again up to the hard one.
  t.equal(spawnSync('prlimit', ['--pid', String(pid), '--nofile=400:']).status, 0, 'lowered to 400');
  const degraded = await waitFor(async () => {
    const body = await health();
    return body.storage.status === 'degraded' ? body : undefined;
  }, { timeoutMs: 15_000, what: '/health to see the lowered limit' });
  t.equal(degraded.status, 'degraded', 'the node as a whole');
  t.equal(degraded.storage.open_files_limit, 400);
  t.match(degraded.storage.problems, [/table files open and this process may open 400 files \(ulimit -n\): raise the limit/]);
  t.match((await request(child.url, 'GET', '/metrics', { key: TEST_ADMIN_KEY })).text, /^firkin_open_files_limit 400$/m);
  // Still serving meanwhile: the warning comes before anything fails.
  t.equal((await request(child.url, 'PUT', '/db/still', { key: TEST_ADMIN_KEY })).status, 201);

  t.equal(spawnSync('prlimit', ['--pid', String(pid), `--nofile=${soft}:`]).status, 0, 'raised back');
  const healed = await waitFor(async () => {
    const body = await health();
    return body.storage.status === 'ok' ? body : undefined;
  }, { timeoutMs: 15_000, what: '/health to see the raised limit' });
  t.equal(healed.storage.open_files_limit, soft);
  t.notOk('problems' in healed.storage, 'nothing left to say');
});
