// The short seeded chaos run of clustered VDBs: 3 real nodes behind fault proxies, the cas
// workload (documents of a VDB with 2 shards, replica_factor 3, read with linearizable GETs and
// updated by PUT with If-Match: compare-and-set on the revision) under kill and partition, then
// heal, converge (every VDB shard's replicas at one digest) and check linearizability.
// Longer runs: `npm run chaos -- --workload cas --minutes 30 --nemesis …`.
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import t, { type Test } from 'tap';

const root = fileURLToPath(new URL('../../', import.meta.url));

/** Run the chaos runner as a child process; resolves with its exit status and output. */
async function chaos(t: Test, args: string[]): Promise<{ code: number | null; out: string; last: string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'chaos/run.ts', ...args, '--out', `${root}data/chaos-ci`], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  t.teardown(() => {
    if (child.exitCode === null) child.kill('SIGKILL');
  });
  const code = await new Promise<number | null>((resolve) => child.once('exit', (c) => resolve(c)));
  return { code, out, last: out.trim().split('\n').at(-1) ?? '' };
}

// Seed 10 starts with two partitions, then kills: a restart under load can take 10 s, and the
// nemesis applies events in order, so a schedule that starts with kills may see its partitions late.
t.test('chaos: cas workload on a VDB, seed 10, partition and kill: linearizable, converged, everything stopped', async (t) => {
  const { code, out, last } = await chaos(t, ['--seed', '10', '--minutes', '0.35', '--nodes', '3', '--workload', 'cas', '--nemesis', 'kill,partition']);
  t.match(last, /^chaos: \d+ ops, \d+ faults, 0 anomalies$/, out.slice(-3000));
  t.equal(code, 0);
  const [, ops, faults] = /^chaos: (\d+) ops, (\d+) faults/.exec(last) ?? [];
  t.ok(Number(ops) > 100, 'the workload ran');
  t.ok(Number(faults) >= 3, 'faults were injected');
});

t.test('chaos: a deliberately broken build (VDB reads without ReadIndex) fails the linearizability checker', async (t) => {
  const { code, out, last } = await chaos(t, ['--seed', '3', '--minutes', '0.2', '--workload', 'cas', '--nemesis', 'partition', '--broken', 'stale-reads']);
  t.match(out, /ANOMALY linearizable not-linearizable/, out.slice(-3000));
  t.match(last, /^chaos: \d+ ops, \d+ faults, [1-9]\d* anomalies$/);
  t.equal(code, 1, 'exit status 1 on anomalies');
});
