// Embedders: the hash embedder's properties, and the HTTP embedders against a small local
// server speaking the Ollama and OpenAI embedding APIs (batching, retries, failures).
import fc from 'fast-check';
import { type IncomingMessage, type ServerResponse, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import t from 'tap';
import { createEmbedder } from '../../src/vector/embedders/create.js';
import { hashEmbed } from '../../src/vector/embedders/hash.js';
import { embedderConfig } from '../../src/vector/requests.js';
import { fcParams } from '../support/fc.js';
import { startTestNode } from '../support/node.js';

const cos = (a: Float32Array, b: Float32Array) => a.reduce((s, x, i) => s + x * b[i]!, 0);

t.test('hash embedder: deterministic, unit length, shared words mean similarity', async (t) => {
  const arbText = fc.array(fc.constantFrom('apple', 'pear', 'plum', 'kiwi', 'fig', 'lime', 'date'), { minLength: 1, maxLength: 8 }).map((w) => w.join(' '));
  fc.assert(
    fc.property(arbText, fc.integer({ min: 8, max: 256 }), (text, dims) => {
      const a = hashEmbed(text, dims);
      const b = hashEmbed(text, dims);
      const norm = Math.sqrt(cos(a, a));
      return a.length === dims && a.every((x, i) => x === b[i]) && Math.abs(norm - 1) < 1e-5;
    }),
    fcParams(200),
  );
  t.same(Array.from(hashEmbed('', 16)), new Array(16).fill(0), 'no words: all zeros');
  // Stored vectors were embedded by earlier builds: a text must embed to the same vector in every build.
  t.same(Array.from(hashEmbed('Café-au-lait with plum, fig and apple; 北京 2026', 8)), [0.6401844024658203, -0.5121475458145142, 0.12803688645362854, -0.12803688645362854, -0.38411062955856323, 0.2560737729072571, 0.2560737729072571, 0.12803688645362854], 'a pinned vector');
  // Found by the property above (seed 303769980): its signed features cancel out in 13 buckets.
  t.ok(Math.abs(Math.sqrt(cos(hashEmbed('plum fig apple', 13), hashEmbed('plum fig apple', 13))) - 1) < 1e-5, 'words whose features cancel out still embed to unit length');
  t.same(Array.from(hashEmbed('red apple pie', 8)).map((x) => Math.round(x * 1e4)), [4714, 0, 2357, 0, 7071, 0, -4714, 0], 'a text whose features do not cancel keeps its vector');
  t.same(hashEmbed('Hello, WORLD', 32), hashEmbed('hello world', 32), 'same tokens, same vector');
  const q = hashEmbed('red apple pie', 256);
  t.ok(cos(q, hashEmbed('apple pie with cream', 256)) > cos(q, hashEmbed('quantum field theory', 256)), 'shared words score higher');
  t.ok(cos(q, hashEmbed('red apple pie', 256)) > 0.999, 'identical text: cosine 1');
});

interface Seen {
  path: string;
  auth: string | undefined;
  body: { model: string; input: string[] };
}

/** A tiny embedding server: vectors are [len(text), count of 'a', 1]; `plan` scripts failures. */
async function embeddingServer(t: { teardown(fn: () => unknown): void }, plan: (n: number) => 'ok' | 'fail500' | 'fail400' | 'hang' | 'garbage' = () => 'ok') {
  const seen: Seen[] = [];
  let n = 0;
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    let raw = '';
    req.on('data', (c) => (raw += c));
    req.on('end', () => {
      const body = JSON.parse(raw) as Seen['body'];
      seen.push({ path: req.url!, auth: req.headers.authorization, body });
      const step = plan(n++);
      if (step === 'hang') return; // never answers; the client times out
      if (step === 'fail500') return void res.writeHead(500).end('boom');
      if (step === 'fail400') return void res.writeHead(400).end('bad model');
      if (step === 'garbage') return void res.writeHead(200, { 'content-type': 'application/json' }).end('{"nope": 1}');
      const vectors = body.input.map((s) => [s.length, [...s].filter((c) => c === 'a').length, 1]);
      const out = req.url === '/api/embed' ? { embeddings: vectors } : { data: vectors.map((embedding, index) => ({ index, embedding })).reverse() };
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(out));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => {
    server.closeAllConnections();
    return new Promise<void>((resolve) => server.close(() => resolve()));
  });
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen };
}

const noSleep = { fetch, sleep: async () => undefined, openaiKeyOrigin: 'https://api.openai.com', outbound: { allow: [], allowLoopback: true } };

t.test('ollama: batches, order, dimensions', async (t) => {
  const srv = await embeddingServer(t);
  const config = embedderConfig({ type: 'ollama', url: srv.url, model: 'm1', batch_size: 2 });
  const e = createEmbedder(config, 3, noSleep);
  const out = await e.embed(['a', 'bb', 'aaa', 'c', 'aa']);
  t.same(out.map((v) => Array.from(v)), [[1, 1, 1], [2, 0, 1], [3, 3, 1], [1, 0, 1], [2, 2, 1]]);
  t.same(srv.seen.map((s) => [s.path, s.body.model, s.body.input.length]), [
    ['/api/embed', 'm1', 2],
    ['/api/embed', 'm1', 2],
    ['/api/embed', 'm1', 1],
  ]);
});

t.test('openai: results reordered by index; the key goes only to its configured origin', async (t) => {
  const srv = await embeddingServer(t);
  const config = embedderConfig({ type: 'openai', url: srv.url, model: 'text-embedding-3-small' });
  const withKey = createEmbedder(config, 3, { ...noSleep, openaiApiKey: 'sk-test', openaiKeyOrigin: srv.url });
  const out = await withKey.embed(['a', 'bbbb']);
  t.same(out.map((v) => Array.from(v)), [[1, 1, 1], [4, 0, 1]]);
  t.equal(srv.seen[0]!.path, '/v1/embeddings');
  t.equal(srv.seen[0]!.auth, 'Bearer sk-test');
  const elsewhere = createEmbedder(config, 3, { ...noSleep, openaiApiKey: 'sk-test' });
  await elsewhere.embed(['x']);
  t.equal(srv.seen[1]!.auth, undefined, 'no key for another origin');
  const v1 = createEmbedder(embedderConfig({ type: 'openai', url: `${srv.url}/v1` }), 3, noSleep);
  await v1.embed(['x']);
  t.equal(srv.seen[2]!.path, '/v1/embeddings', 'a base URL ending in /v1 is not doubled');
});

t.test('retries with backoff, then a clear bad_gateway', async (t) => {
  const srv = await embeddingServer(t, (n) => (n < 2 ? 'fail500' : 'ok'));
  const sleeps: number[] = [];
  const deps = { ...noSleep, sleep: async (ms: number) => void sleeps.push(ms) };
  const e = createEmbedder(embedderConfig({ type: 'ollama', url: srv.url, retries: 2 }), 3, deps);
  t.same((await e.embed(['a'])).map((v) => Array.from(v)), [[1, 1, 1]], 'succeeds on the third attempt');
  t.same(sleeps, [100, 200], 'exponential backoff');

  const down = await embeddingServer(t, () => 'fail500');
  const e2 = createEmbedder(embedderConfig({ type: 'ollama', url: down.url, retries: 1 }), 3, deps);
  await t.rejects(e2.embed(['a']), { code: 'bad_gateway', message: /failed after 2 attempts: HTTP 500/ });

  const bad = await embeddingServer(t, () => 'fail400');
  const e3 = createEmbedder(embedderConfig({ type: 'ollama', url: bad.url, retries: 3 }), 3, deps);
  await t.rejects(e3.embed(['a']), { code: 'bad_gateway', message: /after 1 attempt: HTTP 400/ }, 'a 4xx is not retried');
  t.equal(bad.seen.length, 1);

  const hang = await embeddingServer(t, () => 'hang');
  const e4 = createEmbedder(embedderConfig({ type: 'ollama', url: hang.url, retries: 1, timeout_ms: 50 }), 3, deps);
  // Counted by the client: a retry given up on after 50 ms may be aborted before this server
  // reads it (CI on 90f54ce saw one request arrive of two sent).
  await t.rejects(e4.embed(['a']), { code: 'bad_gateway', message: /failed after 2 attempts: no reply within 50 ms/ }, 'a timeout is retried');
  t.ok(hang.seen.length >= 1, 'the first attempt reached the server');

  const garbage = await embeddingServer(t, () => 'garbage');
  const e5 = createEmbedder(embedderConfig({ type: 'ollama', url: garbage.url }), 3, deps);
  await t.rejects(e5.embed(['a']), { code: 'bad_gateway', message: /no "embeddings" array/ });
});

t.test('collections with HTTP embedders over the standard API', async (t) => {
  const srv = await embeddingServer(t);
  const node = await startTestNode();
  t.teardown(() => node.close());
  let r = await node.request('PUT', '/vectordb/collections/o', { body: { dimensions: 3, embedder: { type: 'ollama', url: srv.url, model: 'mini' } } });
  t.equal(r.status, 201);
  r = await node.request('POST', '/vectordb/collections/o/docs', { body: { documents: [{ id: 'short', text: 'ab' }, { id: 'long', text: 'aaaaaaaaaa' }] } });
  t.match(r.body.results, [{ id: 'short', status: 'created' }, { id: 'long', status: 'created' }]);
  t.equal(srv.seen.length, 1, 'one batched request for the batch');
  r = await node.request('POST', '/vectordb/collections/o/search', { body: { query: 'aaaaaaaaa', k: 1 } });
  t.same(r.body.results.map((h: { id: string }) => h.id), ['long'], 'the text query is embedded');

  r = await node.request('PUT', '/vectordb/collections/wrongdims', { body: { dimensions: 4, embedder: { type: 'ollama', url: srv.url } } });
  r = await node.request('POST', '/vectordb/collections/wrongdims/docs', { body: { id: 'x', text: 'abc' } });
  t.same([r.status, r.body.error], [502, 'bad_gateway'], 'an embedder returning other dimensions is a 502');
  t.match(r.body.message, /3 dimensions; the collection has 4/);

  const down = await embeddingServer(t, () => 'fail500');
  await node.request('PUT', '/vectordb/collections/down', { body: { dimensions: 3, embedder: { type: 'openai', url: down.url, retries: 0 } } });
  r = await node.request('POST', '/vectordb/collections/down/docs', { body: { id: 'x', text: 'abc' } });
  t.same([r.status, r.body.error], [502, 'bad_gateway']);
  r = await node.request('POST', '/vectordb/collections/down/search', { body: { query: 'abc' } });
  t.same([r.status, r.body.error], [502, 'bad_gateway']);
  r = await node.request('POST', '/vectordb/collections/down/docs', { body: { id: 'x', text: 'abc', vector: [1, 2, 3] } });
  t.equal(r.status, 201, 'a doc with its own vector does not call the embedder');

  await node.request('PUT', '/vectordb/collections/h', { body: { dimensions: 64, embedder: { type: 'hash' } } });
  await node.request('POST', '/vectordb/collections/h/docs', {
    body: { documents: [{ id: 'pie', text: 'apple pie recipe' }, { id: 'car', text: 'electric car battery' }] },
  });
  r = await node.request('POST', '/vectordb/collections/h/search', { body: { query: 'a recipe for apple pie', k: 1 } });
  t.same(r.body.results.map((h: { id: string }) => h.id), ['pie'], 'hash embedder search');
  r = await node.request('POST', '/vectordb/collections/h/docs', { body: { id: 'empty', text: '!!!' } });
  t.same([r.status, r.body.error], [400, 'bad_request'], 'a text with no words cannot be embedded for cosine');
});

t.test('embedder hosts outside the allow-list are refused (SSRF)', async (t) => {
  const srv = await embeddingServer(t);
  const port = new URL(srv.url).port;
  const node = await startTestNode({ SERVICE_EMBEDDER_ALLOW_LOOPBACK: 'false', SERVICE_EMBEDDER_ALLOW: `127.0.0.1:${port}` });
  t.teardown(() => node.close());
  let r = await node.request('PUT', '/vectordb/collections/ok', { body: { dimensions: 3, embedder: { type: 'ollama', url: srv.url } } });
  t.equal(r.status, 201, 'an allowed host:port');
  r = await node.request('POST', '/vectordb/collections/ok/docs', { body: { id: 'a', text: 'abc' } });
  t.equal(r.status, 201);
  r = await node.request('PUT', '/vectordb/collections/internal', { body: { dimensions: 3, embedder: { type: 'ollama', url: 'http://localhost:9' } } });
  t.same([r.status, r.body.error], [403, 'forbidden'], 'loopback is refused when SERVICE_EMBEDDER_ALLOW_LOOPBACK=false');
  t.match(r.body.message, /SERVICE_EMBEDDER_ALLOW/);
  r = await node.request('PUT', '/vectordb/collections/meta', { body: { dimensions: 3, embedder: { type: 'openai', url: 'http://169.254.169.254' } } });
  t.same([r.status, r.body.error], [403, 'forbidden'], 'a host not on the list');
  t.equal((await node.request('GET', '/vectordb/collections/meta')).status, 404, 'nothing was created');
  t.equal(srv.seen.length, 1, 'only the allowed call reached a server');
});

t.test('an embedder never follows a redirect', async (t) => {
  const target = await embeddingServer(t);
  const { createServer } = await import('node:http');
  const redirector = createServer((_req, res) => res.writeHead(307, { location: `${target.url}/api/embed` }).end());
  await new Promise<void>((resolve) => redirector.listen(0, '127.0.0.1', resolve));
  t.teardown(() => redirector.close());
  const url = `http://127.0.0.1:${(redirector.address() as { port: number }).port}`;
  const e = createEmbedder(embedderConfig({ type: 'ollama', url, retries: 0 }), 3, noSleep);
  await t.rejects(e.embed(['a']), { code: 'bad_gateway' });
  t.equal(target.seen.length, 0, 'the redirect target was not called');
  const forbidden = createEmbedder(embedderConfig({ type: 'ollama', url: target.url, retries: 0 }), 3, { ...noSleep, outbound: { allow: [], allowLoopback: false } });
  await t.rejects(forbidden.embed(['a']), { code: 'forbidden' }, 'the policy is checked on every call too');
});
