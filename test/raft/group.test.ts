// The driver over real RocksDB: three in-process groups wired by an in-memory router.
import t, { type Test } from 'tap';
import { Store } from '../../src/storage/db.js';
import { RocksLog } from '../../src/raft/rocks-log.js';
import { mathRand, type Rand } from '../../src/core/rand.js';
import { RaftGroup, type StateMachine } from '../../src/raft/group.js';
import { RaftTicker } from '../../src/raft/ticker.js';
import type { Entry, Message } from '../../src/raft/types.js';
import { isFirkinError } from '../../src/core/errors.js';
import { tempDir } from '../support/node.js';
import { waitFor } from '../support/wait.js';

const utf8 = new TextEncoder();
const utf8d = new TextDecoder();
const ids = ['a', 'b', 'c'];

class ListFsm implements StateMachine {
  values: string[] = [];
  apply(e: Entry): unknown {
    if (e.kind !== 'normal') return undefined;
    this.values.push(utf8d.decode(e.data));
    return this.values.length;
  }
  snapshot(): Uint8Array {
    return utf8.encode(JSON.stringify(this.values));
  }
  restore(data: Uint8Array): void {
    this.values = JSON.parse(utf8d.decode(data)) as string[];
  }
}

interface Member {
  id: string;
  dir: string;
  store: Store;
  log: RocksLog;
  fsm: ListFsm;
  group: RaftGroup;
}

async function startMember(id: string, dir: string, route: (ms: readonly Message[]) => void, violations: string[]): Promise<Member> {
  const store = await Store.open(dir);
  const log = await RocksLog.open(store, 'meta', { voters: ids, learners: [] });
  const fsm = new ListFsm();
  const group = new RaftGroup({
    id, group: 'meta', log, fsm, rand: mathRand, ticker: new RaftTicker(10), electionTicks: 10, heartbeatTicks: 1,
    proposalTimeoutMs: 3_000, snapshotEveryEntries: 20, retainEntries: 2,
    send: (ms) => {
      // Persist-before-send: whatever a message depends on is already in the durable mirror.
      for (const m of ms) {
        if (m.kind === 'voteResp' && !m.reject && log.mem.hardState.vote !== m.to) violations.push(`${id} granted a vote before persisting it`);
        if (m.term > log.mem.hardState.term && m.kind !== 'preVote' && m.kind !== 'preVoteResp') violations.push(`${id} sent term ${m.term} before persisting it`);
      }
      route(ms);
    },
  });
  await group.start();
  return { id, dir, store, log, fsm, group };
}

t.test('three groups elect, replicate, snapshot, restart and recover', async (t) => {
  const members = new Map<string, Member>();
  const violations: string[] = [];
  const route = (ms: readonly Message[]) => {
    for (const m of ms) setImmediate(() => members.get(m.to)?.group.step(m));
  };
  for (const id of ids) members.set(id, await startMember(id, tempDir(), route, violations));
  t.teardown(async () => {
    for (const m of members.values()) {
      await m.group.close();
      await m.store.close();
    }
  });
  const leader = () => [...members.values()].find((m) => m.group.core.role === 'leader');
  const l = await waitFor(leader, { timeoutMs: 10_000, what: 'a leader' });
  const follower = [...members.values()].find((m) => m !== l)!;
  // A new leader is known to a follower only once its first append arrives.
  await waitFor(() => follower.group.core.leader === l.id, { timeoutMs: 10_000, what: 'the follower to learn the leader' });
  const err = await follower.group.propose(utf8.encode('x')).catch((e: unknown) => e);
  t.ok(isFirkinError(err) && err.code === 'not_leader', 'a follower refuses proposals');
  t.same(isFirkinError(err) ? err.details : undefined, { leader: l.id });

  const results = await Promise.all(Array.from({ length: 50 }, (_, i) => l.group.propose(utf8.encode(`v${i}`))));
  t.equal(results.length, 50);
  await l.group.readBarrier();
  t.equal(l.fsm.values.length, 50);
  await follower.group.readBarrier();
  t.equal(follower.fsm.values.length, 50, 'a read barrier on a follower waits until it applied the leader commit');
  t.ok(l.log.mem.snapshot().meta.index > 0, 'the leader took a snapshot and compacted');

  // Restart a follower from its RocksDB: exact state back, then it catches up.
  const before = { hs: follower.log.mem.hardState, last: follower.log.mem.lastIndex() };
  await follower.group.close();
  await follower.store.close();
  members.delete(follower.id);
  for (let i = 0; i < 30; i++) await l.group.propose(utf8.encode(`w${i}`));
  const back = await startMember(follower.id, follower.dir, route, violations);
  members.set(follower.id, back);
  t.ok(back.log.mem.hardState.term >= before.hs.term && back.log.mem.lastIndex() >= before.last, 'durable state survived the restart');
  await waitFor(() => back.fsm.values.length === 80, { timeoutMs: 10_000, what: 'restarted follower to catch up' });
  t.same(back.fsm.values, l.fsm.values);
  t.same(violations, []);
});

t.test('independent groups share a node, a store and the message stream', async (t) => {
  const groupsOf = new Map<string, Map<string, RaftGroup>>();
  const fsms = new Map<string, ListFsm>();
  const stores: Store[] = [];
  const route = (ms: readonly Message[]) => {
    for (const m of ms) setImmediate(() => groupsOf.get(m.to)?.get(m.group)?.step(m));
  };
  for (const id of ids) {
    const store = await Store.open(tempDir());
    stores.push(store);
    const mine = new Map<string, RaftGroup>();
    for (const g of ['g1', 'g2']) {
      const log = await RocksLog.open(store, g, { voters: ids, learners: [] });
      const fsm = new ListFsm();
      fsms.set(`${id}/${g}`, fsm);
      const group = new RaftGroup({
        id, group: g, log, fsm, rand: mathRand, ticker: new RaftTicker(10), electionTicks: 10, heartbeatTicks: 1,
        proposalTimeoutMs: 3_000, snapshotEveryEntries: 1_000, retainEntries: 0, send: route,
      });
      mine.set(g, group);
      await group.start();
    }
    groupsOf.set(id, mine);
  }
  t.teardown(async () => {
    for (const mine of groupsOf.values()) for (const g of mine.values()) await g.close();
    for (const s of stores) await s.close();
  });
  for (const g of ['g1', 'g2']) {
    const leader = await waitFor(() => ids.map((id) => groupsOf.get(id)!.get(g)!).find((x) => x.core.role === 'leader'), { what: `${g} leader` });
    for (let i = 0; i < 5; i++) await leader.propose(utf8.encode(`${g}-${i}`));
  }
  await waitFor(() => ids.every((id) => fsms.get(`${id}/g1`)!.values.length === 5 && fsms.get(`${id}/g2`)!.values.length === 5), { what: 'both groups replicated' });
  for (const id of ids) {
    t.same(fsms.get(`${id}/g1`)!.values, ['g1-0', 'g1-1', 'g1-2', 'g1-3', 'g1-4']);
    t.same(fsms.get(`${id}/g2`)!.values, ['g2-0', 'g2-1', 'g2-2', 'g2-3', 'g2-4']);
  }
});

t.test('a state machine that keeps its applied index durably is not handed those entries again', async (t) => {
  const dir = tempDir();
  const applied: number[] = [];
  let durable = 0;
  const fsm: StateMachine = {
    apply: (e) => {
      applied.push(e.index);
      durable = e.index; // this state machine "persists" every entry with its index
      return e.index;
    },
    snapshot: () => new Uint8Array(0),
    restore: () => undefined,
  };
  const open = async () => {
    const store = await Store.open(dir);
    const log = await RocksLog.open(store, 'g', { voters: ['solo'], learners: [] });
    const group = new RaftGroup({
      id: 'solo', group: 'g', log, fsm, rand: mathRand, ticker: new RaftTicker(10), electionTicks: 10, heartbeatTicks: 1,
      proposalTimeoutMs: 3_000, snapshotEveryEntries: 1_000, retainEntries: 0, send: () => undefined, appliedIndex: () => durable,
    });
    await group.start();
    return { store, group };
  };
  let node = await open();
  await waitFor(() => node.group.core.role === 'leader', { what: 'the single voter to lead' });
  for (let i = 0; i < 10; i++) await node.group.propose(utf8.encode(`v${i}`));
  const before = durable;
  await node.group.close();
  await node.store.close();
  applied.length = 0;
  node = await open();
  t.teardown(async () => {
    await node.group.close();
    await node.store.close();
  });
  await waitFor(() => node.group.core.role === 'leader', { what: 'leader again' });
  const index = await node.group.propose(utf8.encode('after'));
  t.ok(applied.every((i) => i > before), `nothing at or below the durable index ${before} was applied again (${applied.join(',')})`);
  t.ok(applied.includes(index as number), 'the new entry was applied');
});

t.test('a state machine that throws stops its group, which says so once (onFailure) and takes no more messages', async (t) => {
  const dir = tempDir();
  const fsm: StateMachine = {
    apply: (e) => {
      if (e.kind === 'normal' && utf8d.decode(e.data) === 'poison') throw new Error('cannot apply poison');
      return e.index;
    },
    snapshot: () => new Uint8Array(0),
    restore: () => undefined,
  };
  const store = await Store.open(dir);
  const log = await RocksLog.open(store, 'g', { voters: ['solo'], learners: [] });
  const failures: string[] = [];
  const group = new RaftGroup({
    id: 'solo', group: 'g', log, fsm, rand: mathRand, ticker: new RaftTicker(10), electionTicks: 10, heartbeatTicks: 1,
    proposalTimeoutMs: 1_000, snapshotEveryEntries: 1_000, retainEntries: 0, send: () => undefined,
    onFailure: (err) => failures.push(err.message),
  });
  t.teardown(async () => {
    await group.close();
    await store.close();
  });
  await group.start();
  await waitFor(() => group.core.role === 'leader', { what: 'the single voter to lead' });
  t.type(await group.propose(utf8.encode('fine')), 'number', 'an entry applies');
  await t.rejects(group.propose(utf8.encode('poison')), 'the poisoned entry never answers');
  t.same(failures, ['cannot apply poison'], 'the failure was reported once, with its cause');
  t.equal(group.failure?.message, 'cannot apply poison', 'and kept for /health');
  const term = group.core.term;
  group.step({ kind: 'heartbeat', group: 'g', from: 'other', to: 'solo', term: term + 5, commit: 0, readSeq: 0 } as Message);
  t.equal(group.core.term, term, 'a stopped group steps nothing more');
});

t.test('snapshots do not compact the log past the floor a reader still needs; without one they do', async (t) => {
  const dir = tempDir();
  const store = await Store.open(dir);
  t.teardown(() => store.close());
  let floor: number | undefined = 3;
  const log = await RocksLog.open(store, 'f', { voters: ['solo'], learners: [] });
  const group = new RaftGroup({
    id: 'solo', group: 'f', log, fsm: new ListFsm(), rand: mathRand, ticker: new RaftTicker(10), electionTicks: 10, heartbeatTicks: 1,
    proposalTimeoutMs: 3_000, snapshotEveryEntries: 5, retainEntries: 1, send: () => undefined, compactFloor: () => floor,
  });
  await group.start();
  t.teardown(() => group.close());
  await waitFor(() => group.core.role === 'leader', { what: 'the single voter to lead' });
  for (let i = 0; i < 30; i++) await group.propose(utf8.encode(`v${i}`));
  t.ok(log.mem.snap.meta.index >= 25, `snapshots were taken (at ${log.mem.snap.meta.index})`);
  t.equal(log.mem.offsetIndex, 3, 'entries after the floor are all kept');
  const reopened = await RocksLog.open(store, 'f');
  t.equal(reopened.mem.offsetIndex, 3, 'and so is the stored log');
  floor = undefined;
  for (let i = 0; i < 10; i++) await group.propose(utf8.encode(`w${i}`));
  t.equal(log.mem.offsetIndex, log.mem.snap.meta.index - 1, 'with the floor gone, the next snapshot compacts as usual');
});

t.test('followers whose link to a dead leader is lost elect a new leader within half an election timeout', async (t) => {
  // Election timeouts of 100 ticks: without the linkLost signal the first campaign cannot come
  // before 100 ticks without a heartbeat; with it, a follower forgets the leader after a
  // missed heartbeat and campaigns within 50 more. Ticks are counted, not time.
  // Each node draws a fixed end of the range, so the two followers campaign ~50 ticks apart:
  // with random draws they sometimes campaigned in the same tick, split the vote, and the
  // retry waits a full randomized timeout (seen once in CI at 112 ticks). Splits are Raft's
  // business and covered by the simulation; this test is about the link-lost signal.
  const electionTicks = 100;
  const draws: Record<string, Rand> = {
    a: { int: () => 0 },
    b: { int: () => 0 },
    c: { int: (maxExclusive) => maxExclusive - 1 },
  };
  const groups = new Map<string, RaftGroup>();
  const stores: Store[] = [];
  const dead = new Set<string>();
  const tickers = new Map<string, RaftTicker>();
  const route = (ms: readonly Message[]) => {
    for (const m of ms) if (!dead.has(m.to) && !dead.has(m.from)) setImmediate(() => groups.get(m.to)?.step(m));
  };
  for (const id of ids) {
    const store = await Store.open(tempDir());
    stores.push(store);
    const log = await RocksLog.open(store, 'g', { voters: ids, learners: [] });
    const ticker = new RaftTicker(10);
    tickers.set(id, ticker);
    const group = new RaftGroup({
      id, group: 'g', log, fsm: new ListFsm(), rand: draws[id]!, ticker, electionTicks, heartbeatTicks: 1,
      proposalTimeoutMs: 3_000, snapshotEveryEntries: 1_000, retainEntries: 0, send: route,
      linkLost: (node) => dead.has(node),
    });
    groups.set(id, group);
    await group.start();
  }
  t.teardown(async () => {
    for (const g of groups.values()) await g.close();
    for (const s of stores) await s.close();
  });
  groups.get('a')!.core.campaign();
  groups.get('a')!.wake();
  const old = await waitFor(() => ids.map((id) => groups.get(id)!).find((g) => g.core.role === 'leader'), { timeoutMs: 20_000, what: 'a leader' });
  const oldId = old.core.id;
  const followers = ids.filter((id) => id !== oldId).map((id) => groups.get(id)!);
  await waitFor(() => followers.every((f) => f.core.leader === oldId), { what: 'followers know the leader' });
  await old.propose(utf8.encode('before'));

  let ticks = 0;
  const untick = tickers.get(followers[0]!.core.id)!.register(() => ticks++);
  t.teardown(untick);
  dead.add(oldId); // its process is gone: nothing in or out, links refused
  await old.close();
  const next = await waitFor(() => followers.find((f) => f.core.role === 'leader'), { timeoutMs: 20_000, what: 'a new leader' });
  t.ok(ticks < electionTicks, `a new leader after ${ticks} ticks, before any election timeout (${electionTicks}) could fire`);
  t.ok(next.core.term > old.core.term, 'in a later term');
  await next.propose(utf8.encode('after'));
});

/**
 * Three members over a router that holds the messages `hold` picks until `release()`, torn
 * down with the test; returns them once a leader committed a first entry.
 */
async function threeWithHeldMessages(t: Test, hold: (m: Message) => boolean) {
  const members = new Map<string, Member>();
  const violations: string[] = [];
  const held: Message[] = [];
  const deliver = (m: Message) => setImmediate(() => members.get(m.to)?.group.step(m));
  const route = (ms: readonly Message[]) => {
    for (const m of ms) {
      if (hold(m)) held.push(m);
      else deliver(m);
    }
  };
  for (const id of ids) members.set(id, await startMember(id, tempDir(), route, violations));
  t.teardown(async () => {
    for (const m of members.values()) {
      await m.group.close();
      await m.store.close();
    }
  });
  const leader = await waitFor(() => [...members.values()].find((m) => m.group.core.role === 'leader'), { timeoutMs: 10_000, what: 'a leader' });
  await leader.group.propose(utf8.encode('first'));
  return { members, violations, leader, release: () => held.splice(0).forEach(deliver) };
}

t.test('read barriers share ReadIndex rounds; one asked during a round waits for the next', async (t) => {
  let holdFrom: string | undefined;
  const { violations, leader: l, release: deliverHeld } = await threeWithHeldMessages(t, (m) => m.from === holdFrom);
  await l.group.readBarrier();
  // Count the ReadIndex rounds the leader starts from here on; hold its messages from each
  // round's start, so a round ends only when the test lets it.
  const core = l.group.core;
  const readIndex = core.readIndex.bind(core);
  let rounds = 0;
  core.readIndex = (ctx: string) => {
    rounds++;
    holdFrom = l.id;
    return readIndex(ctx);
  };
  const release = () => {
    holdFrom = undefined;
    deliverHeld();
  };
  let laterDone = 0;
  const first = l.group.readBarrier();
  t.equal(rounds, 1, 'the first barrier starts a round');
  const later = Array.from({ length: 49 }, () => l.group.readBarrier().then(() => laterDone++));
  t.equal(rounds, 1, 'the 49 asked during it start none');
  release();
  await first;
  t.equal(rounds, 2, 'when the first round ended, one more started for the 49');
  t.equal(laterDone, 0, 'none of the 49 resolved with the round that was running when they were asked');
  release();
  await Promise.all(later);
  t.equal(laterDone, 49, 'all of them resolved with the next');
  t.equal(rounds, 2, 'in one round');
  t.same(violations, []);
});

t.test('a read round cut short by a change of leader is refused as not_leader, not left to its timeout', async (t) => {
  let holdHeartbeatsFrom: string | undefined;
  const { members, violations, leader: l, release } = await threeWithHeldMessages(t, (m) => m.from === holdHeartbeatsFrom && m.kind === 'heartbeat');
  // The read's heartbeat round is held, so it cannot be confirmed; then leadership moves.
  holdHeartbeatsFrom = l.id;
  const read = l.group.readBarrier().then(
    () => 'resolved',
    (err: unknown) => (isFirkinError(err) ? err.code : String(err)),
  );
  const to = ids.find((id) => id !== l.id)!;
  t.ok(l.group.transferLeadership(to), `${l.id} hands leadership to ${to}`);
  t.equal(await read, 'not_leader', 'the read is refused once the leader changed (a timeout would say "timeout")');
  holdHeartbeatsFrom = undefined;
  release();
  const next = await waitFor(() => [...members.values()].find((m) => m.group.core.role === 'leader' && m.id !== l.id), { timeoutMs: 10_000, what: 'the new leader' });
  await next.group.readBarrier();
  t.pass(`a read on the new leader ${next.id} goes through`);
  t.same(violations, []);
});
