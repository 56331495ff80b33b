// The metadata state machine is a pure function of the log: the same commands give the same
// state on every replica, and a snapshot taken anywhere then restored and replayed equals a
// plain replay (what a node restarting from a snapshot, or a learner fed one, relies on).
import t from 'tap';
import fc from 'fast-check';
import { EMPTY_META, type MetaCommand, type MetaState, applyMeta, bootstrapConf, canonicalMeta, checkMetaCommand, checkMetaState, deletedGroups, placedNodes, reshardLogFloor } from '../../src/cluster/meta-state.js';
import { encodeCbor } from '../../src/core/codec.js';
import { MetaFsm } from '../../src/cluster/metadata.js';
import { PROTOCOL } from '../../src/cluster/versions.js';
import type { Entry } from '../../src/raft/types.js';
import { fcParams } from '../support/fc.js';

const names = fc.constantFrom('n1', 'n2', 'n3', 'n4');
const incarnation = fc.constantFrom('a', 'b');
const atMs = fc.nat(1_000_000);
const keyId = fc.constantFrom('k1', 'k2', 'k3');
const tenantId = fc.constantFrom('t1', 't2');
const collName = fc.constantFrom('c1', 'c2', 'c3');

const command: fc.Arbitrary<MetaCommand> = fc.oneof(
  fc.record({ type: fc.constant('node.join' as const), node: fc.record({ name: names, incarnation, http: fc.constant('http://x'), grpc: fc.constantFrom('h:1', 'h:2'), zone: fc.constantFrom('z1', 'z2') }), atMs }),
  fc.record({ type: fc.constant('node.status' as const), name: names, status: fc.constantFrom('up' as const, 'suspect' as const, 'down' as const), atMs }),
  fc.record({ type: fc.constant('node.leave' as const), name: names, jobId: fc.constantFrom('j1', 'j2'), atMs }),
  fc.record({ type: fc.constant('node.left' as const), name: names, atMs }),
  fc.record({ type: fc.constant('node.remove' as const), name: names, atMs }),
  fc.record({
    type: fc.constant('apikey.put' as const),
    record: fc.record({ id: keyId, digest: fc.constantFrom('d1', 'd2', 'd3'), keyPrefix: fc.constant('fk_x'), permissions: fc.constant(['read' as const]), databases: fc.constant('all' as const), label: fc.constant(undefined), createdAt: atMs }),
  }),
  fc.record({ type: fc.constant('apikey.revoke' as const), id: keyId }),
  fc.record({
    type: fc.constant('tenant.create' as const),
    tenant: fc.record({ tenant_id: tenantId, limits: fc.record({ rpm_limit: fc.constant(10), max_vectors: fc.constant(10), max_collections: fc.constantFrom(1, 2), max_storage_mb: fc.constant(1) }), created_at: atMs }),
    key: fc.record({ key_id: keyId, tenant_id: tenantId, digest: fc.constant('g'), key_prefix: fc.constant('p'), created_at: atMs }),
  }),
  fc.record({ type: fc.constant('tenant.delete' as const), tenantId }),
  fc.record({ type: fc.constant('tenantkey.delete' as const), keyId }),
  fc.record({
    type: fc.constant('tenantcoll.create' as const),
    record: fc.record({ tenant_id: tenantId, name: collName, internal: fc.constant('i'), dimension: fc.constant(3), vector_count: fc.constant(0), storage_bytes: fc.constant(0), created_at: atMs }),
  }),
  fc.record({ type: fc.constant('tenantcoll.usage' as const), tenantId, name: collName, vectors: fc.integer({ min: -3, max: 5 }), bytes: fc.integer({ min: -300, max: 500 }) }),
  fc.record({ type: fc.constant('tenantcoll.recount' as const), tenantId, name: collName, vectors: fc.nat(20) }),
  fc.record({ type: fc.constant('tenantcoll.delete' as const), tenantId, name: collName }),
);

function replay(cmds: readonly MetaCommand[], from: MetaState = EMPTY_META): MetaState {
  return cmds.reduce((s, c) => applyMeta(s, c).state, from);
}

function entries(cmds: readonly MetaCommand[], first = 1): Entry[] {
  return cmds.map((c, i) => ({ index: first + i, term: 1, kind: 'normal', data: encodeCbor(c) }));
}

t.test('apply is deterministic and never mutates its input', (t) => {
  fc.assert(
    fc.property(fc.array(command, { maxLength: 60 }), (cmds) => {
      const before = JSON.stringify(canonicalMeta(replay(cmds.slice(0, cmds.length >> 1))));
      const a = replay(cmds);
      const b = replay(cmds);
      t.same(canonicalMeta(a), canonicalMeta(b));
      t.equal(JSON.stringify(canonicalMeta(replay(cmds.slice(0, cmds.length >> 1)))), before);
    }),
    fcParams(200),
  );
  t.end();
});

t.test('snapshot + restore + replay of the tail equals a full replay', (t) => {
  fc.assert(
    fc.property(fc.array(command, { maxLength: 60 }), fc.nat(60), (cmds, cut) => {
      const k = Math.min(cut, cmds.length);
      const full = new MetaFsm(() => undefined);
      for (const e of entries(cmds)) full.apply(e);
      const head = new MetaFsm(() => undefined);
      for (const e of entries(cmds.slice(0, k))) head.apply(e);
      const restored = new MetaFsm(() => undefined);
      restored.restore(head.snapshot());
      for (const e of entries(cmds.slice(k), k + 1)) restored.apply(e);
      t.same(canonicalMeta(restored.state), canonicalMeta(full.state));
      t.equal(restored.applied, full.applied);
      // Byte-identical snapshots: replicas can compare digests.
      t.same(Buffer.from(restored.snapshot()), Buffer.from(full.snapshot()));
    }),
    fcParams(150),
  );
  t.end();
});

t.test('a live name held by another incarnation is refused; a retried join is idempotent', (t) => {
  const join = (incarnation: string, atMs: number): MetaCommand => ({ type: 'node.join', node: { name: 'n2', incarnation, http: 'h', grpc: 'g:1', zone: 'z' }, atMs });
  let { state, result } = applyMeta(EMPTY_META, join('a', 1));
  t.same(result, { ok: true });
  const again = applyMeta(state, join('a', 5));
  t.same(again.result, { ok: true });
  t.equal(again.state.nodes.n2!.joinedAtMs, 1, 'a retried join keeps the join time');
  const clash = applyMeta(state, join('b', 6));
  t.equal(clash.result.ok, false);
  t.match(clash.result, { code: 'conflict', message: /held by another member/ });
  // Removed (only once down), the name is free again.
  t.match(applyMeta(state, { type: 'node.remove', name: 'n2', atMs: 7 }).result, { ok: false, code: 'conflict' });
  ({ state } = applyMeta(state, { type: 'node.status', name: 'n2', status: 'down', atMs: 8 }));
  ({ state, result } = applyMeta(state, { type: 'node.remove', name: 'n2', atMs: 9 }));
  t.same(result, { ok: true });
  t.same(applyMeta(state, join('b', 10)).result, { ok: true });
  t.end();
});

// The split brain of chaos seed 76: a node that joined again under its name on an empty data
// directory, placed back on a group its old self was created on, bootstrapped that group's
// initial membership; two such nodes elected each other beside the real group. Here the
// model is the truth: a replica bootstraps a shard iff its membership (a record's life from
// a join to `left`) is the one that was live, and among the shard's replicas, when the shard
// was created. Moves (shard.replace) put names back on old shards at random.
t.test('only the membership a shard was created on bootstraps it: never a later one under the same name', (t) => {
  const inc = fc.constantFrom('a', 'b', 'c');
  const step: fc.Arbitrary<MetaCommand> = fc.oneof(
    fc.record({ type: fc.constant('node.join' as const), node: fc.record({ name: names, incarnation: inc, http: fc.constant('h'), grpc: fc.constant('g'), zone: fc.constant('z') }), atMs }),
    fc.record({ type: fc.constant('node.status' as const), name: names, status: fc.constant('down' as const), atMs }),
    fc.record({ type: fc.constant('node.remove' as const), name: names, atMs }),
    fc.record({ type: fc.constant('node.leave' as const), name: names, jobId: fc.constant('j'), atMs }),
    fc.record({ type: fc.constant('node.left' as const), name: names, atMs }),
    fc.record({
      type: fc.constant('collection.create' as const),
      name: fc.constantFrom('c1', 'c2', 'c3', 'c4', 'c5', 'c6'),
      config: fc.constant({}),
      replicationFactor: fc.constant(2),
      shards: fc.array(fc.record({ range: fc.constant([0, 1] as const), replicas: fc.uniqueArray(names, { minLength: 1, maxLength: 3 }) }), { minLength: 1, maxLength: 2 }),
    }),
    fc.record({ type: fc.constant('shard.replace' as const), collection: fc.constantFrom('c1', 'c2', 'c3'), group: fc.constantFrom('vs0', 'vs1', 'vs2', 'vs3'), from: names, to: names }),
  );
  fc.assert(
    fc.property(fc.array(step, { maxLength: 80 }), (cmds) => {
      let state = EMPTY_META;
      // Per name, a count of its memberships; per shard, the memberships live among its replicas at creation.
      const membership = new Map<string, number>();
      const createdOn = new Map<number, Set<string>>();
      const live = (s: MetaState, name: string) => s.nodes[name] !== undefined && s.nodes[name].status !== 'left';
      for (const cmd of cmds) {
        const before = state;
        state = applyMeta(state, cmd).state;
        for (const name of ['n1', 'n2', 'n3', 'n4']) if (!live(before, name) && live(state, name)) membership.set(name, (membership.get(name) ?? 0) + 1);
        for (let n = before.nextShard; n < state.nextShard; n++) {
          const shard = Object.values(state.collections).flatMap((c) => c.shards).find((sh) => sh.number === n)!;
          createdOn.set(n, new Set(shard.replicas.filter((r) => live(before, r)).map((r) => `${r}#${membership.get(r)}`)));
        }
      }
      for (const shard of Object.values(state.collections).flatMap((c) => c.shards)) {
        for (const [name, record] of Object.entries(state.nodes)) {
          if (record.status === 'left') continue;
          const conf = bootstrapConf(state, shard, name, record.incarnation);
          const expected = createdOn.get(shard.number)!.has(`${name}#${membership.get(name)}`);
          if (expected !== (conf !== undefined)) return false;
          if (conf !== undefined && !(conf.voters.join() === (shard.initial ?? shard.replicas).join() && conf.learners.length === 0)) return false;
          // Another data directory under the name (a state still catching up shows the old one's record).
          if (bootstrapConf(state, shard, name, `${record.incarnation}-other`) !== undefined) return false;
        }
      }
      return true;
    }),
    fcParams(300),
  );
  t.end();
});

t.test('leave records a job; left clears it; the detector cannot undo an operator status', (t) => {
  let { state } = applyMeta(EMPTY_META, { type: 'node.join', node: { name: 'n1', incarnation: 'a', http: 'h', grpc: 'g', zone: 'z' }, atMs: 1 });
  ({ state } = applyMeta(state, { type: 'node.leave', name: 'n1', jobId: 'j', atMs: 2 }));
  t.equal(state.nodes.n1!.status, 'leaving');
  t.match(state.jobs.j, { kind: 'leave', target: 'n1' });
  ({ state } = applyMeta(state, { type: 'node.status', name: 'n1', status: 'up', atMs: 3 }));
  t.equal(state.nodes.n1!.status, 'leaving');
  ({ state } = applyMeta(state, { type: 'node.left', name: 'n1', atMs: 4 }));
  t.equal(state.nodes.n1!.status, 'left');
  t.same(state.jobs, {});
  t.end();
});

t.test('collections: the log numbers the shards, never reusing a number; a second create is refused', (t) => {
  const cmd = (name: string, n: number) => ({
    type: 'collection.create' as const,
    name,
    config: { dimensions: 4 },
    replicationFactor: 2,
    shards: Array.from({ length: n }, (_, i) => ({ range: [i, i] as const, replicas: ['a', 'b'] })),
  });
  let s = EMPTY_META;
  ({ state: s } = applyMeta(s, checkMetaCommand(cmd('x', 3))));
  t.same(s.collections.x!.shards.map((sh) => [sh.number, sh.group]), [[0, 'vs0'], [1, 'vs1'], [2, 'vs2']]);
  t.match(applyMeta(s, cmd('x', 1)).result, { ok: false, code: 'already_exists' });
  ({ state: s } = applyMeta(s, { type: 'collection.delete', name: 'x' }));
  t.equal(s.collections.x, undefined);
  ({ state: s } = applyMeta(s, cmd('x', 2)));
  t.same(s.collections.x!.shards.map((sh) => sh.group), ['vs3', 'vs4'], 'a re-created name gets new groups');
  t.match(applyMeta(s, { type: 'collection.delete', name: 'nope' }).result, { ok: false, code: 'not_found' });
  t.throws(() => checkMetaCommand({ type: 'collection.create', name: 'y', config: {}, replicationFactor: 1, shards: [{ range: [0], replicas: [] }] }), /malformed/);
  t.equal(checkMetaState({ ...EMPTY_META, nextShard: undefined }).nextShard, 0, 'snapshots from before placements read as 0');
  t.end();
});

t.test('tenant collections: max_collections holds cluster-wide, and usage deltas add up in any order', (t) => {
  fc.assert(
    fc.property(fc.array(command, { maxLength: 80 }), (cmds) => {
      let state = EMPTY_META;
      for (const c of cmds) {
        state = applyMeta(state, c).state;
        for (const tenant of Object.values(state.tenants)) {
          const held = Object.values(state.tenantCollections).filter((r) => r.tenant_id === tenant.tenant_id).length;
          if (held > tenant.limits.max_collections) throw new Error(`tenant ${tenant.tenant_id} holds ${held} > ${tenant.limits.max_collections}`);
        }
        for (const r of Object.values(state.tenantCollections)) {
          if (state.tenants[r.tenant_id] === undefined) throw new Error(`collection ${r.name} outlived its tenant`);
          if (r.vector_count < 0 || r.storage_bytes < 0) throw new Error('negative usage');
        }
      }
    }),
    fcParams(300),
  );
  const tenant = { tenant_id: 't1', limits: { rpm_limit: 10, max_vectors: 10, max_collections: 1, max_storage_mb: 1 }, created_at: 0 };
  const start = [
    { type: 'tenant.create', tenant, key: { key_id: 'k1', tenant_id: 't1', digest: 'g', key_prefix: 'p', created_at: 0 } },
    { type: 'tenantcoll.create', record: { tenant_id: 't1', name: 'c1', internal: 'i', dimension: 3, vector_count: 0, storage_bytes: 0, created_at: 0 } },
  ] as MetaCommand[];
  fc.assert(
    fc.property(fc.array(fc.record({ vectors: fc.nat(5), bytes: fc.nat(500) }), { maxLength: 20 }).chain((ds) => fc.tuple(fc.constant(ds), fc.shuffledSubarray(ds, { minLength: ds.length, maxLength: ds.length }))), ([deltas, shuffled]) => {
      const usage = (ds: { vectors: number; bytes: number }[]) => replay([...start, ...ds.map((d) => ({ type: 'tenantcoll.usage' as const, tenantId: 't1', name: 'c1', ...d }))]).tenantCollections;
      t.same(usage(shuffled), usage(deltas));
      const c = Object.values(usage(deltas))[0]!;
      t.equal(c.vector_count, deltas.reduce((n, d) => n + d.vectors, 0));
    }),
    fcParams(100),
  );
  const second = applyMeta(replay(start), { type: 'tenantcoll.create', record: { tenant_id: 't1', name: 'c2', internal: 'j', dimension: 3, vector_count: 0, storage_bytes: 0, created_at: 0 } });
  t.match(second.result, { ok: false, code: 'quota_exceeded' }, 'the state machine refuses a collection past max_collections');
  t.end();
});

/** A metadata state stepped one command at a time: a VDB `v` of two shards to start from. */
function vdbStepper() {
  const config = { hashFunction: 'phash2' as const, replicaFactor: 2, zones: [], createdMs: 0 };
  const m = {
    state: replay([{ type: 'vdb.create', name: 'v', config, shards: [{ range: [0, 2147483647], replicas: ['n1', 'n2'] }, { range: [2147483648, 4294967295], replicas: ['n2', 'n3'] }] }]),
    step(cmd: MetaCommand) {
      const next = applyMeta(m.state, cmd);
      m.state = next.state;
      return next.result;
    },
  };
  return m;
}

t.test('a VDB split then a merge: one switch entry each, refusals, stable shard ids', (t) => {
  const m = vdbStepper();
  const step = m.step;
  t.match(step({ type: 'vdb.rebalance.begin', name: 'v', jobId: 'j1', atMs: 1, op: 'split', source: 1, target: 3, moving: [3221225472, 4294967295], replicas: ['n1', 'n3'] }), { ok: false, code: 'conflict' }, "a split's new shard is the next position");
  t.same(step({ type: 'vdb.rebalance.begin', name: 'v', jobId: 'j1', atMs: 1, op: 'split', source: 1, target: 2, moving: [3221225472, 4294967295], replicas: ['n1', 'n3'] }), { ok: true });
  t.match(m.state.vdbs.v!.pending, { group: 'ds2', range: [3221225472, 4294967295], replicas: ['n1', 'n3'] }, 'the new group is placed, pending');
  t.match(step({ type: 'vdb.rebalance.begin', name: 'v', jobId: 'j2', atMs: 2, op: 'merge', source: 0, target: 1, moving: [0, 2147483647] }), { ok: false, code: 'conflict' }, 'one job per VDB');
  t.match(step({ type: 'vdb.rebalance.switch', jobId: 'j1', atMs: 3 }), { ok: false, code: 'conflict' }, 'no switch before the switching step');
  t.same(step({ type: 'vdb.rebalance.progress', jobId: 'j1', atMs: 4, from: [5, 0], copied: 10 }), { ok: true });
  step({ type: 'vdb.rebalance.progress', jobId: 'j1', atMs: 5, from: [9, 0], copied: 3, step: 'switching' });
  t.match(m.state.jobs.j1, { step: 'switching', vdb: { from: [5, 0], copied: 10 } }, 'progress is monotonic; the first `from` stays');
  const epoch = m.state.vdbs.v!.epoch;
  t.same(step({ type: 'vdb.rebalance.switch', jobId: 'j1', atMs: 6 }), { ok: true });
  t.same(m.state.vdbs.v!.shards.map((s) => s.range), [[0, 2147483647], [2147483648, 3221225471], [3221225472, 4294967295]], 'the switch appends the new shard and halves the source');
  t.equal(m.state.vdbs.v!.pending, undefined);
  t.equal(m.state.vdbs.v!.epoch, epoch + 1, 'the epoch moves');
  t.match(step({ type: 'vdb.rebalance.end', jobId: 'j1', atMs: 7, step: 'failed' }), { ok: false }, 'a switched job only finishes');
  t.same(step({ type: 'vdb.rebalance.end', jobId: 'j1', atMs: 7, step: 'done' }), { ok: true });

  t.same(step({ type: 'vdb.rebalance.begin', name: 'v', jobId: 'j2', atMs: 8, op: 'merge', source: 0, target: 1, moving: [0, 2147483647] }), { ok: true });
  t.equal(m.state.jobs.j1, undefined, 'an ended job gives way to the next');
  step({ type: 'vdb.rebalance.progress', jobId: 'j2', atMs: 9, targetFrom: [4, 2], step: 'switching' });
  t.same(step({ type: 'vdb.rebalance.switch', jobId: 'j2', atMs: 10 }), { ok: true });
  const v = m.state.vdbs.v!;
  t.match(v.shards[0], { retired: true, replicas: ['n1', 'n2'], mergedInto: { shard: 1, from: [4, 2] } }, 'the merged shard keeps its position, retired (still hosted, fenced, until the job ends)');
  t.same(v.shards[1]!.range, [0, 3221225471], 'the target takes the union');
  t.match(step({ type: 'vdb.rebalance.begin', name: 'v', jobId: 'j3', atMs: 11, op: 'split', source: 0, target: 3, moving: [0, 1], replicas: ['n1'] }), { ok: false }, 'a job is refused while one runs');
  step({ type: 'vdb.rebalance.end', jobId: 'j2', atMs: 12, step: 'done' });
  t.same(m.state.vdbs.v!.shards[0]!.replicas, [], 'the end entry removes it from the placement');
  t.match(step({ type: 'vdb.rebalance.begin', name: 'v', jobId: 'j3', atMs: 13, op: 'split', source: 0, target: 3, moving: [0, 1], replicas: ['n1'] }), { ok: false, code: 'not_found' }, 'a retired shard does not split');
  t.end();
});

t.test('a VDB split or merge planned on ranges that changed since is refused; one with no plan (an older proposer) is taken as before', (t) => {
  // Chaos seed 134: a node just restarted, its copy of the map from before a split had put a
  // shard between shards 3 and 4, merged 4 into 3; the widened 3 overlapped the new shard.
  const m = vdbStepper();
  const step = m.step;
  const split = (jobId: string, source: number, target: number, moving: [number, number], planned?: [number, number]) =>
    step({ type: 'vdb.rebalance.begin', name: 'v', jobId, atMs: 1, op: 'split', source, target, moving, replicas: ['n1'], ...(planned === undefined ? {} : { planned: { source: planned } }) });
  const finish = (jobId: string) => {
    step({ type: 'vdb.rebalance.progress', jobId, atMs: 2, step: 'switching' });
    t.same(step({ type: 'vdb.rebalance.switch', jobId, atMs: 3 }), { ok: true });
    t.same(step({ type: 'vdb.rebalance.end', jobId, atMs: 4, step: 'done' }), { ok: true });
  };
  // Shard 1 [2^31, 2^32 - 1] splits: shard 2 takes the upper quarter; then shard 1 again: shard 3 between.
  t.same(split('s1', 1, 2, [3221225472, 4294967295], [2147483648, 4294967295]), { ok: true });
  finish('s1');
  t.match(split('s2', 1, 3, [2684354560, 3221225471], [2147483648, 4294967295]), { ok: false, code: 'conflict', message: /shard 1 holds \[2147483648, 3221225471\] now, not \[2147483648, 4294967295\]/ }, 'a split planned on the range before the last split');
  t.same(split('s2', 1, 3, [2684354560, 3221225471], [2147483648, 3221225471]), { ok: true });
  finish('s2');
  const ranges = m.state.vdbs.v!.shards.map((s) => s.range);
  t.same(ranges, [[0, 2147483647], [2147483648, 2684354559], [3221225472, 4294967295], [2684354560, 3221225471]]);
  const merge = (jobId: string, source: number, target: number, planned: { source: [number, number]; target?: [number, number] } | undefined) =>
    step({ type: 'vdb.rebalance.begin', name: 'v', jobId, atMs: 5, op: 'merge', source, target, moving: [...(planned?.source ?? (ranges[source] as [number, number]))] as [number, number], ...(planned === undefined ? {} : { planned }) });
  // As the restarted node saw it: shard 2 [3221225472, ...] next to shard 1 [2147483648, 3221225471].
  t.match(merge('m1', 2, 1, { source: [3221225472, 4294967295], target: [2147483648, 3221225471] }), { ok: false, code: 'conflict', message: /shard 1 holds \[2147483648, 2684354559\] now/ }, 'a merge planned before shard 3 came between');
  t.match(merge('m1', 2, 1, { source: [3221225472, 4294967295], target: [2147483648, 2684354559] }), { ok: false, code: 'conflict', message: /not adjacent in hash space/ }, 'the ranges as they are, but not adjacent');
  t.equal(m.state.jobs.m1, undefined, 'no job begun');
  t.same(merge('m1', 2, 3, { source: [3221225472, 4294967295], target: [2684354560, 3221225471] }), { ok: true }, 'adjacent, as planned');
  finish('m1');
  t.same(m.state.vdbs.v!.shards[3]!.range, [2684354560, 4294967295]);
  // Without a plan (a proposer older than protocol 9), the log takes it as it always did: every member alike.
  t.same(merge('m2', 1, 0, undefined), { ok: true });
  t.end();
});

t.test('placedNodes: the nodes of routed and pending shards, of collections and VDBs', (t) => {
  const m = vdbStepper();
  t.same([...placedNodes(m.state)].sort(), ['n1', 'n2', 'n3']);
  m.step({ type: 'vdb.rebalance.begin', name: 'v', jobId: 'j1', atMs: 1, op: 'split', source: 1, target: 2, moving: [3221225472, 4294967295], replicas: ['n4'] });
  t.ok(placedNodes(m.state).has('n4'), "a split's pending shard places its replicas");
  m.step({ type: 'collection.create', name: 'c', config: {}, replicationFactor: 1, shards: [{ range: [0, 1], replicas: ['n5'] }] });
  t.same([...placedNodes(m.state)].sort(), ['n1', 'n2', 'n3', 'n4', 'n5']);
  t.end();
});

t.test('deletedGroups: created (below nextShard) and placed nowhere; a group not created yet is not deleted', (t) => {
  const m = vdbStepper();
  const ask = ['ds0', 'ds1', 'ds2', 'vs2', 'ds9', 'nonsense'];
  t.same(deletedGroups(m.state, ask), [], 'both shards placed; ds2 and beyond not created yet (a lagging member must not call them deleted)');
  m.step({ type: 'vdb.rebalance.begin', name: 'v', jobId: 'j', atMs: 1, op: 'merge', source: 0, target: 1, moving: [0, 2147483647] });
  m.step({ type: 'vdb.rebalance.progress', jobId: 'j', atMs: 2, targetFrom: [4, 2], step: 'switching' });
  m.step({ type: 'vdb.rebalance.switch', jobId: 'j', atMs: 3 });
  t.same(deletedGroups(m.state, ask), [], 'a merged shard is still hosted (fenced) until its job ends');
  m.step({ type: 'vdb.rebalance.end', jobId: 'j', atMs: 4, step: 'done' });
  t.same(deletedGroups(m.state, ask), ['ds0'], 'the merge ended: its source group is gone');
  m.step({ type: 'collection.create', name: 'c', config: {}, replicationFactor: 1, shards: [{ range: [0, 1], replicas: ['n5'] }] });
  t.same(deletedGroups(m.state, ['vs2']), []);
  m.step({ type: 'vdb.delete', name: 'v' });
  m.step({ type: 'collection.delete', name: 'c' });
  t.same(deletedGroups(m.state, ask), ['ds0', 'ds1', 'ds2', 'vs2'], 'owners deleted (and ds2 never existed: number 2 went to vs2)');
  t.end();
});

t.test('a VDB split or merge is cancelled only before its switching step, and takes no step after the cancel', (t) => {
  const m = vdbStepper();
  const step = m.step;
  step({ type: 'vdb.rebalance.begin', name: 'v', jobId: 'j1', atMs: 1, op: 'split', source: 1, target: 2, moving: [3221225472, 4294967295], replicas: ['n1', 'n3'] });
  t.match(step({ type: 'vdb.rebalance.end', jobId: 'j1', atMs: 2, step: 'cancelled' }), { ok: false, code: 'conflict' }, 'no cancelled end without a cancel taken first');
  step({ type: 'vdb.rebalance.progress', jobId: 'j1', atMs: 3, from: [5, 0], copied: 10, step: 'catching_up' });
  t.same(step({ type: 'vdb.rebalance.progress', jobId: 'j1', atMs: 4, cancel: true }), { ok: true }, 'a cancel while catching up');
  t.same(step({ type: 'vdb.rebalance.progress', jobId: 'j1', atMs: 4, cancel: true }), { ok: true }, 'twice is once');
  t.match(m.state.jobs.j1, { step: 'catching_up', vdb: { cancelRequested: true } });
  t.match(step({ type: 'vdb.rebalance.progress', jobId: 'j1', atMs: 5, step: 'switching' }), { ok: false, code: 'conflict' }, 'a coordinator that had not seen it cannot move to the switch');
  t.same(step({ type: 'vdb.rebalance.progress', jobId: 'j1', atMs: 6, copied: 20 }), { ok: true }, 'progress without a step still lands');
  t.match(step({ type: 'vdb.rebalance.switch', jobId: 'j1', atMs: 7 }), { ok: false, code: 'conflict' });
  t.same(step({ type: 'vdb.rebalance.end', jobId: 'j1', atMs: 8, step: 'cancelled' }), { ok: true });
  t.match(m.state.jobs.j1, { step: 'cancelled', vdb: { endedAtMs: 8, copied: 20 } });
  t.equal(m.state.vdbs.v!.pending, undefined, "the split's pending group leaves the placement");
  t.same(m.state.vdbs.v!.shards.map((s) => s.range), [[0, 2147483647], [2147483648, 4294967295]], 'the ranges never moved');

  // The other order: the switching step first, then the cancel is refused (the fence may be in place).
  step({ type: 'vdb.rebalance.begin', name: 'v', jobId: 'j2', atMs: 9, op: 'merge', source: 0, target: 1, moving: [0, 2147483647] });
  step({ type: 'vdb.rebalance.progress', jobId: 'j2', atMs: 10, targetFrom: [4, 2], step: 'switching' });
  t.match(step({ type: 'vdb.rebalance.progress', jobId: 'j2', atMs: 11, cancel: true }), { ok: false, code: 'conflict' }, 'no cancel once switching');
  t.match(step({ type: 'vdb.rebalance.end', jobId: 'j2', atMs: 12, step: 'cancelled' }), { ok: false, code: 'conflict' });
  t.same(step({ type: 'vdb.rebalance.switch', jobId: 'j2', atMs: 13 }), { ok: true }, 'the switch goes on');
  t.end();
});

t.test('a VDB split whose switch ran out of time is rolled back: only its own attempt, no switch of it after, no cancel until lifted', (t) => {
  const m = vdbStepper();
  const step = m.step;
  step({ type: 'vdb.rebalance.begin', name: 'v', jobId: 'j1', atMs: 1, op: 'split', source: 1, target: 2, moving: [3221225472, 4294967295], replicas: ['n1', 'n3'] });
  step({ type: 'vdb.rebalance.progress', jobId: 'j1', atMs: 2, from: [5, 0], step: 'catching_up' });
  t.match(step({ type: 'vdb.rebalance.rollback', jobId: 'j1', atMs: 3, attempt: 30, error: 'x' }), { ok: false, code: 'conflict' }, 'not before switching');
  step({ type: 'vdb.rebalance.progress', jobId: 'j1', atMs: 4, step: 'switching', attempt: 30 });
  t.match(m.state.jobs.j1, { step: 'switching', vdb: { attempt: 30 } });
  t.match(step({ type: 'vdb.rebalance.rollback', jobId: 'j1', atMs: 5, attempt: 29, error: 'x' }), { ok: false, code: 'conflict' }, 'not another attempt');
  t.same(step({ type: 'vdb.rebalance.rollback', jobId: 'j1', atMs: 6, attempt: 30, error: 'the target has no leader' }), { ok: true });
  t.match(m.state.jobs.j1, { step: 'catching_up', vdb: { attempt: 30, rollbacks: 1, rolledBackAtMs: 6, lifting: true, error: 'the target has no leader' } });
  t.match(step({ type: 'vdb.rebalance.switch', jobId: 'j1', atMs: 7, attempt: 30 }), { ok: false, code: 'conflict' }, 'a late switch of the rolled-back attempt is refused');
  t.equal(m.state.vdbs.v!.shards.length, 2, 'the ranges did not move');
  t.ok(m.state.vdbs.v!.pending !== undefined, "the split's new group stays placed for the next attempt");
  t.match(step({ type: 'vdb.rebalance.progress', jobId: 'j1', atMs: 8, cancel: true }), { ok: false, code: 'conflict' }, 'no cancel while the fence is being lifted');
  t.match(step({ type: 'vdb.rebalance.progress', jobId: 'j1', atMs: 9, step: 'switching', attempt: 40 }), { ok: false, code: 'conflict' }, 'nor the next switch');
  step({ type: 'vdb.rebalance.progress', jobId: 'j1', atMs: 10, lifted: 29 });
  t.equal(m.state.jobs.j1!.vdb!.lifting, true, 'a report naming another attempt clears nothing');
  step({ type: 'vdb.rebalance.progress', jobId: 'j1', atMs: 11, lifted: 30 });
  t.equal(m.state.jobs.j1!.vdb!.lifting, undefined, 'lifted');
  step({ type: 'vdb.rebalance.progress', jobId: 'j1', atMs: 12, step: 'switching', attempt: 41 });
  t.match(step({ type: 'vdb.rebalance.switch', jobId: 'j1', atMs: 13, attempt: 30 }), { ok: false, code: 'conflict' }, 'the first attempt stays refused in the second');
  t.same(step({ type: 'vdb.rebalance.switch', jobId: 'j1', atMs: 14, attempt: 41 }), { ok: true }, 'the second attempt switches');
  t.equal(m.state.vdbs.v!.shards.length, 3);
  t.match(step({ type: 'vdb.rebalance.rollback', jobId: 'j1', atMs: 15, attempt: 41, error: 'late' }), { ok: false, code: 'conflict' }, 'no rollback after the switch');
  t.end();
});

t.test('a reshard cancel that comes after its switching step is refused', (t) => {
  let state = replay([{ type: 'collection.create', name: 'c', config: { dimensions: 3 }, replicationFactor: 1, shards: [{ range: [0, 4294967295], replicas: ['n1'] }] }]);
  const step = (cmd: MetaCommand) => {
    const next = applyMeta(state, cmd);
    state = next.state;
    return next.result;
  };
  const begun = step({ type: 'reshard.begin', collection: 'c', jobId: 'r1', atMs: 1, shards: [{ range: [0, 2147483647], replicas: ['n1'] }, { range: [2147483648, 4294967295], replicas: ['n1'] }] });
  t.same(begun, { ok: true }, JSON.stringify(begun));
  step({ type: 'reshard.progress', jobId: 'r1', atMs: 2, step: 'switching' });
  t.match(state.jobs.r1, { step: 'switching' });
  t.match(step({ type: 'reshard.abort', jobId: 'r1', atMs: 3, step: 'cancelled' }), { ok: false, code: 'conflict' });
  t.match(state.jobs.r1, { step: 'switching' }, 'the job goes on to its switch');
  t.end();
});

t.test('a reshard switch that ran out of time is rolled back: only its own attempt, and no switch of it after', (t) => {
  let state = replay([{ type: 'collection.create', name: 'c', config: { dimensions: 3 }, replicationFactor: 1, shards: [{ range: [0, 4294967295], replicas: ['n1'] }] }]);
  const step = (cmd: MetaCommand) => {
    const next = applyMeta(state, cmd);
    state = next.state;
    return next.result;
  };
  step({ type: 'reshard.begin', collection: 'c', jobId: 'r1', atMs: 1, shards: [{ range: [0, 2147483647], replicas: ['n1'] }, { range: [2147483648, 4294967295], replicas: ['n1'] }] });
  t.match(step({ type: 'reshard.rollback', jobId: 'r1', atMs: 2, attempt: 40, error: 'late' }), { ok: false, code: 'conflict' }, 'not before switching');
  step({ type: 'reshard.progress', jobId: 'r1', atMs: 3, step: 'switching', attempt: 40 });
  t.match(state.jobs.r1, { step: 'switching', reshard: { attempt: 40 } }, 'the attempt comes with the step');
  t.match(step({ type: 'reshard.rollback', jobId: 'r1', atMs: 4, attempt: 39, error: 'late' }), { ok: false, code: 'conflict' }, 'not another attempt than the one switching');
  t.same(step({ type: 'reshard.rollback', jobId: 'r1', atMs: 5, attempt: 40, error: 'the new group has no leader' }), { ok: true });
  t.match(state.jobs.r1, { step: 'catching_up', reshard: { attempt: 40, rollbacks: 1, rolledBackAtMs: 5, lifting: true, error: 'the new group has no leader' } });
  t.ok(state.collections.c!.pending !== undefined, 'the new groups stay placed for the next attempt');
  t.match(step({ type: 'reshard.switch', jobId: 'r1', atMs: 6, attempt: 40 }), { ok: false, code: 'conflict' }, 'a late switch of the rolled-back attempt is refused');
  t.equal(state.collections.c!.shards.length, 1, 'the map did not move');
  t.match(step({ type: 'reshard.abort', jobId: 'r1', atMs: 7, step: 'cancelled' }), { ok: false, code: 'conflict' }, 'no cancel while the fences are being lifted');
  t.match(step({ type: 'reshard.progress', jobId: 'r1', atMs: 8, step: 'switching', attempt: 50 }), { ok: false, code: 'conflict' }, 'nor the next switch');
  step({ type: 'reshard.progress', jobId: 'r1', atMs: 9, lifted: 39 });
  t.equal(state.jobs.r1!.reshard!.lifting, true, 'a report naming another attempt clears nothing');
  step({ type: 'reshard.progress', jobId: 'r1', atMs: 10, lifted: 40 });
  t.equal(state.jobs.r1!.reshard!.lifting, undefined, 'lifted');
  step({ type: 'reshard.progress', jobId: 'r1', atMs: 11, step: 'switching', attempt: 52 });
  t.match(step({ type: 'reshard.switch', jobId: 'r1', atMs: 12, attempt: 40 }), { ok: false, code: 'conflict' }, 'the first attempt stays refused in the second');
  t.same(step({ type: 'reshard.switch', jobId: 'r1', atMs: 13, attempt: 52 }), { ok: true }, 'the second attempt switches');
  t.match(state.jobs.r1, { step: 'cleaning' });
  t.equal(state.collections.c!.shards.length, 2);
  t.match(step({ type: 'reshard.rollback', jobId: 'r1', atMs: 14, attempt: 52, error: 'late' }), { ok: false, code: 'conflict' }, 'a rollback after the switch is refused (so nothing is lifted)');
  t.end();
});

t.test('a running reshard holds its old groups\' logs from where its replay stands; an ended one does not', (t) => {
  let state = replay([
    { type: 'collection.create', name: 'c', config: { dimensions: 3 }, replicationFactor: 1, shards: [{ range: [0, 2147483647], replicas: ['n1'] }, { range: [2147483648, 4294967295], replicas: ['n1'] }] },
  ]);
  const [g0, g1] = state.collections.c!.shards.map((s) => s.group) as [string, string];
  const step = (cmd: MetaCommand) => (state = applyMeta(state, cmd).state);
  t.equal(reshardLogFloor(state, g0), undefined, 'no reshard: no floor');
  step({ type: 'reshard.begin', collection: 'c', jobId: 'r1', atMs: 1, shards: [{ range: [0, 4294967295], replicas: ['n1'] }] });
  t.equal(reshardLogFloor(state, g0), 0, 'until the copy has recorded where it read a source, its whole log is held');
  step({ type: 'reshard.progress', jobId: 'r1', atMs: 2, group: g0, source: { from: 40 } });
  t.equal(reshardLogFloor(state, g0), 40, 'the copy read the state at 40: its replay starts after it');
  t.equal(reshardLogFloor(state, g1), 0, 'and the other source, not read yet, is still held whole');
  step({ type: 'reshard.progress', jobId: 'r1', atMs: 3, group: g0, source: { copied: true, docs: 5, tailed: 40 } });
  step({ type: 'reshard.progress', jobId: 'r1', atMs: 4, group: g0, source: { tailed: 75 } });
  t.equal(reshardLogFloor(state, g0), 75, 'the floor follows the replay');
  step({ type: 'reshard.progress', jobId: 'r1', atMs: 5, step: 'switching' });
  t.equal(reshardLogFloor(state, g0), 75, 'and holds through the switch');
  step({ type: 'reshard.switch', jobId: 'r1', atMs: 6 });
  step({ type: 'reshard.progress', jobId: 'r1', atMs: 7, step: 'done' });
  t.equal(reshardLogFloor(state, g0), undefined, 'an ended reshard holds nothing');
  t.end();
});

t.test('an entry this build cannot read: skipped while every member speaks its protocol, else the group stops here', (t) => {
  const unreadable: Entry = { index: 3, term: 1, kind: 'normal', data: encodeCbor({ type: 'node.rename', from: 'n1', to: 'n9' }) };
  const join = (index: number, protocol: number | undefined): Entry => ({
    index,
    term: 1,
    kind: 'normal',
    data: encodeCbor({ type: 'node.join', node: { name: `n${index}`, incarnation: 'a', http: 'http://x', grpc: `h:${index}`, zone: 'z', version: 'v', ...(protocol === undefined ? {} : { protocol }) }, atMs: 0 }),
  });

  const skipped: number[] = [];
  const same = new MetaFsm((index) => skipped.push(index));
  same.apply(join(1, PROTOCOL));
  same.apply(join(2, undefined)); // a build from before protocols
  t.match(same.apply(unreadable), { result: { ok: false, code: 'conflict' }, index: 3 }, 'nobody newer: a bug, skipped on every replica alike');
  t.same(skipped, [3]);
  t.equal(same.applied, 3);

  const behind = new MetaFsm(() => t.fail('not skipped'));
  behind.apply(join(1, PROTOCOL));
  behind.apply(join(2, PROTOCOL + 1));
  t.throws(() => behind.apply(unreadable), new RegExp(`this build \\(cluster protocol ${PROTOCOL}\\) cannot read metadata entry 3, which newer members may have written \\(n2 \\(v, protocol ${PROTOCOL + 1}\\)\\): upgrade this node`));
  t.equal(behind.applied, 2, 'the entry is not counted as applied: the node resumes from it on the newer build');
  t.end();
});

// A lookup by name in a plain object finds Object.prototype's members: "constructor" read as a
// collection, VDB, node or tenant that exists, and every request naming it answered 500 (found
// by the route fuzzer on a one-node cluster). The state's maps have no prototype.
t.test('names an object\'s prototype has are names like any other, through a snapshot too', (t) => {
  const config = { hashFunction: 'phash2' as const, replicaFactor: 1, zones: [], createdMs: 0 };
  for (const name of ['constructor', 'toString', 'valueOf', 'hasOwnProperty', 'isPrototypeOf']) {
    const fsm = new MetaFsm(() => undefined);
    const cmds: MetaCommand[] = [
      { type: 'collection.delete', name },
      { type: 'node.join', node: { name, incarnation: 'a', http: 'h', grpc: 'g:1', zone: 'z' }, atMs: 1 },
      { type: 'collection.create', name, config: { dimensions: 4 }, replicationFactor: 1, shards: [{ range: [0, 4294967295], replicas: [name] }] },
      { type: 'vdb.create', name, config, shards: [{ range: [0, 4294967295], replicas: [name] }] },
      { type: 'tenant.create', tenant: { tenant_id: name, limits: { rpm_limit: 1, max_vectors: 1, max_collections: 1, max_storage_mb: 1 }, created_at: 1 }, key: { key_id: 'k1', tenant_id: name, digest: 'g', key_prefix: 'p', created_at: 1 } },
    ];
    const results = entries(cmds).map((e) => fsm.apply(e)?.result);
    t.match(results[0], { ok: false, code: 'not_found' }, `${name}: no collection yet`);
    t.same(results.slice(1), [{ ok: true }, { ok: true }, { ok: true }, { ok: true }], `${name}: a node, a collection, a VDB and a tenant of that name are made`);
    const restored = new MetaFsm(() => undefined);
    restored.restore(fsm.snapshot());
    for (const state of [fsm.state, restored.state]) {
      t.equal(state.nodes[name]?.incarnation, 'a');
      t.equal(state.collections[name]?.replicationFactor, 1);
      t.equal(state.vdbs[name]?.shards.length, 1);
      t.equal(state.tenants[name]?.tenant_id, name);
      const other = name === 'toString' ? 'valueOf' : 'toString';
      t.equal(state.collections[other], undefined, `${other} is still no collection`);
      t.equal(state.vdbs.__proto__, undefined, 'nor __proto__');
    }
  }
  t.end();
});
