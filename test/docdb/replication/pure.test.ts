// The pure parts of replication: filters, ids, checkpoints, backoff, task states, policies,
// endpoint parsing and the outbound allow-list.
import fc from 'fast-check';
import t from 'tap';
import { FirkinError } from '../../../src/core/errors.js';
import { compareHlc, hlcToText, parseHlc } from '../../../src/core/hlc.js';
import { nominalDelayMs } from '../../../src/core/backoff.js';
import { CHECKPOINT, type CheckpointEntry, nextCheckpoint, readCheckpoint, replicationId, startSeq } from '../../../src/docdb/replication/checkpoint.js';
import { authHeader, checkOutbound, displayEndpoint, parseAuth, parseEndpoint, storeEndpoint, loadEndpoint } from '../../../src/docdb/replication/endpoint-spec.js';
import { matchesPath, parseFilter, passesFilter } from '../../../src/docdb/replication/filter.js';
import { expandPolicy, parsePolicy, publicPolicy } from '../../../src/docdb/replication/policy.js';
import { INITIAL, REPLICATION_BACKOFF, type TaskEvent, type TaskMachine, step } from '../../../src/docdb/replication/task-state.js';
import { fcParams } from '../../support/fc.js';

const seededRand = (seed: number) => {
  let x = seed >>> 0 || 1;
  return { int: (n: number) => ((x = (x * 1103515245 + 12345) >>> 0) % Math.max(1, n)) };
};

function codeOf(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (err) {
    return err instanceof FirkinError ? err.code : `not a FirkinError: ${String(err)}`;
  }
  return undefined;
}

function badRequest(tt: { equal: (a: unknown, b: unknown, m: string) => void }, fn: () => unknown, what: string) {
  tt.equal(codeOf(fn), 'bad_request', what);
}

t.test('paths filter: <field>/<value> selects documents whose field has that value', (t) => {
  const f = parseFilter({ paths: ['type/user'] });
  t.ok(passesFilter(f, { type: 'user', name: 'a' }));
  t.notOk(passesFilter(f, { type: 'order' }));
  t.notOk(passesFilter(f, { kind: 'user' }));
  t.ok(matchesPath({ profile: { city: 'Paris' } }, ['profile', 'city', 'Paris']));
  t.ok(matchesPath({ tags: ['red', 'blue'] }, ['tags', 'blue']), 'a value inside an array matches');
  t.ok(matchesPath({ age: 30 }, ['age', '30']), 'numbers match by their text form');
  t.ok(matchesPath({ users: { a: 1 } }, ['users', '#']), '# matches any rest');
  t.ok(matchesPath({ a: { x: 'v' } }, ['a', '+', 'v']), '+ matches one level');
  t.notOk(matchesPath({ type: { user: 1 } }, ['type', 'user']), 'a value segment never matches an object key');
  t.end();
});

t.test('paths are OR-ed, then AND-ed with query.where', (t) => {
  const f = parseFilter({ paths: ['type/user', 'type/admin'], query: { where: [{ path: ['status'], value: 'active' }] } });
  t.ok(passesFilter(f, { type: 'admin', status: 'active' }));
  t.notOk(passesFilter(f, { type: 'admin', status: 'gone' }));
  t.notOk(passesFilter(f, { type: 'order', status: 'active' }));
  const q = parseFilter({ query: { where: [{ path: ['n'], op: '>', value: 2 }] } });
  t.ok(passesFilter(q, { n: 3 }));
  t.notOk(passesFilter(q, { n: 1 }));
  t.end();
});

t.test('flat documents: a path filter matches exactly when the field holds the value (oracle)', (t) => {
  const field = fc.constantFrom('type', 'kind', 'status');
  const value = fc.constantFrom('a', 'b', 'c', '1');
  const doc = fc.dictionary(field, fc.oneof(value, fc.constant(1), fc.boolean()));
  fc.assert(
    fc.property(doc, field, value, (d, k, v) => passesFilter(parseFilter({ paths: [`${k}/${v}`] }), d) === (d[k] !== undefined && String(d[k]) === v)),
    fcParams(),
  );
  t.end();
});

t.test('bad filters are 400s', (t) => {
  badRequest(t, () => parseFilter('type/user'), 'not an object');
  badRequest(t, () => parseFilter({ paths: 'type/user' }), 'paths not a list');
  badRequest(t, () => parseFilter({ paths: ['type'] }), 'no value segment');
  badRequest(t, () => parseFilter({ paths: ['#/x'] }), '# first');
  badRequest(t, () => parseFilter({ paths: ['a/#/b'] }), '# not last');
  badRequest(t, () => parseFilter({ query: {} }), 'query without where');
  badRequest(t, () => parseFilter({ query: { where: [{ path: ['a'], op: 'nope', value: 1 }] } }), 'unknown operator');
  badRequest(t, () => parseFilter({ selector: {} }), 'unknown field');
  t.same(parseFilter({}).raw, undefined, 'an empty filter is no filter');
  t.end();
});

t.test('replication id: stable, and changes with source, target or filter', (t) => {
  const f1 = parseFilter({ paths: ['b/1', 'a/1'] }).raw;
  const f2 = parseFilter({ paths: ['a/1', 'b/1'] }).raw;
  t.equal(replicationId('a', 'b', f1), replicationId('a', 'b', f2), 'path order does not matter');
  t.equal(replicationId('a', 'b', null), replicationId('a', 'b', null));
  t.not(replicationId('a', 'b', null), replicationId('a', 'c', null));
  t.not(replicationId('a', 'b', null), replicationId('b', 'a', null));
  t.not(replicationId('a', 'b', null), replicationId('a', 'b', f1), 'a filtered run has its own checkpoint');
  t.match(replicationId('a', 'b', null), /^[0-9a-f]{32}$/);
  const withToken = parseEndpoint('http://127.0.0.1:1/db/x', { kind: 'bearer', token: 't1' }, 'target');
  const otherToken = parseEndpoint('http://127.0.0.1:1/db/x', { kind: 'bearer', token: 't2' }, 'target');
  t.equal(displayEndpoint(withToken), displayEndpoint(otherToken), 'credentials are not part of the id');
  t.end();
});

t.test('checkpoints: start from the older side; missing or foreign ones mean the beginning', (t) => {
  const hlc = fc.record({ wallMs: fc.integer({ min: 0, max: 2 ** 40 }), logical: fc.integer({ min: 0, max: 1000 }) });
  const entry = (seq: string, session = 's'): CheckpointEntry => ({ session_id: session, source_last_seq: seq, start_seq: 'first', end_time: '', docs_read: 0, docs_written: 0, doc_write_failures: 0 });
  fc.assert(
    fc.property(hlc, hlc, (a, b) => {
      const ca = nextCheckpoint(undefined, 'r', entry(hlcToText(a)));
      const cb = nextCheckpoint(undefined, 'r', entry(hlcToText(b)));
      const s = startSeq(ca, cb)!;
      return compareHlc(s, a) <= 0 && compareHlc(s, b) <= 0 && (compareHlc(s, a) === 0 || compareHlc(s, b) === 0);
    }),
    fcParams(),
  );
  const one = nextCheckpoint(undefined, 'r', entry('{timestamp,5,0}'));
  t.equal(startSeq(one, undefined), undefined);
  t.equal(startSeq(undefined, one), undefined);
  t.equal(readCheckpoint({ ...one, replication_id: 'other' }, 'r'), undefined, 'another replication id is ignored');
  t.same(readCheckpoint(one, 'r'), one);
  let cp = one;
  for (let i = 0; i < 50; i++) cp = nextCheckpoint(cp, 'r', entry(`{timestamp,${i},0}`, `s${i % 30}`));
  t.ok(cp.history.length <= CHECKPOINT.historyMax, 'history is bounded');
  t.equal(new Set(cp.history.map((h) => h.session_id)).size, cp.history.length, 'one entry per session');
  t.equal(cp.history[0]!.source_last_seq, '{timestamp,49,0}', 'newest first');

  // A read-only source (it refused its copy): the target's copy alone, whatever the source holds.
  const readOnly = nextCheckpoint(undefined, 'r', entry('{timestamp,9,0}'), true);
  t.equal(readOnly.source_read_only, true);
  t.same(readCheckpoint(JSON.parse(JSON.stringify(readOnly)), 'r'), readOnly, 'the mark survives storage');
  t.same(startSeq(undefined, readOnly), parseHlc('{timestamp,9,0}'), 'no copy on the source: the one the target holds');
  t.same(startSeq(one, readOnly), parseHlc('{timestamp,9,0}'), 'an older copy on the source (from before its key was read-only) is not used');
  t.equal(startSeq(readOnly, undefined), undefined, 'the mark on the source side means nothing');
  t.notOk('source_read_only' in nextCheckpoint(readOnly, 'r', entry('{timestamp,10,0}')), 'a run that could write the source clears it');
  t.end();
});

t.test('task state machine: invariants over random event sequences', (t) => {
  const event: fc.Arbitrary<TaskEvent> = fc.oneof(
    fc.record({ kind: fc.constant('failure' as const), error: fc.constantFrom('x', 'y'), nowMs: fc.integer({ min: 0, max: 1e9 }) }),
    fc.constantFrom<TaskEvent>({ kind: 'retry' }, { kind: 'progress' }, { kind: 'done' }, { kind: 'stop' }, { kind: 'start' }),
  );
  fc.assert(
    fc.property(fc.array(event, { maxLength: 40 }), fc.integer(), (events, seed) => {
      let m: TaskMachine = INITIAL;
      const rand = seededRand(seed);
      for (const e of events) {
        const before = m;
        m = step(m, e, rand);
        if (e.kind === 'stop' && m.state.kind !== 'stopped') return false;
        if (e.kind === 'failure' && before.state.kind === 'active') {
          if (m.state.kind !== 'error' || m.failures !== before.failures + 1) return false;
          const nominal = nominalDelayMs(m.failures, REPLICATION_BACKOFF);
          if (m.state.retryAtMs < e.nowMs + nominal / 2 || m.state.retryAtMs > e.nowMs + nominal) return false;
        }
        if (e.kind === 'progress' && before.state.kind === 'active' && m.failures !== 0) return false;
        if (m.state.kind === 'completed' && before.state.kind !== 'completed' && before.state.kind !== 'active') return false;
      }
      return true;
    }),
    fcParams(),
  );
  let m = step(INITIAL, { kind: 'failure', error: 'boom', nowMs: 0 }, seededRand(1));
  t.equal(m.state.kind, 'error');
  m = step(m, { kind: 'stop' }, seededRand(1));
  t.same(m.state, { kind: 'stopped', lastError: 'boom' }, 'a stopped task remembers its last error');
  t.equal(step(m, { kind: 'start' }, seededRand(1)).state.kind, 'active');
  t.end();
});

t.test('policies expand into the right tasks', (t) => {
  const chain = parsePolicy({ name: 'c', pattern: 'chain', nodes: ['http://127.0.0.1:1', 'http://127.0.0.1:2/', 'http://127.0.0.1:3'], database: 'users' });
  t.equal(chain.mode, 'continuous', 'mode defaults to continuous');
  t.equal(chain.enabled, false, 'a new policy is disabled');
  const ct = expandPolicy(chain);
  t.same(ct.map((s) => [s.id, displayEndpoint(s.source), displayEndpoint(s.target)]), [
    ['c:0', 'http://127.0.0.1:1/db/users', 'http://127.0.0.1:2/db/users'],
    ['c:1', 'http://127.0.0.1:2/db/users', 'http://127.0.0.1:3/db/users'],
  ]);
  const local = expandPolicy(parsePolicy({ name: 'l', pattern: 'chain', nodes: ['self', 'http://h:1'], database: 'd' }));
  t.same(local[0]!.source, { kind: 'local', db: 'd' }, 'a node without :// is this node');
  fc.assert(
    fc.property(fc.integer({ min: 2, max: 8 }), (n) => {
      const members = Array.from({ length: n }, (_, i) => `db${i}`);
      const g = expandPolicy(parsePolicy({ name: 'g', pattern: 'group', members }));
      const pairs = new Set(g.map((s) => `${displayEndpoint(s.source)}>${displayEndpoint(s.target)}`));
      const f = expandPolicy(parsePolicy({ name: 'f', pattern: 'fanout', source: 'src', targets: members }));
      const c = expandPolicy(parsePolicy({ name: 'c', pattern: 'chain', nodes: members.map((_, i) => `http://127.0.0.1:${i + 1}`), database: 'x' }));
      return g.length === n * (n - 1) && pairs.size === g.length && f.length === n && c.length === n - 1;
    }),
    fcParams(50),
  );
  const withAuth = parsePolicy({ name: 'a', pattern: 'fanout', source: 'src', targets: ['http://127.0.0.1:9/db/t', 'local'], auth: { bearer_token: 'secret' }, mode: 'one_shot' });
  const tasks = expandPolicy(withAuth);
  t.same((tasks[0]!.target as { auth: unknown }).auth, { kind: 'bearer', token: 'secret' }, 'auth applies to remote endpoints');
  t.same(tasks[1]!.target, { kind: 'local', db: 'local' });
  t.equal(tasks[0]!.continuous, false);
  t.notOk(JSON.stringify(publicPolicy(withAuth)).includes('secret'), 'auth is never echoed');
  t.end();
});

t.test('invalid policies are 400s', (t) => {
  badRequest(t, () => parsePolicy({ name: 'x', pattern: 'ring', members: ['a', 'b'] }), 'unknown pattern');
  badRequest(t, () => parsePolicy({ name: 'x', pattern: 'chain', nodes: ['http://h:1'], database: 'd' }), 'chain with one node');
  badRequest(t, () => parsePolicy({ name: 'x', pattern: 'chain', nodes: ['http://h:1', 'http://h:2'] }), 'chain without database');
  badRequest(t, () => parsePolicy({ name: 'x', pattern: 'group', members: ['a'] }), 'group with one member');
  badRequest(t, () => parsePolicy({ name: 'x', pattern: 'group', members: ['a', 'a'] }), 'duplicate member');
  badRequest(t, () => parsePolicy({ name: 'x', pattern: 'fanout', targets: ['a'] }), 'fanout without source');
  badRequest(t, () => parsePolicy({ name: 'x', pattern: 'fanout', source: 'a', targets: [] }), 'fanout without targets');
  badRequest(t, () => parsePolicy({ name: 'x', pattern: 'fanout', source: 'a', targets: ['a'] }), 'target = source');
  badRequest(t, () => parsePolicy({ name: 'x', pattern: 'group', members: ['a', 'b'], mode: 'sometimes' }), 'bad mode');
  badRequest(t, () => parsePolicy({ name: 'x', pattern: 'group', members: ['a', 'b'], nodes: [] }), 'field of another pattern');
  badRequest(t, () => parsePolicy({ name: '', pattern: 'group', members: ['a', 'b'] }), 'empty name');
  badRequest(t, () => parsePolicy({ name: 'x', pattern: 'group', members: ['a', 'b'], auth: { token: 'x' } }), 'bad auth');
  badRequest(t, () => parsePolicy({ name: 'x', pattern: 'group', members: ['a', 'ftp://h/db/x'] }), 'bad member');
  t.end();
});

t.test('endpoints: local names, remote URLs, auth headers, allow-list', (t) => {
  t.same(parseEndpoint('users', { kind: 'none' }, 'target'), { kind: 'local', db: 'users' });
  const r = parseEndpoint('http://127.0.0.1:8080/db/users/', { kind: 'none' }, 'target');
  t.same(r, { kind: 'remote', url: 'http://127.0.0.1:8080/db/users', host: '127.0.0.1:8080', db: 'users', auth: { kind: 'none' } });
  t.equal(displayEndpoint(parseEndpoint('https://h.example/prefix/db/a', { kind: 'none' }, 't')), 'https://h.example/prefix/db/a');
  badRequest(t, () => parseEndpoint('http://u:p@h/db/a', { kind: 'none' }, 't'), 'credentials in the URL');
  badRequest(t, () => parseEndpoint('http://h/a', { kind: 'none' }, 't'), 'no /db/');
  badRequest(t, () => parseEndpoint('http://h/db/Bad', { kind: 'none' }, 't'), 'invalid db name');
  badRequest(t, () => parseEndpoint('Bad', { kind: 'none' }, 't'), 'invalid local name');
  t.equal(authHeader(parseAuth({ bearer_token: 'k' })), 'Bearer k');
  t.equal(authHeader(parseAuth({ basic_auth: { username: 'u', password: 'p' } })), `Basic ${Buffer.from('u:p').toString('base64')}`);
  badRequest(t, () => parseAuth({ bearer_token: '' }), 'empty token');
  badRequest(t, () => parseAuth({ bearer_token: 'a\nb' }), 'header injection');
  badRequest(t, () => parseAuth({ basic_auth: { username: 'u' } }), 'basic without password');
  const stored = parseEndpoint('http://h:1/db/a', parseAuth({ basic_auth: { username: 'u', password: 'p' } }), 't');
  t.same(loadEndpoint(storeEndpoint(stored)), stored, 'stored endpoints round-trip');
  const policy = { allow: ['db.example', 'other.example:9000'], allowLoopback: true };
  t.doesNotThrow(() => checkOutbound(parseEndpoint('http://127.0.0.1:5/db/a', { kind: 'none' }, 't'), policy));
  t.doesNotThrow(() => checkOutbound(parseEndpoint('http://localhost:5/db/a', { kind: 'none' }, 't'), policy));
  t.doesNotThrow(() => checkOutbound(parseEndpoint('https://db.example/db/a', { kind: 'none' }, 't'), policy));
  t.doesNotThrow(() => checkOutbound(parseEndpoint('http://other.example:9000/db/a', { kind: 'none' }, 't'), policy));
  const forbidden = (url: string, p = policy) =>
    t.equal(codeOf(() => checkOutbound(parseEndpoint(url, { kind: 'none' }, 't'), p)), 'forbidden', url);
  forbidden('http://other.example:9001/db/a');
  forbidden('http://169.254.169.254/db/a');
  forbidden('http://127.0.0.1:5/db/a', { allow: [], allowLoopback: false });
  t.end();
});
