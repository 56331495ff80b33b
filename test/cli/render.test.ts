// What firkin prints for each answer, and the shape checks that guard it.
import t from 'tap';
import { asHealth, asJobs, asNodeDetails, asNodeStatus, asNodes, asStatus, asTasks, asVdbRebalance } from '../../src/cli/contract.js';
import { failureLine } from '../../src/cli/failure.js';
import { DETAILS, DETAILS_TABLE } from './fixtures.js';
import { formatAgo, progressBar, renderClusterHealth, renderJobs, renderNodeDetails, renderNodeNames, renderNodeStatus, renderReshardProgress, renderShards, renderStatus, renderTasks, renderVdbCancel, renderVdbProgress } from '../../src/cli/render.js';

t.test('status: this node, the leader, members and the unhealthy ones', (t) => {
  t.equal(
    renderStatus({ state: 'member', is_leader: false, leader: 'n1', node: 'n2', nodes: ['n1', 'n2', 'n3'], healthy_nodes: ['n1', 'n2'] }),
    ['node       n2', 'state      member', 'leader     n1', 'nodes      n1, n2, n3', 'healthy    n1, n2', 'unhealthy  n3', ''].join('\n'),
  );
  t.equal(
    renderStatus({ state: 'member', is_leader: true, leader: 'n1', node: 'n1', nodes: ['n1'], healthy_nodes: ['n1'] }),
    ['node     n1', 'state    member', 'leader   n1 (this node)', 'nodes    n1', 'healthy  n1', ''].join('\n'),
  );
  t.equal(
    renderStatus({ state: 'joining', is_leader: false, leader: null, node: 'n4', nodes: [] }),
    ['node    n4', 'state   joining', 'leader  -', 'nodes   -', ''].join('\n'),
    'no healthy line when the node does not report it',
  );
  t.end();
});

t.test('nodes: plain names, and the detailed table', (t) => {
  t.equal(renderNodeNames({ nodes: ['n1', 'n2'] }), 'n1\nn2\n');
  t.equal(renderNodeNames({ nodes: [] }), '');
  t.equal(renderNodeDetails(DETAILS), DETAILS_TABLE);
  t.match(renderNodeDetails({ ...DETAILS, leader: null }), /^leader -  term 4/);
  t.end();
});

t.test('join, leave, remove', (t) => {
  t.equal(renderNodeStatus({ node: 'n4', status: 'joining' }, 'seed 127.0.0.1:9081'), 'n4: joining (seed 127.0.0.1:9081)\n');
  t.equal(renderNodeStatus({ node: 'n2', status: 'leaving' }), 'n2: leaving\n');
  t.equal(renderNodeStatus({ node: 'n3\u001b[2J', status: 'removed' }), 'n3\uFFFD[2J: removed\n', 'a name from the network cannot drive the terminal');
  t.end();
});

t.test('shards: replicas, leader and term, lag per member (learners marked)', (t) => {
  const out = renderShards({
    collection: 'c',
    replication_factor: 3,
    shards: [
      { shard: 0, group: 'vs0', replicas: ['n1', 'n2', 'n4'], leader: 'n1', term: 3, learners: ['n4'], lag: { n1: 0, n2: 1, n4: null } },
      { shard: 1, group: 'vs1', replicas: ['n2', 'n3', 'n1'], leader: null, error: 'no_quorum', message: 'x' },
      { shard: 2, group: 'vs2', replicas: ['n1', 'n2', 'n3'], leader: 'n2', term: 4, lag: { n1: 0, n2: 0, n3: 0 }, down: ['n3'] },
    ],
  });
  t.equal(out.split('\n')[0], 'c: replication factor 3');
  t.match(out, /0 +vs0 +n1, n2, n4 +n1 \(term 3\) +n1:0 n2:1 n4\+:\?/);
  t.match(out, /1 +vs1 +n2, n3, n1 +- \(no_quorum\) +-/);
  t.match(out, /2 +vs2 +n1, n2, n3 +n2 \(term 4\) +n1:0 n2:0 n3:down/, 'a replica on a node that is down shows it, not its last lag');
  t.equal(out.trimEnd().split('\n').at(-1), 'not settled: shard 0 (n4 a learner; n4 not heard from), shard 1 (no leader), shard 2 (n3 down)');
  const calm = renderShards({ collection: 'c', replication_factor: 2, shards: [{ shard: 0, group: 'vs0', replicas: ['n1', 'n2'], leader: 'n1', term: 3, lag: { n1: 0, n2: 100 } }] });
  t.equal(calm.trimEnd().split('\n').at(-1), 'settled: every shard has a leader and its placement, all in step');
  const behind = renderShards({ collection: 'c', replication_factor: 2, shards: [{ shard: 0, group: 'vs0', replicas: ['n1', 'n2'], leader: 'n1', term: 3, lag: { n1: 0, n3: 101 } }] });
  t.equal(behind.trimEnd().split('\n').at(-1), 'not settled: shard 0 (members n1, n3 are not its placement; n3 101 entries behind)');
  t.end();
});

t.test('heartbeat ages', (t) => {
  const cases: [number | null, string][] = [
    [null, '-'],
    [-1, '-'],
    [Number.NaN, '-'],
    [0, '0ms ago'],
    [999.9, '999ms ago'],
    [1_000, '1.0s ago'],
    [59_999, '59.9s ago'],
    [60_000, '1m00s ago'],
    [245_000, '4m05s ago'],
    [3_599_999, '59m59s ago'],
    [3_600_000, '1h00m ago'],
    [7_620_000, '2h07m ago'],
  ];
  for (const [ms, text] of cases) t.equal(formatAgo(ms), text, String(ms));
  t.end();
});

t.test('answers of the wrong shape are one-line bad_response failures', (t) => {
  const status = { state: 'member', is_leader: false, leader: null, node: 'n1', nodes: ['n1'] };
  t.same(asStatus({ ...status, extra: 1 }), status, 'unknown fields are dropped');
  t.throws(() => asStatus({ ...status, nodes: 'n1' }), { code: 'bad_response', message: 'cluster status: nodes must be a list of names, got "n1"' });
  t.throws(() => asStatus([]), { code: 'bad_response', message: 'cluster status is not a JSON object' });
  t.throws(() => asStatus({ ...status, healthy_nodes: [1] }), { code: 'bad_response' });
  t.throws(() => asNodes({}), { code: 'bad_response', message: 'cluster nodes: nodes must be a list of names, got nothing' });
  t.throws(() => asNodeDetails({ leader: null, term: 1, commit: 1, applied: 1, nodes: [{ name: 'n1' }] }), {
    code: 'bad_response',
    message: 'cluster node 0: http must be a string, got nothing',
  });
  const { shard_leaders: _l, ...older } = DETAILS.nodes[1]!;
  t.equal(asNodeDetails({ ...DETAILS, nodes: [older] }).nodes[0]!.shard_leaders, null, "an older server's node without shard_leaders: not known");
  t.throws(() => asNodeDetails({ ...DETAILS, nodes: [{ ...older, shard_leaders: 'x' }] }), { code: 'bad_response', message: 'cluster node 0: shard_leaders must be a number or null, got "x"' });
  t.throws(() => asNodeStatus({ node: 'n1' }, 'leave answer'), { code: 'bad_response', message: 'leave answer: status must be a string, got nothing' });
  t.equal(failureLine('not_found', 'no node\nnamed "x"\r\n'), 'firkin: not_found: no node named "x"');
  t.end();
});

t.test('reshard progress', async (t) => {
  t.equal(progressBar(0), '[--------------------]   0%');
  t.equal(progressBar(0.4), '[########------------]  40%');
  t.equal(progressBar(1.7), '[####################] 100%', 'clamped');
  t.equal(progressBar(Number.NaN), '[--------------------]   0%');
  const job = { collection: 'c', state: 'copying', old_shards: 2, new_shards: 5, documents_migrated: 500, documents_expected: 2000, last_error: null };
  t.equal(renderReshardProgress(job), 'reshard c 2 -> 5: copying     [#####---------------]  25% 500/2000 documents\n');
  t.match(renderReshardProgress({ ...job, last_error: 'no leader\nyet' }), /\(last error: no leader\uFFFDyet\)\n$/, 'errors shown on one line');
  t.match(renderReshardProgress({ ...job, state: 'done', documents_expected: null }), /done        \[#{20}\] 100% 500 documents\n$/);
  t.match(renderReshardProgress({ ...job, state: 'done', documents_migrated: 2040 }), /100% 2040 documents \(2000 when it began\)\n$/, 'writes during the copy take the count past the total it began with: said so, not "2040/2000"');
});

/** GET /_cluster/jobs as the metadata records them: a leave, a reshard that ended, a VDB split under way. */
const JOBS = {
  jobs: [
    { id: 'leave-1', kind: 'leave', target: 'n3', step: 'done', createdAtMs: 1_000, updatedAtMs: 5_000 },
    { id: 'reshard-a', kind: 'reshard', target: 'docs', step: 'done', createdAtMs: 2_000, updatedAtMs: 9_000, reshard: { oldShards: 2, newShards: 5, sources: {}, migrated: 2000, expected: 2000 } },
    { id: 'vdb-split-b', kind: 'vdb-rebalance', target: 'v1', step: 'copying', createdAtMs: 10_000, updatedAtMs: 60_000, vdb: { op: 'split', source: 0, target: 2, moving: [0, 9], from: null, copied: 400, expected: 1000, cancelRequested: true, error: 'n2: timeout' } },
  ],
};

t.test('jobs: running first, then the ended ones, newest first; progress in words', async (t) => {
  const jobs = asJobs(JOBS);
  t.equal(
    renderJobs(jobs, 61_000),
    [
      'ID           KIND           TARGET  STEP     PROGRESS                                                                UPDATED',
      'vdb-split-b  vdb-rebalance  v1      copying  split 0 -> 2, 400/1000 documents, cancel requested, error: n2: timeout  1.0s ago',
      'reshard-a    reshard        docs    done     2 -> 5 shards, 2000/2000 documents                                      52.0s ago',
      'leave-1      leave          n3      done     -                                                                       56.0s ago',
      '',
    ].join('\n'),
  );
  const waiting = asJobs({ jobs: [{ id: 'leave-2', kind: 'leave', target: 'n2', step: 'leave_voters', createdAtMs: 0, updatedAtMs: 1_000, waiting: 'no other live node can take\nn2\'s replicas' }] });
  t.match(renderJobs(waiting, 2_000), /leave_voters {2}waiting: no other live node can take\uFFFDn2's replicas {2}1\.0s ago/, "a leave's reason to wait, on one line");
  t.equal(renderJobs([], 0), 'no jobs\n');
  t.throws(() => asJobs({ jobs: [{ id: 'x' }] }), { code: 'bad_response', message: 'job 0: kind must be a string, got nothing' });
  t.throws(() => asJobs({}), { code: 'bad_response', message: 'cluster jobs: jobs must be a list, got nothing' });
});

t.test('tasks: one row each, the most recently updated first; progress in words', async (t) => {
  const tasks = asTasks([
    { type: 'replication', source: 'src', target: 'http://n2:8080/db/dst', continuous: true, docs_read: 120, docs_written: 118, doc_write_failures: 2, started_on: 10, updated_on: 50 },
    { type: 'database_compaction', node: 'n1', database: 'orders', changes_done: 512, total_changes: 2048, progress: 25, started_on: 40, updated_on: 58 },
    { type: 'cluster_vdb_rebalance', node: 'n1', target: 'users', step: 'copying', vdb: { op: 'split', copied: 300, expected: 900 }, started_on: 20, updated_on: 59 },
    { type: 'vdb_import', node: 'n2', pid: 'vdb_import:3', vdb: 'orders_v', source_db: 'orders', on_conflict: 'skip', batch_size: 100, docs_read: 400, docs_written: 390, docs_skipped: 10, errors: 0, total_docs: 1000, progress: 40, started_on: 30, updated_on: 57 },
  ]);
  t.equal(
    renderTasks(tasks, 60_000),
    [
      'TYPE                   NODE  WHAT                                       PROGRESS                                         UPDATED',
      'cluster_vdb_rebalance  n1    users                                      copying, 300 of 900 documents                    1.0s ago',
      'database_compaction    n1    orders                                     25% (512 of 2048 records)                        2.0s ago',
      'vdb_import             n2    orders -> vdb orders_v                     40% (400 of 1000 read, 390 written, 10 skipped)  3.0s ago',
      'replication            -     src -> http://n2:8080/db/dst (continuous)  118 of 120 documents written, 2 failed           10.0s ago',
      '',
    ].join('\n'),
  );
  const past = asTasks([{ type: 'cluster_reshard', node: 'n1', target: 'c', step: 'done', reshard: { migrated: 204, expected: 200 }, started_on: 20, updated_on: 59 }]);
  t.match(renderTasks(past, 60_000), /done, 204 documents \(200 when it began\)/, 'copies past the starting count say so');
  t.equal(renderTasks([], 0), 'no active tasks\n');
  t.throws(() => asTasks({}), { code: 'bad_response', message: 'active tasks: expected a list' });
  t.throws(() => asTasks([{ type: 'replication' }]), { code: 'bad_response', message: 'task 0: updated_on must be a number, got nothing' });
});

t.test('a VDB split or merge: its progress line, and its cancel', async (t) => {
  const [, , split] = asJobs(JOBS);
  t.equal(renderVdbProgress({ ...split!, error: undefined }), 'v1 split 0 -> 2: copying     [########------------]  40% 400/1000 documents\n');
  t.match(renderVdbProgress(split!), /\(last error: n2: timeout\)\n$/);
  t.match(renderVdbProgress({ ...split!, step: 'cleaning' }), /cleaning    \[#{20}\] 100%/);
  const cancelled = asVdbRebalance({ id: 'vdb-merge-c', vdb: 'v1', op: 'merge', state: 'cancelled', source: 1, target: 0, moving: [5, 9], documents_copied: 30, documents_expected: 80, cancel_requested: true, last_error: null });
  t.equal(renderVdbCancel(cancelled), 'merge of v1 shard 1 -> 0: cancelled (30 documents had been copied; the shards are as they were)\n');
  t.equal(renderVdbCancel({ ...cancelled, state: 'copying' }), 'merge of v1 shard 1 -> 0: cancel taken, the job is still copying (follow it with firkin cluster jobs)\n');
  t.equal(renderVdbCancel({ ...cancelled, state: 'failed', last_error: 'v1 was deleted' }), 'merge of v1 shard 1 -> 0: failed (v1 was deleted)\n');
  t.throws(() => asVdbRebalance({ vdb: 'v1' }), { code: 'bad_response', message: 'VDB rebalance job: op must be a string, got nothing' });
});

t.test('cluster health: a row per node, the problems under it, a summary', async (t) => {
  t.equal(
    renderClusterHealth([
      { name: 'n1', member: 'up', health: { status: 'ok', node: 'n1', problems: [] } },
      { name: 'n2', member: 'up', health: { status: 'degraded', node: 'n2', problems: ['cluster: node n3 is down', 'shards: shard replica vs1 is loading\nits snapshot'] } },
      { name: 'n3', member: 'down', health: { status: 'unreachable', problems: ['cannot reach http://127.0.0.1:8083: ECONNREFUSED'] } },
    ]),
    [
      'NODE  HEALTH       MEMBER  PROBLEMS',
      'n1    ok           up      0',
      'n2    degraded     up      2',
      'n3    unreachable  down    1',
      '',
      'n2: cluster: node n3 is down',
      'n2: shards: shard replica vs1 is loading\uFFFDits snapshot',
      'n3: cannot reach http://127.0.0.1:8083: ECONNREFUSED',
      '',
      '3 nodes: 1 ok, 2 not',
      '',
    ].join('\n'),
  );
  t.equal(renderClusterHealth([{ name: 'solo', member: undefined, health: { status: 'ok', node: 'solo', problems: [] } }]), ['NODE  HEALTH  MEMBER  PROBLEMS', 'solo  ok      -       0', '', '1 node: 1 ok', ''].join('\n'));
  t.same(asHealth({ status: 'ok', node: 'n1', uptime_s: 3 }), { status: 'ok', node: 'n1', problems: [] });
  t.throws(() => asHealth({ status: 'ok' }), { code: 'bad_response', message: 'health: node must be a string, got nothing' });
});
