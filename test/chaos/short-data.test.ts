// The short seeded chaos run of the replicated vector data: 3 real nodes behind fault proxies,
// the register workload (linearizability of single documents) under kill and partition, then
// heal, converge (every shard's replicas at one digest) and check. Seed 5 is the regression
// seed of the duplicate apply fixed by request ids: before that fix it failed within a minute.
// Longer runs: `npm run chaos -- --workload register|set --minutes 30 --nemesis …`.
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import t from 'tap';

const root = fileURLToPath(new URL('../../', import.meta.url));

t.test('chaos: register workload, seed 5, kill and partition: linearizable, converged, everything stopped', async (t) => {
  const child = spawn(process.execPath, ['--import', 'tsx', 'chaos/run.ts', '--seed', '5', '--minutes', '0.75', '--nodes', '3', '--workload', 'register', '--nemesis', 'kill,partition', '--out', `${root}data/chaos-ci`], {
    cwd: root,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  t.teardown(() => {
    if (child.exitCode === null) child.kill('SIGKILL');
  });
  const code = await new Promise<number | null>((resolve) => child.once('exit', (c) => resolve(c)));
  const last = out.trim().split('\n').at(-1) ?? '';
  t.match(last, /^chaos: \d+ ops, \d+ faults, 0 anomalies$/, out.slice(-3000));
  t.equal(code, 0);
  const [, ops, faults] = /^chaos: (\d+) ops, (\d+) faults/.exec(last) ?? [];
  t.ok(Number(ops) > 100, 'the workload ran');
  t.ok(Number(faults) >= 3, 'faults were injected');
});
