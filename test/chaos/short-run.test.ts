// The short seeded chaos run of the default suite: 3 real nodes behind fault proxies, the keys
// workload, kill and partition faults for 60 s, then heal, converge and check. Longer runs:
// `npm run chaos -- --minutes 30 --nemesis kill,pause,partition,isolate,bridge,one-way,restart`.
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

t.test('chaos: seed 1, kill and partition, no anomalies, everything stopped', async (t) => {
  const { code, out, last } = await chaos(t, ['--seed', '1', '--minutes', '0.75', '--nodes', '3', '--nemesis', 'kill,partition']);
  t.match(last, /^chaos: \d+ ops, \d+ faults, 0 anomalies$/, out.slice(-3000));
  t.equal(code, 0);
  const [, ops, faults] = /^chaos: (\d+) ops, (\d+) faults/.exec(last) ?? [];
  t.ok(Number(ops) > 100, 'the workload ran');
  t.ok(Number(faults) >= 5, 'faults were injected');
});

t.test('chaos: a deliberately broken build (stale keys) fails the checker', async (t) => {
  const { code, out, last } = await chaos(t, ['--seed', '3', '--minutes', '0.5', '--nemesis', 'partition', '--broken', 'stale-keys']);
  t.match(out, /ANOMALY keys revoked-accepted/, out.slice(-3000));
  t.match(last, /^chaos: \d+ ops, \d+ faults, [1-9]\d* anomalies$/);
  t.equal(code, 1, 'exit status 1 on anomalies');
});
