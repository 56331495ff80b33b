// Where a `_bulk_docs` write spends the node's main-thread time: a CPU profile of the node
// while one client posts bench/docs.ts's documents in batches of 500 (new documents, durable),
// summarised per document by place and function (bench/profile-summary.ts).
// DOCS_PROFILE_WHAT=put: single-document PUTs of new documents from DOCS_PROFILE_CLIENTS (16)
// clients instead, as bench/docs.ts's durable PUT row. DOCS_PROFILE_WHAT=get: GETs of 1,000
// documents by id from 16 autocannon connections for DOCS_PROFILE_S (8) seconds, as its GET row.
// Usage: npx tsx bench/docs-profile.ts   (DOCS_PROFILE_N documents, default 100000; 30000 for put)
import autocannon from 'autocannon';
import { mkdirSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { spawnScript } from '../test/support/process.js';
import { TEST_ADMIN_KEY, tempDir } from '../test/support/node.js';
import { call, drive } from './http-client.js';
import { profileWindow, summarise, table } from './profile-summary.js';
import { benchDoc } from './support.js';

const WHAT = process.env.DOCS_PROFILE_WHAT ?? 'bulk';
if (WHAT !== 'bulk' && WHAT !== 'put' && WHAT !== 'get') throw new Error(`DOCS_PROFILE_WHAT is bulk, put or get, not ${WHAT}`);
let N = Number(process.env.DOCS_PROFILE_N ?? (WHAT === 'put' ? 30_000 : 100_000));
const CLIENTS = Number(process.env.DOCS_PROFILE_CLIENTS ?? 16);
const BATCH = 500;

function doc(i: number) {
  return { _id: `d${String(i).padStart(8, '0')}`, ...benchDoc(i) };
}

const dataDir = tempDir('firkin-bench-dprof-');
const profDir = tempDir('firkin-bench-dprof-cpu-');
mkdirSync(profDir, { recursive: true });
try {
  const serverProfile = path.join(profDir, 'server.cpuprofile');
  const node = await spawnScript({
    script: 'bench/profiled-node.ts',
    env: { SERVICE_DATA_DIR: dataDir, SERVICE_HTTP_PORT: '0', SERVICE_ADMIN_KEY: TEST_ADMIN_KEY, SERVICE_LOG_LEVEL: 'info', FIRKIN_PROFILE_OUT: serverProfile },
    ready: /listening on (https?:\/\/[^\s]+) /,
    what: 'profiled node',
  });
  const auth = { authorization: `Bearer ${TEST_ADMIN_KEY}` };
  await call(node.url, 'PUT', '/db/bulk', undefined, false, auth);
  if (WHAT === 'get') await call(node.url, 'POST', '/db/bulk/_bulk_docs', { docs: Array.from({ length: 1000 }, (_, i) => doc(i)) }, false, auth);
  const seconds = await profileWindow(node, async () => {
    const t0 = performance.now();
    if (WHAT === 'get') {
      let n = 0;
      const result = await autocannon({
        url: node.url,
        connections: CLIENTS,
        duration: Number(process.env.DOCS_PROFILE_S ?? 8),
        headers: auth,
        requests: [{ setupRequest: (req) => ({ ...req, method: 'GET', path: `/db/bulk/${doc((n++ * 7919) % 1000)._id}` }) }],
      });
      N = result.requests.total;
      if (result.non2xx + result.errors > 0) throw new Error(`${result.non2xx + result.errors} GETs failed`);
    } else if (WHAT === 'put') {
      const ids = Array.from({ length: N }, (_, i) => i);
      await drive(ids, CLIENTS, async (i) => {
        const { _id, ...body } = doc(i);
        await call(node.url, 'PUT', `/db/bulk/${_id}`, body, false, auth);
      });
    } else {
      for (let start = 0; start < N; start += BATCH) {
        await call(node.url, 'POST', '/db/bulk/_bulk_docs', { docs: Array.from({ length: Math.min(BATCH, N - start) }, (_, i) => doc(start + i)) }, false, auth);
      }
    }
    return (performance.now() - t0) / 1000;
  });
  await node.stop();
  const how = WHAT === 'get' ? `GETs by id, ${CLIENTS} clients` : WHAT === 'put' ? `single PUTs, ${CLIENTS} clients` : `_bulk_docs in batches of ${BATCH}, 1 client`;
  console.log(`${N} documents through ${how}: ${(N / seconds).toFixed(0)} docs/s`);
  const server = summarise(JSON.parse(readFileSync(serverProfile, 'utf8')));
  table(`server by place (${server.totalMs.toFixed(0)} ms sampled), per document`, server.byPlace, server.totalMs, 20, N);
  table('server by function (self time), per document', server.byFunction, server.totalMs, 35, N);
} finally {
  rmSync(dataDir, { recursive: true, force: true });
  rmSync(profDir, { recursive: true, force: true });
}
