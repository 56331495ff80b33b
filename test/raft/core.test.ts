// Scenario tests of each core feature, driven message by message through the harness.
import t from 'tap';
import { Cluster } from './harness.js';

const ids = ['n1', 'n2', 'n3'];

function elected(): Cluster {
  const c = new Cluster(ids);
  c.campaign('n1');
  return c;
}

t.test('a campaign elects a leader that commits its noop and replicates proposals', (t) => {
  const c = elected();
  t.same(c.leaders(), ['n1']);
  t.equal(c.c('n1').term, 2);
  const index = c.propose('n1', 'a');
  for (const id of ids) {
    t.equal(c.c(id).log.committed, index, `${id} committed`);
    t.same(c.n(id).values, ['a'], `${id} applied`);
  }
  t.end();
});

t.test('randomised election timeouts: a follower campaigns after [election, 2*election) ticks', (t) => {
  const seen = new Set<number>();
  for (let seed = 1; seed <= 40; seed++) {
    const c = new Cluster(['solo', 'other'], { electionTicks: 10 }, seed);
    c.isolated.add('solo');
    let ticks = 0;
    while (c.c('solo').role === 'follower' && ticks < 100) {
      c.c('solo').tick();
      ticks++;
    }
    seen.add(ticks);
  }
  t.ok([...seen].every((n) => n >= 10 && n < 20), `timeouts within [10, 20): ${[...seen].sort((a, b) => a - b).join(',')}`);
  t.ok(seen.size >= 5, 'and spread out');
  const c = new Cluster(ids, { electionTicks: 10 });
  c.tickAll(25);
  t.equal(c.leaders().length, 1, 'a cluster left alone elects exactly one leader');
  t.end();
});

t.test('pre-vote: a partitioned node does not raise its term or disrupt the leader on return', (t) => {
  const c = elected();
  c.isolated.add('n3');
  c.tick(['n3'], 100);
  t.equal(c.c('n3').term, 2, 'isolated node never raised its term');
  t.equal(c.c('n3').role, 'preCandidate');
  c.isolated.delete('n3');
  c.tick(['n1'], 3); // heartbeats reach n3 again
  t.same(c.leaders(), ['n1']);
  t.equal(c.c('n1').term, 2, 'leader kept its term');
  t.equal(c.c('n3').leader, 'n1');
  t.end();
});

t.test('without pre-vote the returning node disrupts the leader (the contrast)', (t) => {
  const c = new Cluster(ids, { preVote: false, checkQuorum: false });
  c.campaign('n1');
  c.isolated.add('n3');
  c.tick(['n3'], 100);
  t.ok(c.c('n3').term > 2, 'isolated node inflated its term');
  c.isolated.delete('n3');
  c.tick(ids, 30);
  t.ok(c.c('n1').term > 2, 'leader was forced into a new term');
  t.end();
});

t.test('check-quorum: a leader that cannot hear a majority steps down', (t) => {
  const c = elected();
  c.isolated.add('n1');
  c.tick(['n1'], 10);
  t.equal(c.c('n1').role, 'leader', 'still leader within the first round');
  c.tick(['n1'], 10);
  t.equal(c.c('n1').role, 'follower', 'stepped down after an election timeout without a quorum');
  t.end();
});

t.test('check-quorum lease: followers ignore a vote request while they hear the leader', (t) => {
  const c = new Cluster(ids, { preVote: false });
  c.campaign('n1');
  c.c('n3').becomeFollower(c.c('n3').term, null); // n3 forgets the leader and campaigns
  c.campaign('n3');
  t.same(c.leaders(), ['n1']);
  t.end();
});

t.test('forgetLeader: followers that lost the leader elect a new one within half an election timeout', (t) => {
  const spans = new Set<number>();
  for (let seed = 1; seed <= 30; seed++) {
    const c = new Cluster(ids, { electionTicks: 10 }, seed);
    c.campaign('n1');
    c.isolated.add('n1');
    c.tick(['n2', 'n3'], 2); // a missed heartbeat, as the driver requires
    c.c('n2').forgetLeader();
    c.c('n3').forgetLeader();
    t.equal(c.c('n2').leader, null);
    let ticks = 0;
    while (c.leaders().filter((id) => id !== 'n1').length === 0 && ticks < 40) {
      // One at a time, each round delivered before the next tick: nodes' clocks are not in
      // step, and a round trip is much shorter than a tick.
      c.tick(['n2']);
      c.tick(['n3']);
      ticks++;
    }
    spans.add(ticks);
    t.ok(ticks >= 1 && ticks <= 5, `seed ${seed}: a new leader after ${ticks} ticks (the timeout alone: 8 to 17 more)`);
    t.ok(c.c('n1').term < c.c(c.leaders().find((id) => id !== 'n1')!).term, 'in a later term');
  }
  t.ok(spans.size >= 3, `campaigns are spread out: ${[...spans].sort((a, b) => a - b).join(',')}`);
  t.end();
});

t.test('forgetLeader: one follower alone cannot unseat a leader the others still hear', (t) => {
  const c = elected();
  c.c('n3').forgetLeader();
  c.tick(['n3'], 6); // it campaigns: a pre-vote n2 ignores while in the lease
  t.same(c.leaders(), ['n1']);
  t.equal(c.c('n1').term, 2, 'no new term');
  c.tick(['n1'], 1);
  t.equal(c.c('n3').leader, 'n1', "the leader's next heartbeat restores it");
  t.equal(c.c('n3').role, 'follower');
  t.end();
});

t.test('forgetLeader: a heartbeat before the early campaign restores a whole election timeout', (t) => {
  for (let seed = 1; seed <= 10; seed++) {
    const c = new Cluster(ids, { electionTicks: 10 }, seed);
    c.campaign('n1');
    c.c('n3').forgetLeader();
    c.tick(['n1'], 1); // the leader was alive after all
    t.equal(c.c('n3').leader, 'n1');
    c.isolated.add('n3');
    let ticks = 0;
    while (c.c('n3').role === 'follower' && ticks < 40) {
      c.tick(['n3']);
      ticks++;
    }
    t.ok(ticks >= 10, `seed ${seed}: cut off afterwards, it waits a whole timeout (${ticks} ticks)`);
  }
  t.end();
});

t.test('forgetLeader: a no-op on a leader and on a follower with no leader', (t) => {
  const c = elected();
  c.c('n1').forgetLeader();
  t.equal(c.c('n1').role, 'leader');
  const fresh = new Cluster(ids);
  fresh.c('n2').forgetLeader();
  let ticks = 0;
  while (fresh.c('n2').role === 'follower' && ticks < 40) {
    fresh.c('n2').tick();
    ticks++;
  }
  t.ok(ticks >= 10, `its election timeout is left as it was (${ticks} ticks)`);
  t.end();
});

t.test('ReadIndex: the read state appears only after a quorum confirms leadership', (t) => {
  const c = elected();
  c.propose('n1', 'a');
  const commit = c.c('n1').log.committed;
  c.c('n1').readIndex('r1');
  c.drain();
  t.same(c.n('n1').readStates, [], 'nothing before the heartbeat round');
  c.deliverOnce(); // heartbeats out
  t.same(c.n('n1').readStates, [], 'nothing before the acknowledgements');
  c.deliverOnce(); // acknowledgements back
  t.same(c.n('n1').readStates, [{ ctx: 'r1', index: commit }]);
  t.end();
});

t.test('ReadIndex: an isolated leader never confirms a read; a follower read goes via the leader', (t) => {
  const c = elected();
  c.isolated.add('n1');
  c.c('n1').readIndex('lost');
  c.stabilize();
  t.same(c.n('n1').readStates, []);
  c.isolated.delete('n1');
  t.ok(c.c('n2').readIndex('f1'));
  c.stabilize();
  t.same(c.n('n2').readStates, [{ ctx: 'f1', index: c.c('n1').log.committed }]);
  t.end();
});

t.test('ReadIndex: a leader in a minority partition confirms nothing, even with some acks', (t) => {
  const five = ['n1', 'n2', 'n3', 'n4', 'n5'];
  const c = new Cluster(five);
  c.campaign('n1');
  const minority = new Set(['n1', 'n2']);
  c.dropIf = (m) => minority.has(m.from) !== minority.has(m.to);
  c.c('n1').readIndex('stale?');
  c.stabilize();
  c.tick(['n1'], 3);
  t.same(c.n('n1').readStates, [], 'one follower ack is not a quorum of five');
  c.dropIf = undefined;
  c.tick(['n1'], 1);
  t.equal(c.n('n1').readStates.length, 1, 'confirmed once a quorum answers');
  t.end();
});

t.test('ReadIndex: a new leader defers reads until it commits an entry of its term', (t) => {
  const c = new Cluster(ids, { checkQuorum: false });
  c.campaign('n1');
  c.isolated.add('n1');
  c.tick(['n2', 'n3'], 40);
  const leader = c.leaders().find((id) => id !== 'n1')!;
  t.ok(leader);
  const other = leader === 'n2' ? 'n3' : 'n2';
  // Stop the new leader's noop from being acknowledged, so its commit is from an older term.
  c.c(leader).becomeFollower(c.c(leader).term + 1, null);
  c.isolated.add(other);
  c.c(leader).campaign();
  c.isolated.delete(other);
  c.dropIf = (m) => m.kind === 'appendResp';
  c.stabilize();
  if (c.c(leader).role !== 'leader') {
    c.dropIf = undefined;
    c.campaign(leader);
  }
  t.equal(c.c(leader).role, 'leader');
  c.c(leader).readIndex('early');
  c.stabilize();
  if (c.c(leader).log.term(c.c(leader).log.committed) !== c.c(leader).term) {
    t.same(c.n(leader).readStates, [], 'deferred while nothing of this term is committed');
  }
  c.dropIf = undefined;
  c.tick([leader], 2);
  t.equal(c.n(leader).readStates.length, 1);
  t.equal(c.n(leader).readStates[0]!.index, c.c(leader).log.committed);
  t.end();
});

t.test('commit only by counting entries of the current term (Raft figure 8)', (t) => {
  const c = new Cluster(ids, { preVote: false, checkQuorum: false, appendEntriesMax: 1 });
  c.campaign('n1'); // term 2
  c.isolated.add('n1');
  const x = c.c('n1').propose(new TextEncoder().encode('x'));
  if (!x.ok) throw new Error('propose failed');
  const k = x.index;
  c.stabilize();
  // n2 leads term 3 with n3's vote, but its noop (at k, term 3) never leaves n2.
  c.dropIf = (m) => m.from === 'n2' && m.kind === 'append';
  c.campaign('n2');
  t.equal(c.c('n2').role, 'leader');
  // n1 returns; n2 is cut off. n1's log (x at k, term 2) is ahead of n3's, so n1 wins term 4.
  c.dropIf = undefined;
  c.isolated.delete('n1');
  c.isolated.add('n2');
  for (let i = 0; i < 3 && (c.c('n1').role !== 'leader' || c.c('n1').term < 4); i++) {
    c.c('n1').becomeFollower(c.c('n1').term, null);
    c.c('n1').campaign();
    c.drain();
    c.deliverOnce((m) => m.kind === 'vote' || m.kind === 'voteResp');
    c.deliverOnce((m) => m.kind === 'vote' || m.kind === 'voteResp');
  }
  t.equal(c.c('n1').role, 'leader');
  t.equal(c.c('n1').term, 4);
  let sawOldTermMajority = false;
  for (let i = 0; i < 50 && c.queue.length > 0; i++) {
    c.deliverOnce();
    const leader = c.c('n1');
    if (leader.progress.get('n3')!.match === k && leader.log.committed < k) sawOldTermMajority = true;
    t.not(leader.log.committed, k, 'never commits x by counting replicas of an old-term entry');
  }
  t.ok(sawOldTermMajority, 'x (term 2) was on a majority before anything of term 4 was');
  t.equal(c.c('n1').log.committed, k + 1, 'x commits together with the noop of term 4');
  t.same(c.n('n3').values, ['x']);
  t.end();
});

t.test('snapshot catch-up of a far-behind follower', (t) => {
  const c = elected();
  c.isolated.add('n3');
  for (let i = 0; i < 50; i++) c.propose('n1', `v${i}`);
  c.compact('n1');
  c.compact('n2');
  t.ok(c.c('n1').log.firstIndex() > c.c('n3').log.lastIndex() + 1, 'the entries n3 needs are compacted');
  c.isolated.delete('n3');
  c.tick(['n1'], 3);
  t.equal(c.c('n3').log.committed, c.c('n1').log.committed);
  t.same(c.n('n3').values, c.n('n1').values);
  t.equal(c.n('n3').storage.snapshot().meta.index, c.n('n1').storage.snapshot().meta.index, 'n3 installed the snapshot');
  const index = c.propose('n1', 'after');
  t.equal(c.c('n3').log.committed, index);
  t.same(c.n('n3').values.at(-1), 'after');
  t.end();
});

t.test('add a learner -> it catches up without voting -> promote it', (t) => {
  const c = elected();
  for (let i = 0; i < 5; i++) c.propose('n1', `v${i}`);
  c.compact('n1', 2);
  c.addEmptyNode('n4');
  const r = c.c('n1').proposeConfChange({ type: 'addLearner', node: 'n4' });
  t.ok(r.ok);
  c.stabilize();
  c.tick(['n1'], 3);
  t.same(c.c('n1').confState(), { voters: ['n1', 'n2', 'n3'], learners: ['n4'] });
  t.same(c.n('n4').values, c.n('n1').values, 'learner caught up');
  t.same(c.c('n4').confState(), { voters: ['n1', 'n2', 'n3'], learners: ['n4'] });
  c.tick(['n4'], 50);
  t.equal(c.c('n4').role, 'follower', 'a learner never campaigns');
  const p = c.c('n1').proposeConfChange({ type: 'addVoter', node: 'n4' });
  t.ok(p.ok);
  c.stabilize();
  t.same(c.c('n1').confState(), { voters: ['n1', 'n2', 'n3', 'n4'], learners: [] });
  c.tick(['n1'], 2);
  t.same(c.c('n4').confState(), { voters: ['n1', 'n2', 'n3', 'n4'], learners: [] });
  // With 4 voters a commit needs 3: n4 now counts.
  c.isolated.add('n2');
  c.isolated.add('n3');
  const stuck = c.c('n1').propose(new TextEncoder().encode('needs-3'));
  c.stabilize();
  t.ok(stuck.ok && c.c('n1').log.committed < stuck.index, 'two of four is not a quorum');
  c.isolated.delete('n3');
  c.tick(['n1'], 2);
  t.ok(stuck.ok && c.c('n1').log.committed >= stuck.index);
  t.end();
});

t.test('a joiner with an empty log learns the membership from the log itself (no snapshot)', (t) => {
  const c = elected();
  c.propose('n1', 'a');
  c.addEmptyNode('n4');
  t.ok(c.c('n1').proposeConfChange({ type: 'addLearner', node: 'n4' }).ok);
  c.stabilize();
  c.tick(['n1'], 3);
  t.equal(c.n('n4').storage.snapshot().meta.index, 0, 'no snapshot was needed');
  t.same(c.c('n4').confState(), { voters: ['n1', 'n2', 'n3'], learners: ['n4'] });
  t.same(c.n('n4').values, ['a']);
  t.end();
});

// Raft's lost-disk hazard, met when a node joins again under its name on an empty data
// directory while a group still lists its old self: entries committed on n1 and n2 alone are
// lost if the new n2 votes n3 (which lacks them) in. Before the fix n3 won that election, and
// the leader never caught the new n2 up either (its probes stopped at the old match, which
// the empty log rejects for ever).
t.test('a voter back with an empty log votes for no one until caught up, and its leader catches it up from scratch', (t) => {
  const c = elected();
  c.propose('n1', 'a');
  c.isolated.add('n3');
  c.propose('n1', 'b');
  c.propose('n1', 'c');
  t.same(c.n('n2').values, ['a', 'b', 'c'], 'b and c committed on n1 and n2 alone');
  c.addEmptyNode('n2');
  t.ok(c.c('n2').catchingUp);
  // The leader is cut off before it hears from the new n2; n3 (which lacks b and c) campaigns.
  c.isolated.add('n1');
  c.isolated.delete('n3');
  c.tick(['n2', 'n3'], 100);
  t.same(c.leaders(), [], 'no leader: the empty replica votes for no one (nor campaigns)');
  // The leader is back: an idle leader learns from a heartbeat's answer, and starts it over.
  c.isolated.delete('n1');
  c.tickAll(30);
  t.equal(c.leaders()[0], 'n1', 'only n1 (with b and c) can win');
  t.same(c.n('n2').values, ['a', 'b', 'c'], 'the new n2 caught up from scratch');
  t.notOk(c.c('n2').catchingUp, 'and votes again');
  // Now n2 and n3 elect without n1, and keep b and c.
  c.isolated.add('n1');
  for (let i = 0; i < 100 && c.leaders().length === 0; i++) c.tick(['n2', 'n3']);
  const leader = c.leaders()[0]!;
  t.ok(leader === 'n2' || leader === 'n3', `${leader} leads without n1`);
  c.propose(leader, 'd');
  t.same(c.n('n3').values, ['a', 'b', 'c', 'd']);
  t.same(c.n('n2').values, ['a', 'b', 'c', 'd']);
  t.end();
});

// The same hazard when the leader changed after the old n2 died (a new term: its progress for
// n2 starts at 0, so nothing looks lost): partly caught up, the new n2 must still not vote.
t.test('a replica that started empty votes only once it holds what the first leader it heard showed it', (t) => {
  const c = new Cluster(['n1', 'n2', 'n3'], { appendEntriesMax: 1 });
  c.campaign('n1');
  c.propose('n1', 'a');
  c.isolated.add('n3');
  for (const v of ['b', 'c', 'd']) c.propose('n1', v);
  c.addEmptyNode('n2');
  // n1 steps down (check-quorum: it hears no one), then is elected again in a new term (n3
  // votes for it: n1's log is ahead).
  c.isolated.add('n1');
  c.tick(['n1', 'n3'], 30);
  t.not(c.c('n1').role, 'leader');
  c.isolated.delete('n1');
  c.isolated.delete('n3');
  c.isolated.add('n2');
  c.campaign('n1');
  t.equal(c.leaders()[0], 'n1');
  t.equal(c.c('n1').progress.get('n2')?.match, 0, "the new term's leader knows nothing of n2");
  // n3 is behind by design: keep it from catching up while n2 receives its first entries.
  c.isolated.delete('n2');
  c.isolated.add('n3');
  c.dropIf = (m) => m.kind === 'append' && m.to === 'n2' && c.c('n2').log.lastIndex() >= 3;
  c.tick(['n1', 'n2'], 20);
  const partial = c.c('n2').log.lastIndex();
  t.ok(partial > 0 && partial < c.c('n1').log.lastIndex(), `n2 holds part of the log (${partial} of ${c.c('n1').log.lastIndex()})`);
  t.ok(c.c('n2').catchingUp, 'and is still catching up');
  // n1 dies; n3 (without b, c, d) campaigns; the partly filled n2 must not elect it.
  c.dropIf = undefined;
  c.isolated.add('n1');
  c.isolated.delete('n3');
  c.tick(['n2', 'n3'], 100);
  t.same(c.leaders(), [], 'no leader without the entries n1 alone holds');
  t.end();
});

t.test('a replica catching up under constant writes reaches its target and votes', (t) => {
  const c = new Cluster(['n1', 'n2', 'n3'], { appendEntriesMax: 2 });
  c.campaign('n1');
  for (let i = 0; i < 20; i++) c.propose('n1', `w${i}`);
  c.addEmptyNode('n2');
  // A write every tick while n2 catches up 2 entries an append.
  for (let i = 0; i < 60 && c.c('n2').catchingUp; i++) {
    c.c('n1').propose(new TextEncoder().encode(`x${i}`));
    c.tickAll(1);
  }
  t.notOk(c.c('n2').catchingUp, 'caught up while the writes went on');
  t.end();
});

// The hole the catch-up rule left (docs/raft.md): the first leader a new replica hears may be
// a deposed one. n3 took over from n1 and committed b with the old n2; n2 lost its disk; n1,
// cut off from n3 and still leader in its old term, caught the new n2 up on its own shorter
// log, then committed c at b's index with n2's acknowledgement: two entries committed at one
// index. A fresh replica's acknowledgements count for no quorum until a vouch for it commits.
t.test('a deposed leader cannot commit with a replica that lost its disk', (t) => {
  const c = elected();
  c.propose('n1', 'a');
  // n1 is cut off; n2 and n3 elect one of them and commit b (n1 never ticks: it still leads term 2).
  c.isolated.add('n1');
  for (let i = 0; i < 100 && c.leaders().length === 0; i++) c.tick(['n2', 'n3']);
  const successor = c.leaders()[0]!;
  const lost = successor === 'n2' ? 'n3' : 'n2';
  t.ok(successor === 'n2' || successor === 'n3', `${successor} took over`);
  const bIndex = c.propose(successor, 'b');
  t.same(c.n(lost).values, ['a', 'b'], `b committed on ${successor} and the old ${lost}`);
  // The other loses its disk; the successor is cut off, n1 is back.
  c.addEmptyNode(lost);
  c.isolated.add(successor);
  c.isolated.delete('n1');
  t.equal(c.c('n1').role, 'leader', 'n1 still believes it leads term 2');
  c.tick(['n1', lost], 3);
  t.equal(c.c(lost).log.lastIndex(), c.c('n1').log.lastIndex(), `n1 caught the new ${lost} up on its own log`);
  const r = c.c('n1').propose(new TextEncoder().encode('c'));
  t.ok(r.ok);
  c.tick(['n1', lost], 3);
  t.ok(c.c('n1').log.committed < (r.ok ? r.index : 0), `c is not committed: ${lost} counts for nothing`);
  t.same(c.n('n1').values, ['a'], 'n1 applied nothing new');
  t.ok(c.c(lost).catchingUp, `${lost} is not vouched for (n1 cannot commit the vouch alone)`);
  c.tick(['n1', lost], 40);
  t.not(c.c('n1').role, 'leader', `check-quorum: n1 steps down, ${lost} does not count`);
  t.same(c.leaders(), [], `and no one wins: ${lost} votes for no one`);
  // The successor is back: the group goes on with b, and vouches for the new replica.
  c.isolated.delete(successor);
  c.tickAll(60);
  t.equal(c.leaders().length, 1);
  t.notOk(c.c(lost).catchingUp, `${lost} vouched for`);
  for (const id of ids) t.same(c.n(id).values.slice(0, 2), ['a', 'b'], `${id} keeps b at index ${bIndex}`);
  t.end();
});

t.test('a vouch lost under a snapshot is proposed again; two voters count a fresh one', (t) => {
  const c = elected();
  for (const v of ['a', 'b', 'c']) c.propose('n1', v);
  c.addEmptyNode('n2');
  // The vouch reaches n2 inside a snapshot only: n1 compacts past it before n2 holds it.
  c.dropIf = (m) => m.to === 'n2' && m.kind === 'append';
  c.tick(['n1'], 2);
  const vouch = c.c('n1').log.slice(1, c.c('n1').log.lastIndex() + 1)!.find((e) => e.kind === 'vouch');
  t.ok(vouch !== undefined && vouch.kind === 'vouch' && vouch.node === 'n2', 'n1 vouched for n2 at its first answer');
  c.propose('n1', 'd');
  c.compact('n1');
  c.dropIf = undefined;
  c.tickAll(10);
  t.notOk(c.c('n2').catchingUp, 'vouched for again after the snapshot');
  t.same(c.n('n2').values, ['a', 'b', 'c', 'd']);
  // Two voters: a fresh replica of the two counts (else nothing could vouch for it).
  const two = new Cluster(['n1', 'n2']);
  two.campaign('n1');
  two.propose('n1', 'a');
  two.addEmptyNode('n2');
  two.tickAll(5);
  t.notOk(two.c('n2').catchingUp, 'vouched for with its own acknowledgement');
  t.same(two.n('n2').values, ['a']);
  t.equal(two.propose('n1', 'b') > 0, true);
  t.same(two.n('n2').values, ['a', 'b']);
  t.end();
});

t.test('without vouching (a rolling upgrade) a fresh replica follows the catch-up rule', (t) => {
  const c = new Cluster(ids, { vouching: () => false });
  c.campaign('n1');
  c.propose('n1', 'a');
  c.addEmptyNode('n2');
  c.tickAll(5);
  t.notOk(c.c('n2').catchingUp, 'caught up: counts and votes again');
  t.notOk(c.c('n1').log.slice(1, c.c('n1').log.lastIndex() + 1)!.some((e) => e.kind === 'vouch'), 'and no vouch was proposed');
  t.end();
});

// After a leader removed itself, voters that had not seen the removal committed count the
// removed node (its log longer than theirs) and, with another voter lost, elect no one
// (the simulation with lost disks: SIM_SEED=472991558, 1921035788). Election messages carry
// the sender's commit index and its term: a receiver holding that entry commits up to it.
t.test('election messages carry the commit: a voter holding the same entry there commits up to it', (t) => {
  const c = elected();
  c.propose('n1', 'a');
  // n3 receives b but never hears that it committed.
  c.dropIf = (m) => m.to === 'n3' && (m.kind === 'heartbeat' || (m.kind === 'append' && m.entries.length === 0));
  const b = c.propose('n1', 'b');
  t.equal(c.c('n3').log.lastIndex(), b);
  t.ok(c.c('n3').log.committed < b, 'n3 holds b, not known committed');
  const term = c.c('n1').term;
  const ask = (commitTerm: number) =>
    c.c('n3').step({ group: 'g', from: 'n2', to: 'n3', term: term + 1, kind: 'preVote', lastIndex: b, lastTerm: term, force: true, commit: b, commitTerm });
  ask(term - 1);
  t.ok(c.c('n3').log.committed < b, 'another entry there (another term): nothing learned');
  ask(term);
  t.equal(c.c('n3').log.committed, b, 'the same entry: committed');
  t.end();
});

t.test('one membership change at a time', (t) => {
  const c = elected();
  c.addEmptyNode('n4');
  c.isolated.add('n2');
  c.isolated.add('n3');
  t.ok(c.c('n1').proposeConfChange({ type: 'addLearner', node: 'n4' }).ok);
  const second = c.c('n1').proposeConfChange({ type: 'removeNode', node: 'n3' });
  t.same(second, { ok: false, reason: 'conf_pending', leader: 'n1' });
  t.end();
});

t.test('remove the leader itself: it steps down and the rest elect a new leader', (t) => {
  const c = elected();
  c.propose('n1', 'a');
  t.ok(c.c('n1').proposeConfChange({ type: 'removeNode', node: 'n1' }).ok);
  c.stabilize();
  t.equal(c.c('n1').role, 'follower');
  t.notOk(c.c('n1').isPromotable());
  c.tick(['n1', 'n2', 'n3'], 40);
  const leaders = c.leaders();
  t.equal(leaders.length, 1);
  t.not(leaders[0], 'n1');
  const leader = leaders[0]!;
  t.same(c.c(leader).confState(), { voters: ['n2', 'n3'], learners: [] });
  c.propose(leader, 'b');
  t.same(c.n('n2').values, ['a', 'b']);
  t.same(c.n('n3').values, ['a', 'b']);
  t.end();
});

t.test('leadership transfer via TimeoutNow', (t) => {
  const c = elected();
  c.propose('n1', 'a');
  c.isolated.add('n3');
  c.propose('n1', 'b'); // n3 is behind: the transfer must catch it up first
  c.isolated.delete('n3');
  t.ok(c.c('n1').transferLeadership('n3'));
  t.same(c.c('n1').propose(new Uint8Array([1])), { ok: false, reason: 'transferring', leader: 'n1' });
  c.stabilize();
  t.same(c.leaders(), ['n3']);
  t.equal(c.c('n3').term, 3);
  t.same(c.n('n3').values, ['a', 'b']);
  c.propose('n3', 'c');
  t.same(c.n('n1').values, ['a', 'b', 'c']);
  t.end();
});

t.test('restart recovers the exact persisted state', (t) => {
  const c = elected();
  for (let i = 0; i < 10; i++) c.propose('n1', `v${i}`);
  c.compact('n2', 3);
  const before = { hs: c.c('n2').hardState(), last: c.c('n2').log.lastIndex(), conf: c.c('n2').confState() };
  const node = c.restart('n2');
  t.same(node.core.hardState(), before.hs);
  t.equal(node.core.log.lastIndex(), before.last);
  t.same(node.core.confState(), before.conf);
  c.stabilize();
  t.same(node.values, c.n('n1').values, 'replays committed entries after the snapshot');
  t.end();
});

t.test('messages carry the group id; a foreign group is refused', (t) => {
  const c = elected();
  c.c('n1').propose(new Uint8Array([1]));
  const rd = c.c('n1').ready()!;
  const sent = [...rd.earlyMessages, ...rd.messages];
  t.ok(sent.length > 0);
  t.ok(sent.every((m) => m.group === 'g'));
  c.c('n1').advance(rd);
  t.throws(() => c.c('n2').step({ ...sent[0]!, group: 'other' }));
  t.end();
});

t.test('a leader sends its appends before persisting them and counts itself only after (thesis §10.2.1)', (t) => {
  const c = elected();
  const leader = c.c('n1');
  const r = leader.propose(new Uint8Array([7]));
  t.ok(r.ok);
  const index = r.ok ? r.index : 0;
  const rd = leader.ready()!;
  t.same(rd.entries.map((e) => e.index), [index], 'the entry is to be persisted');
  t.same(rd.earlyMessages.map((m) => `${m.kind}>${m.to}`).sort(), ['append>n2', 'append>n3'], 'its appends may go out at once');
  t.notOk(rd.messages.some((m) => m.kind === 'append'), 'no append waits for the fsync');
  // n2 persists and acknowledges while the leader's own write is still running.
  c.n('n2').core.step(rd.earlyMessages.find((m) => m.to === 'n2')!);
  const rd2 = c.c('n2').ready()!;
  c.n('n2').storage.append(rd2.entries);
  c.c('n2').advance(rd2);
  for (const m of rd2.messages) leader.step(m);
  t.equal(leader.progress.get('n1')!.match, index - 1, 'the leader has not counted its unpersisted entry');
  t.equal(leader.log.committed, index - 1, 'one follower alone is not a majority of three');
  c.n('n1').storage.append(rd.entries);
  leader.advance(rd);
  t.equal(leader.progress.get('n1')!.match, index, 'persisted: the leader counts itself');
  t.equal(leader.log.committed, index, 'and commits with n2');
  t.end();
});

t.test('a majority of followers commits an entry the leader has not persisted yet', (t) => {
  const c = elected();
  const leader = c.c('n1');
  const r = leader.propose(new Uint8Array([8]));
  const index = r.ok ? r.index : 0;
  const rd = leader.ready()!;
  for (const id of ['n2', 'n3']) {
    c.c(id).step(rd.earlyMessages.find((m) => m.to === id)!);
    const frd = c.c(id).ready()!;
    c.n(id).storage.append(frd.entries);
    c.c(id).advance(frd);
    for (const m of frd.messages) leader.step(m);
  }
  t.equal(leader.log.committed, index, 'n2 and n3 hold it durably: committed');
  c.n('n1').storage.append(rd.entries);
  leader.advance(rd);
  const next = leader.ready()!;
  t.same(next.committed.map((e) => e.index), [index], 'applied only after the leader persisted it (the next Ready)');
  leader.advance(next);
  t.end();
});

t.test('a node elected alone in one step sends nothing of its new term before persisting it', (t) => {
  const c = new Cluster(['solo']);
  c.addEmptyNode('l1');
  c.campaign('solo');
  c.propose('solo', 'x');
  t.ok(c.c('solo').proposeConfChange({ type: 'addLearner', node: 'l1' }).ok);
  c.stabilize();
  t.same(c.n('l1').values, ['x'], 'the learner caught up');
  c.c('solo').becomeFollower(c.c('solo').term, null);
  c.c('solo').campaign();
  const rd = c.c('solo').ready()!;
  t.equal(rd.softState.role, 'leader', 'elected in the same step it campaigned');
  t.ok(rd.hardState !== undefined && rd.mustSync, 'its new term is in this Ready');
  t.same(rd.earlyMessages, [], 'so its appends wait for the fsync');
  t.ok(rd.messages.some((m) => m.kind === 'append' && m.to === 'l1'));
  c.c('solo').advance(rd);
  t.end();
});
