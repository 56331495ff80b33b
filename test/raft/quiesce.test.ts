// Quiescence: an idle group goes silent, and comes back for a write, a read, a suspected
// leader, or a member that missed the silence — without a term change while its leader lives.
import t from 'tap';
import { Cluster } from './harness.js';

const ids = ['n1', 'n2', 'n3'];
const QUIESCE = 5;

/** A quiesced group led by n1; `peerAlive`: the driver's node liveness the cores are given. */
function idleCluster(peerAlive?: (node: string) => boolean): Cluster {
  const c = new Cluster(ids, { quiesceAfterTicks: QUIESCE, ...(peerAlive === undefined ? {} : { peerAlive }) });
  c.campaign('n1');
  c.propose('n1', 'a');
  c.tickAll(QUIESCE + 1);
  return c;
}

/** Messages the cluster sends during `ticks` ticks of every node. */
function trafficOver(c: Cluster, ticks: number): number {
  let sent = 0;
  for (let i = 0; i < ticks; i++) {
    for (const id of ids) c.c(id).tick();
    c.drain();
    sent += c.queue.length;
    c.stabilize();
  }
  return sent;
}

t.test('an idle group quiesces: no heartbeats, no elections, however long', (t) => {
  const c = idleCluster();
  for (const id of ids) t.ok(c.c(id).quiesced, `${id} quiesced`);
  t.equal(trafficOver(c, 500), 0, 'silent for 500 ticks (50 election timeouts)');
  t.same(c.leaders(), ['n1']);
  t.equal(c.c('n2').term, 2, 'no term change');
  t.end();
});

t.test('a group does not quiesce while something is pending', (t) => {
  const c = new Cluster(ids, { quiesceAfterTicks: QUIESCE });
  c.campaign('n1');
  c.isolated.add('n3'); // n3 cannot catch up: the group is not idle
  c.propose('n1', 'a');
  c.tick(['n1'], 50);
  t.notOk(c.c('n1').quiesced, 'a member behind keeps the leader heartbeating');
  c.isolated.delete('n3');
  c.tick(['n1'], QUIESCE + 2);
  for (const id of ids) t.ok(c.c(id).quiesced, `${id} quiesced once everyone caught up`);
  t.end();
});

t.test('a write wakes the group and commits everywhere; then it quiesces again', (t) => {
  const c = idleCluster();
  const index = c.propose('n1', 'b');
  for (const id of ids) {
    t.equal(c.c(id).log.committed, index, `${id} committed`);
    t.notOk(c.c(id).quiesced, `${id} awake`);
  }
  c.tickAll(QUIESCE + 2);
  t.ok(ids.every((id) => c.c(id).quiesced), 'quiet again');
  t.end();
});

t.test('a linearizable read through a follower wakes the leader and is confirmed', (t) => {
  const c = idleCluster();
  t.ok(c.c('n2').readIndex('r1'));
  c.stabilize();
  t.same(c.n('n2').readStates.map((r) => r.ctx), ['r1']);
  t.notOk(c.c('n1').quiesced);
  t.end();
});

t.test('a dead leader: followers stay silent until woken, then elect a new leader', (t) => {
  const c = idleCluster();
  c.isolated.add('n1');
  c.tick(['n2', 'n3'], 200);
  t.ok(c.c('n2').quiesced && c.c('n3').quiesced, 'no liveness signal, no election (the driver must wake them)');
  c.c('n2').wake();
  c.c('n3').wake();
  c.tick(['n2', 'n3'], 45);
  const leaders = c.leaders().filter((id) => id !== 'n1');
  t.equal(leaders.length, 1, 'a new leader within a few election timeouts');
  t.end();
});

t.test('a quiesced leader wakes when the nodes of a majority of its voters look dead, and steps down', (t) => {
  const dead = new Set<string>();
  const c = idleCluster((node) => !dead.has(node));
  t.ok(ids.every((id) => c.c(id).quiesced), 'quiesced');
  dead.add('n3');
  c.isolated.add('n3');
  t.notOk(c.c('n1').shouldWake(), 'one follower dead: the leader keeps its majority and stays quiet');
  t.notOk(c.c('n2').shouldWake(), 'a follower whose leader lives stays quiet');
  dead.add('n2');
  c.isolated.add('n2');
  c.tick(['n1'], 200);
  t.equal(c.c('n1').role, 'leader', 'never woken, a quiesced leader calls itself leader for ever (what the driver prevents)');
  t.ok(c.c('n1').shouldWake(), 'a majority dead: wake');
  c.c('n1').wake();
  c.tick(['n1'], 25);
  t.notOk(c.c('n1').quiesced, 'awake, it does not quiesce again while its majority looks dead');
  t.not(c.c('n1').role, 'leader', 'checkQuorum steps it down');
  t.equal(c.c('n1').leader, null, 'and it knows no leader: the group is seen without one');
  t.notOk(c.c('n1').shouldWake(), 'a replica that is not quiesced is never asked to wake');
  t.end();
});

t.test('a quiesced follower wakes by itself when its leader\'s node looks dead; without the signal it waits to be woken', (t) => {
  const dead = new Set<string>();
  const c = idleCluster((node) => !dead.has(node));
  t.notOk(c.c('n2').shouldWake());
  dead.add('n1');
  t.ok(c.c('n2').shouldWake(), 'its leader looks dead: wake');
  t.notOk(idleCluster().c('n2').shouldWake(), 'no peerAlive: only the driver wakes it');
  t.end();
});

t.test('a follower that missed the quiesce message wakes the group, and the leader keeps its term', (t) => {
  const c = new Cluster(ids, { quiesceAfterTicks: QUIESCE });
  c.campaign('n1');
  c.propose('n1', 'a');
  c.dropIf = (m) => m.kind === 'heartbeat' && m.quiesce === true && m.to === 'n3';
  c.tickAll(QUIESCE + 1);
  c.dropIf = undefined;
  t.ok(c.c('n2').quiesced);
  t.notOk(c.c('n3').quiesced, 'n3 never heard it');
  c.tickAll(60);
  t.same(c.leaders(), ['n1'], 'n1 still leads');
  t.equal(c.c('n1').term, 2, 'no disruption');
  t.equal(c.c('n3').leader, 'n1');
  c.tickAll(QUIESCE + 2);
  t.ok(ids.every((id) => c.c(id).quiesced), 'and the group settles quiet again');
  t.end();
});

t.test('a restarted follower rejoins a quiesced group without disrupting it', (t) => {
  const c = idleCluster();
  c.restart('n3');
  c.tickAll(60);
  t.same(c.leaders(), ['n1']);
  t.equal(c.c('n1').term, 2);
  t.equal(c.c('n3').leader, 'n1');
  t.end();
});

t.test('wake on a follower whose leader lives only pings it; the leader resumes heartbeats', (t) => {
  const c = idleCluster();
  c.c('n2').wake();
  c.stabilize();
  t.notOk(c.c('n1').quiesced, 'the leader woke');
  c.tickAll(QUIESCE + 3);
  t.same(c.leaders(), ['n1']);
  t.equal(c.c('n1').term, 2);
  t.ok(ids.every((id) => c.c(id).quiesced));
  t.end();
});
