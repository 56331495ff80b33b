// Which version each member runs: recorded in its node record when it joins, refreshed when it
// restarts on another build, shown by /_cluster/nodes, and a /health problem while the members
// disagree (a rolling upgrade under way, or one forgotten).
import fc from 'fast-check';
import t from 'tap';
import { META_COMMAND_PROTOCOL, META_COMMAND_TYPES, checkMetaCommand } from '../../src/cluster/meta-state.js';
import type { Applied } from '../../src/cluster/metadata.js';
import { Transport } from '../../src/cluster/transport.js';
import { PROTOCOL, UNKNOWN_VERSION, membersByVersion, mixedVersionsProblem, requireProtocol } from '../../src/cluster/versions.js';
import { decodeCbor, encodeCbor } from '../../src/core/codec.js';
import { FirkinError } from '../../src/core/errors.js';
import { VERSION } from '../../src/version.js';
import { startTestNode, tempDir } from '../support/node.js';
import { freePorts } from '../raft/kv-cluster.js';
import { waitFor } from '../support/wait.js';

t.test('mixedVersionsProblem: none while every member agrees, else each member named once with its version', async () => {
  const node = fc.record({ name: fc.constantFrom('a', 'b', 'c', 'd', 'e'), version: fc.option(fc.constantFrom('1.0.0', '1.1.0', '2.0.0'), { nil: undefined }) });
  fc.assert(
    fc.property(fc.uniqueArray(node, { selector: (n) => n.name, maxLength: 5 }), (nodes) => {
      const problem = mixedVersionsProblem(nodes);
      const versions = new Set(nodes.map((n) => n.version ?? UNKNOWN_VERSION));
      if (versions.size <= 1) return problem === undefined;
      const byVersion = membersByVersion(nodes);
      return (
        problem !== undefined &&
        [...byVersion.values()].flat().sort().join() === nodes.map((n) => n.name).sort().join() &&
        [...versions].every((v) => problem.includes(` on ${v}`)) &&
        nodes.every((n) => byVersion.get(n.version ?? UNKNOWN_VERSION)!.includes(n.name))
      );
    }),
  );
});

t.test('requireProtocol: refuses while any member is behind, naming those', async (t) => {
  const node = fc.record({ name: fc.constantFrom('a', 'b', 'c', 'd'), version: fc.option(fc.constantFrom('1.0.0', '2.0.0'), { nil: undefined }), protocol: fc.option(fc.nat({ max: 3 }), { nil: undefined }) });
  fc.assert(
    fc.property(fc.uniqueArray(node, { selector: (n) => n.name, maxLength: 4 }), fc.nat({ max: 3 }), (nodes, needed) => {
      const behind = nodes.filter((n) => (n.protocol ?? 0) < needed);
      try {
        requireProtocol(nodes, needed, 'doing it');
        return behind.length === 0;
      } catch (err) {
        return err instanceof FirkinError && err.code === 'unavailable' && behind.length > 0 && behind.every((n) => err.message.includes(`${n.name} (`)) && nodes.filter((n) => !behind.includes(n)).every((n) => !err.message.includes(`${n.name} (`));
      }
    }),
  );
  t.ok(PROTOCOL >= 1, 'this build speaks the protocol of the VDB listing');
});

t.test('a member on another version is shown and makes /health degraded until it is upgraded', async (t) => {
  const [grpcA, grpcB] = await freePorts(2);
  const cluster = { SERVICE_ENABLE_CLUSTER: 'true', RELEASE_COOKIE: 'versions-cookie' };
  const a = await startTestNode({ ...cluster, SERVICE_NODE_NAME: 'a', SERVICE_GRPC_PORT: String(grpcA) });
  t.teardown(() => a.close());
  const member = (n: typeof a) => waitFor(async () => ((await n.request('GET', '/vectordb/cluster/status')).body.state === 'member' ? true : undefined), { what: 'a member', timeoutMs: 30_000 });
  await member(a);
  const bEnv = { ...cluster, SERVICE_NODE_NAME: 'b', SERVICE_GRPC_PORT: String(grpcB), SERVICE_SEED_NODES: `127.0.0.1:${grpcA}`, SERVICE_DATA_DIR: tempDir() };
  // b plays a build from before cluster protocols: it records none, and cannot serve a VDB listing's shard reads.
  let b = await startTestNode(bEnv, { version: '0.0.1-old', protocol: 0 });
  t.teardown(() => b.close());
  await member(b);

  const versionsOf = async () => Object.fromEntries(((await a.request('GET', '/_cluster/nodes')).body.nodes as { name: string; version: string }[]).map((n) => [n.name, n.version]));
  t.same(await waitFor(async () => ((await versionsOf()).b === '0.0.1-old' ? versionsOf() : undefined), { what: "b's version recorded" }), { a: VERSION, b: '0.0.1-old' });
  const problems = async (n: typeof a) => ((await n.request('GET', '/health')).body.cluster.problems ?? []) as string[];
  const mixed = await waitFor(async () => (await problems(a)).find((p) => p.startsWith('members run different versions')), { what: 'the mixed-version problem' });
  t.equal(mixed, `members run different versions (b on 0.0.1-old; a on ${VERSION}): finish the rolling upgrade, as a newer node's requests may be refused by an older one`);
  t.equal((await a.request('GET', '/health')).body.status, 'degraded');
  t.ok((await problems(b)).includes(mixed), 'every member says so');
  // A VDB listing needs protocol 1 of every member: refused with the reason, not sent to b.
  t.equal((await a.request('POST', '/vdb', { body: { name: 'v', shard_count: 2, placement: { replica_factor: 2 } } })).status, 201);
  t.equal((await a.request('PUT', '/vdb/v/doc', { body: { x: 1 } })).status, 201);
  for (const n of [a, b]) {
    const refused = await n.request('GET', '/vdb/v/_all_docs');
    t.equal(refused.status, 503);
    t.equal(refused.body.message, 'listing VDB "v" (_all_docs) needs every member on cluster protocol 1 or later; b (0.0.1-old) runs an older Firkin: finish the rolling upgrade');
  }
  t.equal((await a.request('GET', '/vdb/v/doc')).status, 200, 'what both protocols serve goes on');
  // Protocol 2: an older member is not asked for its tasks, and a cancel says it was not asked.
  t.equal((await a.request('GET', '/_active_tasks')).status, 200, "the task list answers without b's");
  const cancel = await a.request('DELETE', '/vdb/v/_import');
  t.same([cancel.status, cancel.body.message], [404, 'no import into VDB "v" is running on any member; b runs an older Firkin and was not asked: cancel there']);
  // Protocol 3: CouchDB's replication protocol on a VDB (b's replicas could not decode a `local` entry).
  for (const [method, path, body] of [['PUT', '/vdb/v/_local/cp', { seq: 1 }], ['POST', '/vdb/v/_revs_diff', { doc: ['1-abc'] }], ['GET', '/vdb/v/_changes?style=all_docs', undefined]] as const) {
    const refused = await a.request(method, path, body === undefined ? {} : { body });
    t.same([refused.status, refused.body.message], [503, `${/_local/.test(path) ? '_local documents' : path.includes('_changes') ? '_changes?style=all_docs' : '_revs_diff'} on VDB "v" needs every member on cluster protocol 3 or later; b (0.0.1-old) runs an older Firkin: finish the rolling upgrade`], `${method} ${path}: 503 while b is behind`);
  }
  // Protocol 4: the listing of a VDB's `_local` documents (a shard's `locals` read).
  const listing = await a.request('GET', '/vdb/v/_local_docs');
  t.same([listing.status, listing.body.message], [503, '_local_docs on VDB "v" needs every member on cluster protocol 4 or later; b (0.0.1-old) runs an older Firkin: finish the rolling upgrade'], '_local_docs: 503 while b is behind');
  // Protocol 6: a VDB's `_explain` (a shard's `explain` read).
  const explained = await a.request('POST', '/vdb/v/_explain', { body: { selector: { x: 1 } } });
  t.same([explained.status, explained.body.message], [503, '_explain on VDB "v" needs every member on cluster protocol 6 or later; b (0.0.1-old) runs an older Firkin: finish the rolling upgrade'], '_explain: 503 while b is behind');

  // Protocol 4 also carries a split's `_local` documents into the new shard. b on protocol 3
  // holds `_local` documents but could not apply the carry: the split goes on without it, and
  // the checkpoints of the moved range are left behind (a replication through one restarts).
  await b.close();
  b = await startTestNode(bEnv, { version: '0.0.3-old', protocol: 3 });
  await waitFor(async () => ((await versionsOf()).b === '0.0.3-old' ? true : undefined), { what: "b's protocol-3 build recorded", timeoutMs: 30_000 });
  t.equal((await a.request('POST', '/vdb', { body: { name: 'w', shard_count: 2, placement: { replica_factor: 2 } } })).status, 201);
  const checkpoints = Array.from({ length: 12 }, (_, i) => `_local/cp${i}`);
  for (const id of checkpoints) t.equal((await a.request('PUT', `/vdb/w/${id}`, { body: { seq: 1 } })).status, 201, `${id} written on protocol 3`);
  const split = await a.request('POST', '/vdb/w/_shards/0/_split');
  t.equal(split.status, 200, `the split goes on (${JSON.stringify(split.body)})`);
  const found = await Promise.all(checkpoints.map(async (id) => (await a.request('GET', `/vdb/w/${id}`)).status));
  t.ok(found.includes(404), `the checkpoints of the moved range were left behind (${found.join(' ')})`);
  t.ok(found.includes(200), 'the others are where they were');

  // Protocol 8 replays a reshard's tail to each new group in runs (`vshard.proposeMany`). With
  // b on protocol 7 the replay sends one command a call, as before 8: a reshard under writes
  // still ends with every acknowledged write, once, in the new layout.
  await b.close();
  b = await startTestNode(bEnv, { version: '0.0.7-old', protocol: 7 });
  await waitFor(async () => ((await versionsOf()).b === '0.0.7-old' ? true : undefined), { what: "b's protocol-7 build recorded", timeoutMs: 30_000 });
  t.equal((await a.request('PUT', '/vectordb/collections/rs', { body: { dimensions: 4, num_shards: 1, replication_factor: 2 } })).status, 201);
  const vec = (i: number) => [Math.sin(i), Math.cos(i), (i % 5) / 5, 1];
  let written = 0;
  const writeBatch = async (n: typeof a) => {
    const documents = Array.from({ length: 20 }, (_, j) => ({ id: `d${written + j}`, text: `t${written + j}`, metadata: {}, vector: vec(written + j) }));
    const r = await n.request('POST', '/vectordb/collections/rs/docs', { body: { documents } });
    if (r.status === 200) written += documents.length;
    return r.status;
  };
  for (let i = 0; i < 10; i++) t.equal(await writeBatch(a), 200);
  const started = await a.request('POST', '/vectordb/collections/rs/reshard', { body: { num_shards: 2 } });
  t.equal(started.status, 200, JSON.stringify(started.body));
  let job: { state?: string; last_error?: string } = {};
  let during = 0;
  // Writes go on (through both nodes) until the job ends: the replay has a tail to forward.
  const deadline = Date.now() + 120_000;
  while (job.state !== 'done' && Date.now() < deadline) {
    if (job.state === 'failed' || job.state === 'cancelled') break;
    if ((await writeBatch(during % 2 === 0 ? a : b)) === 200) during++;
    job = (await a.request('GET', '/vectordb/collections/rs/reshard')).body;
  }
  t.equal(job.state, 'done', `the reshard ends (${job.last_error ?? ''})`);
  t.ok(during > 0, `writes were acknowledged while it ran (${during} batches)`);
  const info = (await a.request('GET', '/vectordb/collections/rs')).body;
  t.equal(info.count, written, 'every acknowledged write is there, once');
  t.equal((await a.request('GET', `/vectordb/collections/rs/docs/d${written - 1}`)).status, 200, 'the last one included');

  // The upgrade: b restarts on this build, and its record follows.
  await b.close();
  b = await startTestNode(bEnv);
  await waitFor(async () => ((await versionsOf()).b === VERSION ? true : undefined), { what: "b's new version recorded", timeoutMs: 30_000 });
  await waitFor(async () => ((await problems(a)).some((p) => p.startsWith('members run different versions')) ? undefined : true), { what: 'the problem gone' });
  t.equal((await a.request('GET', '/health')).body.status, 'ok');
  const listed = await a.request('GET', '/vdb/v/_all_docs');
  t.equal(listed.status, 200, 'once every member speaks it, the listing answers');
  t.same(listed.body.rows.map((r: { id: string }) => r.id), ['doc']);
  t.equal((await b.request('PUT', '/vdb/v/_local/cp', { body: { seq: 1 } })).status, 201, 'and a _local write is taken');
  t.same((await a.request('GET', '/vdb/v/_local_docs')).body.rows, [{ id: '_local/cp', key: '_local/cp', value: { rev: '0-1' } }], 'and listed');
});

t.test('every metadata command type is read by this build, and by the protocol it names', async (t) => {
  for (const [type, protocol] of Object.entries(META_COMMAND_PROTOCOL)) t.ok(protocol >= 0 && protocol <= PROTOCOL, `${type}: protocol ${protocol}`);
  t.same([...META_COMMAND_TYPES].sort(), Object.keys(META_COMMAND_PROTOCOL).sort());
  t.throws(() => checkMetaCommand({ type: 'future.command' }), /unknown type "future.command"/);
});

t.test('the metadata leader refuses, before its log, a forwarded command it cannot read', async (t) => {
  const [grpc] = await freePorts(1);
  const cookie = 'versions-cookie';
  const a = await startTestNode({ SERVICE_ENABLE_CLUSTER: 'true', RELEASE_COOKIE: cookie, SERVICE_NODE_NAME: 'a', SERVICE_GRPC_PORT: String(grpc) });
  t.teardown(() => a.close());
  await waitFor(async () => ((await a.request('GET', '/vectordb/cluster/status')).body.state === 'member' ? true : undefined), { what: 'a member', timeoutMs: 30_000 });
  // A peer with the cookie playing a newer build's member: it forwards what a's build cannot read.
  const newer = new Transport({ nodeId: 'newer', cookie, listen: '127.0.0.1:0', peers: new Map([['a', `127.0.0.1:${grpc}`]]), onMessages: () => undefined, heartbeatIntervalMs: 1_000 });
  await newer.start();
  t.teardown(() => newer.close());
  await waitFor(() => newer.isConnected('a'), { what: 'the link to a' });
  const reply = decodeCbor(await newer.call('a', 'meta.propose', encodeCbor({ type: 'future.command', x: 1 }), 10_000)) as Applied;
  // Logged, it would have taken an index (and, on a build of another protocol, stopped the group).
  t.match(reply, { index: 0, result: { ok: false, code: 'unavailable', message: /^the metadata leader a \(cluster protocol \d+\) cannot read the command \(metadata command: unknown type "future.command"\): it runs an older Firkin than the proposer; finish the rolling upgrade$/ } });
  t.equal((await a.request('GET', '/health')).body.status, 'ok');
  // What it reads it logs as before.
  const known = decodeCbor(await newer.call('a', 'meta.propose', encodeCbor({ type: 'vdb.delete', name: 'nothing' }), 10_000)) as Applied;
  t.ok(known.index > 0, 'a command it reads is logged');
  t.match(known.result, { ok: false, code: 'not_found' });
});
