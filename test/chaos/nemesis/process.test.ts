// Process nemeses against real child processes (small node scripts, not Firkin nodes): the
// state each signal leaves them in is read from /proc, never inferred from a pause in output.
import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import t from 'tap';
import { type Proc, fromChild, fromPid, isAlive, kill9, killDuringStartup, pause, restart, resume, stop } from '../../../chaos/nemesis/process.js';
import { waitFor } from '../../support/wait.js';

/** A child that prints `ready` and, unless told to ignore it, exits 0 on SIGTERM. */
function child(t: { teardown(fn: () => unknown): void }, options: { ignoreTerm?: boolean; readyAfterMs?: number } = {}): { proc: Proc; child: ChildProcess; output(): string } {
  const script = `
    process.on('SIGTERM', () => { ${options.ignoreTerm ? '' : 'console.log("term"); process.exit(0);'} });
    setTimeout(() => console.log('ready'), ${options.readyAfterMs ?? 0});
    setInterval(() => {}, 1000);`;
  const c = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  c.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  t.teardown(() => c.kill('SIGKILL'));
  return { proc: fromChild(c), child: c, output: () => out };
}

/** The process state letter from /proc (Linux): T when stopped. */
function state(pid: number): string {
  return readFileSync(`/proc/${pid}/stat`, 'utf8').replace(/^.*\) /s, '')[0]!;
}

t.test('kill9 ends the process with SIGKILL, running no shutdown code', async (t) => {
  const c = child(t);
  await waitFor(() => c.output().includes('ready'), { what: 'child ready' });
  await kill9(c.proc);
  t.equal(c.child.signalCode, 'SIGKILL');
  t.notMatch(c.output(), /term/);
  await kill9(c.proc); // already gone: not an error
});

t.test('pause stops the process, resume continues it', async (t) => {
  const c = child(t);
  await waitFor(() => c.output().includes('ready'), { what: 'child ready' });
  pause(c.proc);
  await waitFor(() => state(c.proc.pid) === 'T', { what: 'stopped state' });
  resume(c.proc);
  await waitFor(() => state(c.proc.pid) !== 'T', { what: 'running again' });
  t.ok(isAlive(c.proc.pid));
});

t.test('a clean restart: SIGTERM, exit, then the start callback', async (t) => {
  const c = child(t);
  await waitFor(() => c.output().includes('ready'), { what: 'child ready' });
  let next: ReturnType<typeof child> | undefined;
  const { proc, stopped } = await restart(c.proc, async () => {
    next = child(t);
    return next.proc;
  });
  t.equal(stopped, 'exited');
  t.equal(c.child.exitCode, 0);
  t.match(c.output(), /term/, 'its shutdown code ran');
  t.not(proc.pid, c.proc.pid);
  await waitFor(() => next!.output().includes('ready'), { what: 'the new process ready' });
});

t.test('stop resumes a paused process so it can act on SIGTERM', async (t) => {
  const c = child(t);
  await waitFor(() => c.output().includes('ready'), { what: 'child ready' });
  pause(c.proc);
  await waitFor(() => state(c.proc.pid) === 'T', { what: 'stopped state' });
  t.equal(await stop(c.proc), 'exited');
  t.equal(c.child.exitCode, 0);
});

t.test('stop falls back to SIGKILL after its bound', async (t) => {
  const c = child(t, { ignoreTerm: true });
  await waitFor(() => c.output().includes('ready'), { what: 'child ready' });
  t.equal(await stop(c.proc, 200), 'killed');
  t.equal(c.child.signalCode, 'SIGKILL');
});

t.test('kill during startup: killed before it is ready', async (t) => {
  let started: ReturnType<typeof child> | undefined;
  const { killed } = await killDuringStartup(() => {
    started = child(t, { readyAfterMs: 60_000 });
    return started.proc;
  }, 50);
  t.ok(killed);
  t.equal(started!.child.signalCode, 'SIGKILL');
  t.notMatch(started!.output(), /ready/);
});

t.test('a PID we only know by number: exit seen by polling', async (t) => {
  const c = child(t);
  await waitFor(() => c.output().includes('ready'), { what: 'child ready' });
  const byPid = fromPid(c.proc.pid);
  await kill9(byPid);
  t.notOk(isAlive(c.proc.pid));
});
