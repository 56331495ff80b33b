// A node that comes back after the cluster changed around it: n3 is stopped, n4 and n5 join,
// n3 is removed from the metadata group as a dead voter, and the metadata leadership moves to
// a node n3 has never heard of. Started again, n3's copy of the metadata knows only n1 and n2;
// the failure detector hears a node only on links that node dials, so the leader never heard
// n3, never marked it up, never added it back to the group, and n3 stayed stale for good
// (chaos, the `remove` nemesis, seed 9). n3 now learns where the members are when it asks one
// of them whether it left (it knows no leader), dials them, and is a member again.
import t from 'tap';
import { waitFor } from '../support/wait.js';
import { TestCluster } from './harness.js';

interface NodeView {
  name: string;
  status: string;
  role: string;
}

t.test('a node whose copy of the metadata does not know the leader is heard, added back and catches up', async (t) => {
  const c = await TestCluster.start(3);
  t.teardown(() => c.close());
  const nodesOf = async (via: string) => ((await c.request(via, 'GET', '/_cluster/nodes')).body.nodes ?? []) as NodeView[];

  await c.stop('n3');
  await c.add('n4');
  await c.add('n5');
  await c.waitMembers();
  await waitFor(async () => ((await nodesOf('n1')).find((n) => n.name === 'n3')?.role === 'none' ? true : undefined), { timeoutMs: 30_000, what: 'n3, down, out of the metadata group' });

  // Move the metadata leadership to n4 or n5, which n3 has never heard of: kill the leader
  // while it is n1 or n2, and bring it back.
  for (let round = 1; ; round++) {
    const leader = await c.waitMembers();
    if (leader === 'n4' || leader === 'n5') break;
    if (round > 8) t.fail(`the leadership stayed on n1 or n2 for ${round - 1} rounds`);
    await c.kill9(leader);
    await waitFor(async () => {
      const other = c.running()[0]!;
      const now = (await c.status(other)).leader;
      return now !== null && now !== leader ? true : undefined;
    }, { timeoutMs: 20_000, what: `a leader other than ${leader}` });
    await c.startNode(leader);
  }
  const leader = await c.waitMembers();
  t.ok(leader === 'n4' || leader === 'n5', `the metadata leader is ${leader}, unknown to n3`);

  await c.startNode('n3');
  // n3's own copy says it is a member of the group it was removed from: the leader's view decides.
  const n3 = await waitFor(async () => {
    const view = (await nodesOf(leader)).find((n) => n.name === 'n3');
    return view?.status === 'up' && view.role !== 'none' ? view : undefined;
  }, { timeoutMs: 45_000, what: 'the leader to hear n3, record it up and add it back to the metadata group' });
  t.pass(`the leader records n3 up, and n3 is back in the metadata group (${n3.role})`);
  // Caught up: n3's copy now has the nodes that joined while it was away.
  await waitFor(async () => ((await nodesOf('n3')).some((n) => n.name === 'n5') ? true : undefined), { timeoutMs: 30_000, what: "n3's copy of the metadata to know n4 and n5" });
  t.equal(await c.waitMembers(), leader, 'every node, n3 included, agrees on the leader and the members');
});
