// The durable log: what is saved is exactly what a restart reads back, conflicting tails are
// replaced, snapshots replace and compact, groups do not see each other.
import t from 'tap';
import { Store } from '../../src/storage/db.js';
import { RocksLog } from '../../src/raft/rocks-log.js';
import { encodeValue } from '../../src/raft/codec.js';
import { encodeKey } from '../../src/core/keys.js';
import type { Entry, Ready } from '../../src/raft/types.js';
import { tempDir } from '../support/node.js';

const utf8 = new TextEncoder();
const normal = (index: number, term: number, v: string): Entry => ({ index, term, kind: 'normal', data: utf8.encode(v) });
const rd = (p: Partial<Ready>): Ready => ({
  softState: { role: 'follower', leader: null, term: 0 },
  hardState: undefined,
  entries: [],
  snapshot: undefined,
  earlyMessages: [],
  messages: [],
  committed: [],
  readStates: [],
  mustSync: true,
  ...p,
});

function view(log: RocksLog) {
  const m = log.mem;
  return { hs: m.hardState, snap: m.snapshot().meta, first: m.firstIndex(), last: m.lastIndex(), entries: m.entries(m.firstIndex(), m.lastIndex() + 1), offsetTerm: m.term(m.firstIndex() - 1) };
}

t.test('bootstrap, save, truncate, snapshot, compact: a reopen reads back the exact state', async (t) => {
  const dir = tempDir();
  let store = await Store.open(dir);
  t.teardown(() => store.close());
  let log = await RocksLog.open(store, 'g1', { voters: ['a', 'b', 'c'], learners: [] });
  t.same(log.mem.hardState, { term: 1, vote: null, commit: 3 });
  t.equal(log.mem.lastIndex(), 3);
  const other = await RocksLog.open(store, 'g2');
  t.equal(other.mem.lastIndex(), 0, 'another group is empty');

  await log.save(rd({ entries: [4, 5, 6, 7].map((i) => normal(i, 2, `v${i}`)), hardState: { term: 2, vote: 'a', commit: 5 } }));
  // A new leader replaces the uncommitted tail 6..7 with one entry of term 3.
  await log.save(rd({ entries: [normal(6, 3, 'w6')], hardState: { term: 3, vote: 'b', commit: 5 } }));
  const before = view(log);
  t.equal(before.last, 6);
  log = await RocksLog.open(store, 'g1', { voters: ['x'], learners: [] });
  t.same(view(log), before, 'reopen: same hard state and entries; bootstrap ignored once data exists');

  await log.createSnapshot({ index: 5, conf: { voters: ['a', 'b', 'c'], learners: [] } }, utf8.encode('state@5'), 1);
  const compacted = view(log);
  t.equal(compacted.first, 5, 'entry 4 dropped, one entry retained before the snapshot');
  t.equal(compacted.snap.index, 5);
  await store.close();
  store = await Store.open(dir);
  log = await RocksLog.open(store, 'g1');
  t.same(view(log), compacted, 'reopen after compaction');
  t.same(Buffer.from(log.mem.snapshot().data).toString(), 'state@5');

  // A snapshot from the leader replaces the whole log.
  const snap = { meta: { index: 20, term: 4, conf: { voters: ['a', 'b'], learners: ['c'] } }, data: utf8.encode('state@20') };
  await log.save(rd({ snapshot: snap, hardState: { term: 4, vote: null, commit: 20 } }));
  await log.save(rd({ entries: [normal(21, 4, 'v21')] }));
  const installed = view(log);
  t.equal(installed.first, 21);
  t.equal(installed.offsetTerm, 4);
  log = await RocksLog.open(store, 'g1');
  t.same(view(log), installed, 'reopen after installing a snapshot');
  let n = 0;
  for await (const _ of store.entries('raft')) n++;
  t.equal(n, 5, "no stale keys: entry 21, hard state, snapshot, offset, and g2's fresh marker (it wrote nothing else)");
});

t.test('a log opened empty without a bootstrap is fresh until cleared, across reopens; a bootstrap is never fresh', async (t) => {
  const store = await Store.open(tempDir());
  t.teardown(() => store.close());
  const joiner = await RocksLog.open(store, 'g1');
  t.match(joiner.fresh, /^[0-9a-f]{16}$/, 'a replica waiting to be added: a new incarnation');
  await joiner.save(rd({ entries: [normal(1, 1, 'a')], hardState: { term: 1, vote: null, commit: 0 } }));
  t.equal((await RocksLog.open(store, 'g1')).fresh, joiner.fresh, 'a restart before it was vouched for is still fresh, the same incarnation');
  await joiner.clearFresh();
  t.equal((await RocksLog.open(store, 'g1')).fresh, undefined, 'vouched for: never again');
  // A marker from a build before incarnations gets one.
  await store.batch([{ type: 'put', cf: 'raft', key: encodeKey(['g3', 'fresh']), value: encodeValue({ fresh: true }) }], { sync: true });
  const old = await RocksLog.open(store, 'g3');
  t.match(old.fresh, /^[0-9a-f]{16}$/);
  t.equal((await RocksLog.open(store, 'g3')).fresh, old.fresh, 'and keeps it');
  // Opened empty once (a crash before the bootstrap's write), then with its bootstrap.
  t.not((await RocksLog.open(store, 'meta')).fresh, undefined);
  const booted = await RocksLog.open(store, 'meta', { voters: ['n1'], learners: [] });
  t.equal(booted.fresh, undefined);
  t.equal(booted.bootstrapped, true);
  t.equal(booted.mem.lastIndex(), 1);
  const reopened = await RocksLog.open(store, 'meta', { voters: ['n1'], learners: [] });
  t.same([reopened.fresh, reopened.bootstrapped], [undefined, false], 'reopened: not bootstrapped again');
  t.equal((await RocksLog.open(store, 'g2', { voters: ['n1', 'n2'], learners: [] })).fresh, undefined);
});

t.test('a bootstrap given as a function is asked only when nothing is stored', async (t) => {
  const store = await Store.open(tempDir());
  t.teardown(() => store.close());
  let asked = 0;
  const first = await RocksLog.open(store, 'meta', () => (asked++, { voters: ['n1'], learners: [] }));
  t.same([asked, first.bootstrapped, first.fresh, first.mem.lastIndex()], [1, true, undefined, 1], 'empty: asked, and bootstrapped');
  const again = await RocksLog.open(store, 'meta', () => (asked++, { voters: ['n9'], learners: [] }));
  t.same([asked, again.bootstrapped, again.mem.lastIndex()], [1, false, 1], 'stored: not asked');
  const joiner = await RocksLog.open(store, 'g1', () => (asked++, undefined));
  t.same([asked, joiner.bootstrapped, joiner.fresh !== undefined], [2, false, true], 'empty, and the answer is not to bootstrap: fresh, a single open');
});
