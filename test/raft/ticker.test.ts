// The node's one ticker: every registered group ticks on the same interval, and a group that
// unregisters stops ticking.
import t from 'tap';
import { RaftTicker } from '../../src/raft/ticker.js';
import { waitFor } from '../support/wait.js';

t.test('one interval drives every registration until it unregisters', async (t) => {
  const ticker = new RaftTicker(5);
  let a = 0;
  let b = 0;
  const offA = ticker.register(() => a++);
  const offB = ticker.register(() => b++);
  t.equal(ticker.size, 2);
  await waitFor(() => a >= 3 && b >= 3, { what: 'both ticked' });
  offA();
  const frozen = a;
  await waitFor(() => b >= frozen + 5, { what: 'b keeps ticking' });
  t.equal(a, frozen, 'a stopped at once');
  offB();
  t.equal(ticker.size, 0, 'nothing registered: the timer is gone');
  const again = ticker.register(() => a++);
  await waitFor(() => a > frozen, { what: 'a new registration restarts the timer' });
  again();
  t.end();
});
