// A bug inside the vector engine (any error that is not a FirkinError) is a logged 500 with the
// generic body: never a 4xx, never a per-document result with `error: undefined`.
import { Writable } from 'node:stream';
import pino from 'pino';
import t from 'tap';
import { ApiKeys } from '../../src/auth/api-keys.js';
import { HybridClock, systemClock } from '../../src/core/hlc.js';
import { vectorRoutes } from '../../src/http/routes/vector.js';
import { buildHttp } from '../../src/http/server.js';
import { createMetrics } from '../../src/metrics.js';
import type { AnnEngine } from '../../src/vector/ann/ann-index.js';
import { usearchEngine } from '../../src/vector/ann/usearch.js';
import { standaloneCluster } from '../../src/vector/cluster.js';
import { createCollectionRequest } from '../../src/vector/requests.js';
import { openTestEngine } from './engine-harness.js';

/** usearch, except that search throws a TypeError while `broken` is set. */
function faultyAnn(state: { broken: boolean }): AnnEngine {
  const wrap = <T extends object>(index: T): T =>
    new Proxy(index, {
      get(target, prop) {
        const value = Reflect.get(target, prop, target) as unknown;
        if (prop === 'search' && state.broken) return () => (undefined as unknown as { keys: number[] }).keys;
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
  return { name: usearchEngine.name, create: (o) => wrap(usearchEngine.create(o)), load: (f, o) => wrap(usearchEngine.load(f, o)), build: usearchEngine.build };
}

function capturingLog() {
  const lines: Record<string, unknown>[] = [];
  const log = pino({ level: 'info' }, new Writable({ write: (chunk, _enc, done) => (lines.push(JSON.parse(String(chunk))), done()) }));
  return { log, lines };
}

t.test('a TypeError in a search is a logged 500 with the generic body', async (t) => {
  const state = { broken: false };
  const { log, lines } = capturingLog();
  const h = await openTestEngine({ ann: faultyAnn(state), log });
  t.teardown(() => h.close());
  const { engine, store } = h;
  const { app } = await buildHttp({
    log,
    clock: systemClock,
    hlc: new HybridClock(systemClock),
    metrics: createMetrics(store),
    keys: await ApiKeys.load(store),
    authDisabled: true,
    bodyLimitBytes: 1 << 20,
    nodeName: 'n',
    version: 'test',
    startedAtMs: Date.now(),
    checks: {},
    features: [(app) => vectorRoutes(app, { prefix: '/vectordb', engine, cluster: standaloneCluster({ nodeName: 'n', clusterEnabled: false }) })],
  });
  t.teardown(() => app.close());
  const call = (method: 'PUT' | 'POST', url: string, payload: unknown) => app.inject({ method, url, payload: payload as object });
  t.equal((await call('PUT', '/vectordb/collections/c', { dimensions: 3 })).statusCode, 201);
  t.equal((await call('POST', '/vectordb/collections/c/docs', { id: 'a', vector: [1, 0, 0] })).statusCode, 201);
  t.equal((await call('POST', '/vectordb/collections/c/search', { vector: [1, 0, 0] })).statusCode, 200, 'works while the index is sound');

  state.broken = true;
  const r = await call('POST', '/vectordb/collections/c/search', { vector: [1, 0, 0] });
  t.equal(r.statusCode, 500);
  t.same(r.json(), { error: 'error', message: 'internal error' }, 'the generic body: no stack, no internals');
  const logged = lines.find((l) => l.msg === 'request failed');
  t.ok(logged, 'the failure is logged');
  t.match(logged, { level: 50, url: '/vectordb/collections/c/search', err: { type: 'TypeError', stack: /TypeError/ } });
});

t.test('a bug while checking a batch fails the call instead of becoming a per-document result', async (t) => {
  const h = await openTestEngine();
  t.teardown(() => h.close());
  const { engine } = h;
  await engine.createCollection(createCollectionRequest('c', { dimensions: 3 }));
  const buggy = {
    id: 'a',
    text: '',
    metadata: {},
    get vector(): number[] {
      throw new TypeError('a bug, not a bad document');
    },
  };
  await t.rejects(engine.putDocs({ collection: 'c', docs: [{ id: 'ok', text: '', metadata: {}, vector: [1, 0, 0] }, buggy] }), TypeError);
  const results = await engine.putDocs({ collection: 'c', docs: [{ id: 'short', text: '', metadata: {}, vector: [1, 0] }] });
  t.match(results, [{ id: 'short', error: 'bad_request', message: /dimensions/ }], 'a FirkinError is still a per-document result');
});
