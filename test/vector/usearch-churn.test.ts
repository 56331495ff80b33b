// usearch 2.25 spun for ever inside `remove()` once the key table of a small index had no empty
// slot left: a collection whose documents come and go (a few live at a time) hung its node at
// 100 % CPU after ~190 deletes, the event loop blocked (found by the vector route fuzzer on
// 11-30; usearch issues #753 and #769, fixed in 2.26). A hang cannot be caught in the process
// that hangs, so the churn runs in a child, waited for with a deadline.
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import t from 'tap';

const CHILD = fileURLToPath(new URL('./usearch-churn-child.ts', import.meta.url));

function churn(live: number, rounds: number): Promise<{ code: number | null; out: string; hung: boolean }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', CHILD, String(live), String(rounds)], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    let hung = false;
    // Generous: the work takes well under a second; only a hang reaches this.
    const deadline = setTimeout(() => {
      hung = true;
      child.kill('SIGKILL');
    }, 120_000);
    child.once('close', (code) => {
      clearTimeout(deadline);
      resolve({ code, out, hung });
    });
  });
}

t.test('keys added while older ones are removed, a few live at a time, never hang the index', async (t) => {
  for (const live of [1, 3, 40]) {
    const { code, out, hung } = await churn(live, 20_000);
    t.notOk(hung, `${live} live: the churn ended (it hung in remove() with usearch 2.25)`);
    t.equal(code, 0, out);
    t.match(out, new RegExp(`^done ${live} ${live}\\n`), `${live} live keys are left, and a search finds them`);
  }
});
