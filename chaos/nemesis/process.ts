// Process nemeses over a PID: kill -9, pause and resume (SIGSTOP/SIGCONT, the long-GC case),
// a clean restart, and a kill during startup. Starting a node is the caller's business (a
// callback): these helpers only signal and wait, each wait with a bound.
import type { ChildProcess } from 'node:child_process';

export const PROCESS_LIMITS = {
  /** A clean stop waits this long after SIGTERM, then sends SIGKILL. */
  stopTimeoutMs: 10_000,
  /** How long a SIGKILLed process may take to be gone before that is an error. */
  killTimeoutMs: 5_000,
  /** Polling interval for a PID we did not spawn. */
  pollMs: 20,
} as const;

export interface Proc {
  readonly pid: number;
  /** Settles once the process has exited. */
  readonly exited: Promise<void>;
}

/** A child we spawned: its exit event is exact. */
export function fromChild(child: ChildProcess): Proc {
  if (child.pid === undefined) throw new Error('child process has no pid: it failed to spawn');
  const exited =
    child.exitCode !== null || child.signalCode !== null ? Promise.resolve() : new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return { pid: child.pid, exited };
}

/**
 * A PID started elsewhere (scripts/cluster.sh): exit is seen by polling kill(pid, 0). A child
 * of this process must be reaped to disappear: use `fromChild` for those.
 */
export function fromPid(pid: number, pollMs: number = PROCESS_LIMITS.pollMs): Proc {
  const exited = new Promise<void>((resolve) => {
    const poll = () => {
      if (!isAlive(pid)) return resolve();
      setTimeout(poll, pollMs).unref();
    };
    poll();
  });
  return { pid, exited };
}

export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** SIGKILL (no shutdown code runs) and wait until it is gone. */
export async function kill9(p: Proc, timeoutMs: number = PROCESS_LIMITS.killTimeoutMs): Promise<void> {
  signal(p, 'SIGKILL');
  if (!(await exitsWithin(p, timeoutMs))) throw new Error(`pid ${p.pid} still running ${timeoutMs} ms after SIGKILL`);
}

/** SIGSTOP: the process keeps its sockets open and answers nothing, like a long GC pause. */
export function pause(p: Proc): void {
  signal(p, 'SIGSTOP');
}

export function resume(p: Proc): void {
  signal(p, 'SIGCONT');
}

/**
 * SIGTERM and wait up to `timeoutMs` for a clean exit, else SIGKILL. A paused process is
 * resumed too: a stopped process only acts on SIGTERM once it runs again.
 */
export async function stop(p: Proc, timeoutMs: number = PROCESS_LIMITS.stopTimeoutMs): Promise<'exited' | 'killed'> {
  signal(p, 'SIGTERM');
  signal(p, 'SIGCONT');
  if (await exitsWithin(p, timeoutMs)) return 'exited';
  await kill9(p);
  return 'killed';
}

/** A clean restart: stop (bounded), then start again through the caller's callback. */
export async function restart(p: Proc, start: () => Promise<Proc>, timeoutMs: number = PROCESS_LIMITS.stopTimeoutMs): Promise<{ proc: Proc; stopped: 'exited' | 'killed' }> {
  const stopped = await stop(p, timeoutMs);
  return { proc: await start(), stopped };
}

/**
 * Start a process (the callback returns as soon as it is spawned, not when it is ready) and
 * SIGKILL it `delayMs` later: a crash in the middle of recovery or of a join. `delayMs` comes
 * from the run's seed (schedule.ts). `killed` is false when it had already exited by itself.
 */
export async function killDuringStartup(spawn: () => Proc, delayMs: number): Promise<{ proc: Proc; killed: boolean }> {
  const proc = spawn();
  if (await exitsWithin(proc, delayMs)) return { proc, killed: false };
  await kill9(proc);
  return { proc, killed: true };
}

/** Whether `p` exits within `ms` (it keeps running either way). */
export async function exitsWithin(p: Proc, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), ms)));
  const done = await Promise.race([p.exited.then(() => true as const), timeout]);
  clearTimeout(timer);
  return done;
}

/** Send a signal; a process that is already gone is not an error (it is what we wanted). */
function signal(p: Proc, sig: NodeJS.Signals): void {
  try {
    process.kill(p.pid, sig);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ESRCH') throw err;
  }
}
