// The chaos runner's options: defaults, the workloads, and one line naming a bad option.
import t from 'tap';
import { DEFAULT_CHAOS, OptionError, bm25Backend, parseChaosArgs } from '../../chaos/options.js';

t.test('workloads and bad values', (t) => {
  t.same(parseChaosArgs([]), DEFAULT_CHAOS);
  for (const w of ['keys', 'register', 'set', 'cas']) t.equal(parseChaosArgs(['--workload', w]).workload, w);
  t.equal(parseChaosArgs(['--workload=set', '--seed', '9']).seed, 9);
  t.throws(() => parseChaosArgs(['--workload', 'bank']), new OptionError('--workload must be one of keys, register, set, cas, got "bank"'));
  t.throws(() => parseChaosArgs(['--nodes', '2']), /--nodes must be an integer from 3 to 9/);
  t.throws(() => parseChaosArgs(['--nemesis', 'kill,flood']), /--nemesis takes a comma list/);
  t.equal(parseChaosArgs(['--bound-scale', '0.005']).boundScale, 0.005);
  t.throws(() => parseChaosArgs(['--bound-scale', '2']), /--bound-scale must be a number from 0.0001 to 1/);
  t.equal(parseChaosArgs(['--workload', 'cas', '--rebalance', 'true']).rebalance, true);
  t.equal(parseChaosArgs(['--workload', 'set', '--rebalance', 'true']).rebalance, true);
  t.throws(() => parseChaosArgs(['--rebalance', 'true']), new OptionError("--rebalance splits and merges the cas workload's VDB or reshards the register and set workloads' collection: the keys workload has neither"));
  t.throws(() => parseChaosArgs(['--workload', 'cas', '--rebalance', 'yes']), /--rebalance must be true or false/);
  t.equal(parseChaosArgs(['--workload', 'set', '--bm25', 'none']).bm25, 'none');
  t.throws(() => parseChaosArgs(['--workload', 'set', '--bm25', 'lucene']), /--bm25 must be one of seed, memory, disk, none/);
  t.throws(() => parseChaosArgs(['--bm25', 'disk']), /only that workload has text/);
  t.equal(bm25Backend(parseChaosArgs(['--workload', 'set', '--seed', '4'])), 'memory', 'by seed: even, memory');
  t.equal(bm25Backend(parseChaosArgs(['--workload', 'set', '--seed', '5'])), 'disk', 'odd, disk');
  t.equal(bm25Backend(parseChaosArgs(['--workload', 'set', '--seed', '5', '--bm25', 'memory'])), 'memory');
  t.end();
});
