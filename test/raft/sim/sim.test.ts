// The deterministic simulation: SIM_SEED=<n> replays one run exactly; SIM_SEEDS=<count> sets
// how many seeds run (default 300); SIM_TICKS the faulty phase length per run.
import t from 'tap';
import { runSeed } from './sim.js';

const seeds = process.env.SIM_SEED !== undefined ? [Number(process.env.SIM_SEED)] : undefined;
const count = Number(process.env.SIM_SEEDS ?? 300);
const ticks = Number(process.env.SIM_TICKS ?? 1_500);
const base = Number(process.env.SIM_BASE ?? Math.floor(Math.random() * 1e9));

t.test('raft simulation', (t) => {
  const list = seeds ?? Array.from({ length: count }, (_, i) => base + i);
  t.comment(`seeds ${list[0]}..${list[list.length - 1]} (replay one with SIM_SEED=<seed>)`);
  let worst = 0;
  let acked = 0;
  for (const seed of list) {
    try {
      const r = runSeed(seed, ticks);
      worst = Math.max(worst, r.convergeTicks);
      acked += r.acked;
    } catch (err) {
      t.fail(`SIM_SEED=${seed}: ${(err as Error).message}`);
      if (seeds === undefined) break;
    }
  }
  t.comment(`${list.length} runs, ${acked} acknowledged proposals, worst convergence ${worst} ticks after heal`);
  t.end();
});
