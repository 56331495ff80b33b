// scripts/cluster.sh's own mechanics, with a stand-in node (fake-node.ts) that starts fast:
// the environment each node gets, secrets, ports, signals by PID, errors, down and wipe.
// Real nodes through the same script: cluster-cli.test.ts.
import { execFile } from 'node:child_process';
import { existsSync, readFileSync, rmSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { type LocalCluster, inheritedEnv, startCluster } from '../support/cluster.js';
import { request, tempDir } from '../support/node.js';
import { waitFor } from '../support/wait.js';

const SCRIPT = fileURLToPath(new URL('../../scripts/cluster.sh', import.meta.url));
const FAKE = { FIRKIN_NODE_CMD: 'node --import tsx test/cli/fake-node.ts' };

function run(args: string[], env: Record<string, string>): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile('bash', [SCRIPT, ...args], { env: { ...inheritedEnv(), ...env } }, (err, stdout, stderr) =>
      resolve({ code: err === null ? 0 : Number(err.code), stdout, stderr }),
    );
  });
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  const stat = (() => {
    try {
      return readFileSync(`/proc/${pid}/stat`, 'utf8');
    } catch {
      return '';
    }
  })();
  return !/\) Z /.test(stat);
}

/** What an operator does to make a stopped node join again as a new member. */
const emptyData = (c: LocalCluster, name: string) => rmSync(path.join(c.dir, name, 'data'), { recursive: true, force: true });
const procState = (pid: number) => /\) (\S) /.exec(readFileSync(`/proc/${pid}/stat`, 'utf8'))?.[1];
const envOf = async (c: LocalCluster, name: string) => (await request(c.node(name).url, 'GET', '/env')).body as Record<string, string>;

t.test('three nodes: environment, secrets, env, signals', async (t) => {
  const c = await startCluster({ nodes: 3, env: { ...FAKE, FIRKIN_ZONES: 'a,b' } });
  t.teardown(() => c.close());
  const cookie = readFileSync(path.join(c.dir, 'cookie'), 'utf8').trim();
  const n1Grpc = c.node('n1').grpc;

  t.match(cookie, /^[0-9a-f]{64}$/);
  t.match(c.adminKey, /^fk_[0-9a-f]{64}$/);
  for (const f of ['cookie', 'admin.key']) t.equal(statSync(path.join(c.dir, f)).mode & 0o777, 0o600, `${f} is mode 600`);

  for (const [i, n] of c.nodes.entries()) {
    const [http, grpc] = [new URL(n.url).port, n.grpc.split(':')[1]!];
    const expected: Record<string, string> = {
      FIRKIN_CLUSTER_NODE: path.join(c.dir, n.name),
      SERVICE_ENABLE_CLUSTER: 'true',
      SERVICE_NODE_NAME: n.name,
      SERVICE_HTTP_IP: '127.0.0.1',
      SERVICE_HTTP_PORT: http,
      // The gateway, when enabled, joins the node's own port.
      SERVICE_GATEWAY_PORT: http,
      SERVICE_GRPC_IP: '127.0.0.1',
      SERVICE_GRPC_PORT: grpc,
      SERVICE_GRPC_ADVERTISE: n.grpc,
      RELEASE_COOKIE: cookie,
      SERVICE_ADMIN_KEY: c.adminKey,
      SERVICE_DATA_DIR: path.join(c.dir, n.name, 'data'),
      SERVICE_ZONE: i % 2 === 0 ? 'a' : 'b',
    };
    if (n.name !== 'n1') expected.SERVICE_SEED_NODES = n1Grpc;
    const env = await envOf(c, n.name);
    delete env.SERVICE_LOG_LEVEL; // may come from the test runner's environment
    delete env.SERVICE_STORAGE_CACHE_MB; // the harness's small caches (support/cluster.ts)
    t.same(env, expected, `${n.name}'s environment (n1 bootstraps: no seeds)`);
  }
  t.equal(Number(new URL(c.node('n2').url).port), Number(new URL(c.node('n1').url).port) + 1, 'ports count up from the base');

  t.equal(
    await c.script(['env']),
    `FIRKIN_NODES=${c.nodes.map((n) => n.url).join(',')}\nFIRKIN_KEY=${c.adminKey}\nFIRKIN_URL=${c.node('n1').url}\n`,
  );
  const status = (await c.script(['status'])).trimEnd().split('\n');
  t.same(
    status.map((l) => l.split(/\s+/)),
    c.nodes.map((n) => [n.name, String(n.pid), 'running', n.url, 'member']),
  );

  // kill -9, then start again: a new process on the same ports.
  const old = c.node('n2').pid!;
  await c.kill9('n2');
  t.notOk(alive(old), 'n2 is gone');
  t.equal(c.node('n2').pid, undefined);
  t.match(await c.script(['status']), /^n2 +- +stopped +http:\S+ +-$/m);
  const again = await run(['kill', 'n2'], { FIRKIN_CLUSTER_DIR: c.dir });
  t.same([again.code, again.stderr], [1, 'cluster.sh: n2 is not running\n']);
  await c.start('n2');
  t.not(c.node('n2').pid, old);
  t.equal((await envOf(c, 'n2')).SERVICE_SEED_NODES, undefined, 'a node with data restarts: no seeds');
  await c.stop('n2');
  emptyData(c, 'n2');
  await c.start('n2');
  t.equal((await envOf(c, 'n2')).SERVICE_SEED_NODES, [n1Grpc, c.node('n3').grpc].join(','), 'a node with no data joins through n1 first, then the running nodes');

  // A signal takes effect when the kernel next handles the process: on a busy machine /proc
  // can still say R right after kill(2) returned (seen under a load average of 9).
  await c.pause('n3');
  t.equal(await waitFor(() => procState(c.node('n3').pid!) === 'T' && 'T', { what: 'n3 stopped by SIGSTOP' }), 'T');
  t.match(await c.script(['status']), /^n3 +\d+ +paused /m);
  await c.waitMembers({ timeoutMs: 5_000 }); // a paused node is not waited for
  await c.resume('n3');
  t.ok(await waitFor(() => procState(c.node('n3').pid!) !== 'T', { what: 'n3 running again after SIGCONT' }), 'resumed');
  await c.waitMembers();

  t.match(await c.script(['logs', 'n1']), /fake n1 listening/);

  // Growing: n4 joins through n1 and the nodes already up.
  await c.up(4);
  t.equal((await envOf(c, 'n4')).SERVICE_SEED_NODES, c.nodes.slice(0, 3).map((n) => n.grpc).join(','));

  // A node that ignores SIGTERM is killed after FIRKIN_STOP_TIMEOUT_S.
  await c.stop('n4');
  await c.script(['start', 'n4'], { FAKE_IGNORE_TERM: '1' });
  const stubborn = await c.script(['stop', 'n4'], { FIRKIN_STOP_TIMEOUT_S: '1' });
  t.match(stubborn, /SIGKILL after 1s/);
  t.match(stubborn, /stopped n4/);

  const pids = c.nodes.map((n) => n.pid).filter((p) => p !== undefined);
  t.match(await c.script(['down']), /stopped n1\n(.|\n)*stopped n3\n/);
  t.ok(pids.every((p) => !alive(p!)), 'down stops every node');
  t.ok(existsSync(path.join(c.dir, 'n1', 'data')), 'down keeps the data');
  await c.script(['up', '4']);
  t.match(await c.script(['status']), /^(n\d +\d+ +running +\S+ +member\n){4}$/);

  // n1 emptied: it joins the cluster the others hold, never bootstraps a second one.
  await c.stop('n1');
  emptyData(c, 'n1');
  await c.start('n1');
  t.equal((await envOf(c, 'n1')).SERVICE_SEED_NODES, c.nodes.slice(1).map((n) => n.grpc).join(','), 'an empty n1 joins through the running nodes');
  await c.script(['down']);
  emptyData(c, 'n1');
  const alone = await run(['start', 'n1'], { FIRKIN_CLUSTER_DIR: c.dir });
  t.same(
    [alone.code, alone.stderr],
    [1, 'cluster.sh: n1 has no data and no node of its cluster is running: it would start a new cluster; start a node with data first (n2 n3 n4 ), then n1 joins through it\n'],
  );
  t.notOk(existsSync(path.join(c.dir, 'n1', 'pid')) && alive(Number(readFileSync(path.join(c.dir, 'n1', 'pid'), 'utf8'))), 'n1 was not started');
  const up = await c.script(['up', '4']);
  t.match(up, new RegExp(`started n1 \\(pid \\d+\\) \\S+ seeds ${c.nodes.slice(1).map((n) => n.grpc).join(',')}\n`), 'up: the nodes with data first, then n1 joins through them');
  t.match(await c.script(['status']), /^(n\d +\d+ +running +\S+ +member\n){4}$/);
  t.match(await c.script(['wipe']), /wiped /);
  t.notOk(existsSync(c.dir), 'wipe deletes the directory');
});

t.test('one-line errors', async (t) => {
  const parent = tempDir('firkin-cluster-errors-');
  const dir = path.join(parent, 'c');
  const env = { ...FAKE, FIRKIN_CLUSTER_DIR: dir };
  t.teardown(async () => {
    await run(['wipe'], env);
    rmSync(parent, { recursive: true, force: true });
  });
  const cases: [string[], Record<string, string>, number, RegExp][] = [
    [[], {}, 2, /^cluster\.sh: missing command \(see scripts\/cluster\.sh help\)\n$/],
    [['bogus'], {}, 2, /^cluster\.sh: unknown command 'bogus'/],
    [['up'], {}, 2, /^cluster\.sh: up needs the number of nodes/],
    [['up', '0'], {}, 2, /^cluster\.sh: up N: N must be from 1 to 50, got '0'/],
    [['up', '2'], { FIRKIN_HTTP_BASE: '70000' }, 2, /^cluster\.sh: FIRKIN_HTTP_BASE must be a port from 1 to 65535, got '70000'/],
    [['status'], {}, 1, /^cluster\.sh: no cluster in .*\/c \(start one with: scripts\/cluster\.sh up N\)\n$/],
    [['up', '1'], { FIRKIN_NODE_CMD: 'node -e "process.exit(3)"' }, 1, /^cluster\.sh: n1 (exited while starting|did not start)/],
    [['kill', 'n2'], {}, 1, /^cluster\.sh: no node n2 in .*\/c \(up started n1\.\.n1\)\n$/],
    [['pause', 'node-1'], {}, 2, /^cluster\.sh: NODE must be like n3 or 3, got 'node-1'/],
    [['status'], { FIRKIN_HTTP_BASE: '1' }, 1, /^cluster\.sh: FIRKIN_HTTP_BASE=1, but the cluster in .* uses \d+\n$/],
    [['start', 'n1'], { FIRKIN_NODE_CMD: 'sleep 60', FIRKIN_WAIT_S: '1' }, 1, /^cluster\.sh: timed out after 1s waiting for n1 to be members/],
  ];
  // Ports the test does not bind: the node commands above never listen.
  for (const [args, extra, code, stderr] of cases) {
    const r = await run(args, { FIRKIN_HTTP_BASE: '31001', FIRKIN_GRPC_BASE: '31101', ...env, ...extra });
    t.equal(r.code, code, `${args.join(' ')}: exit ${code}`);
    t.match(r.stderr, stderr, args.join(' '));
    t.equal(r.stderr.split('\n').length, 2, `${args.join(' ')}: one line`);
  }
  t.match((await run(['help'], {})).stdout, /^Usage: scripts\/cluster\.sh COMMAND/);
});
