// The chaos runner as a child process, for the short seeded runs of the suite
// (test/chaos/short-*.test.ts). Every file that imports this runs alone (test/suite.test.ts).
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { Test } from 'tap';

const root = fileURLToPath(new URL('../../', import.meta.url));

/**
 * Each workload's checker is shown to fail a deliberately broken build. The default suite runs
 * one such run (the register workload's stale reads); `npm run test:chaos` runs them all. They
 * prove the same wiring (a broken node, the runner, a checker, exit status 1) for ~25-50 s of
 * CI each, and the checkers have their own tests (test/chaos/checker/).
 */
export const BROKEN_BUILD_SKIP = process.env.CHAOS_BROKEN_BUILDS === 'all' ? false : 'run by npm run test:chaos (one broken build runs in the default suite: short-data.test.ts)';

/** Run the chaos runner; resolves with its exit status, its output and the output's last line. */
export async function runChaos(t: Test, args: string[]): Promise<{ code: number | null; out: string; last: string }> {
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
