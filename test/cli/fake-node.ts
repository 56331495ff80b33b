// A stand-in for src/main.ts that scripts/cluster.sh can run (FIRKIN_NODE_CMD): it starts in
// milliseconds, answers GET /vectordb/cluster/status as a member, and shows the environment
// the script gave it at GET /env. FAKE_IGNORE_TERM=1 makes it ignore SIGTERM (to see the
// script's SIGKILL after FIRKIN_STOP_TIMEOUT_S). Like a real node it leaves a file in its data
// directory: the script tells a node that has data (restarts) from one that has none (joins).
import { mkdirSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import path from 'node:path';

const name = process.env.SERVICE_NODE_NAME ?? 'fake';
const dataDir = process.env.SERVICE_DATA_DIR;
if (dataDir !== undefined) {
  mkdirSync(dataDir, { recursive: true });
  writeFileSync(path.join(dataDir, 'fake-node'), name);
}
const server = createServer((req, res) => {
  const reply = (body: unknown) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
  };
  if (req.url === '/vectordb/cluster/status') {
    reply({ state: 'member', is_leader: name === 'n1', leader: 'n1', node: name, nodes: [name], healthy_nodes: [name] });
  } else if (req.url === '/env') {
    reply(Object.fromEntries(Object.entries(process.env).filter(([k]) => /^(SERVICE_|RELEASE_COOKIE$|FIRKIN_CLUSTER_NODE$)/.test(k))));
  } else {
    res.writeHead(404, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ error: 'not_found', message: req.url }));
  }
});
server.listen(Number(process.env.SERVICE_HTTP_PORT), process.env.SERVICE_HTTP_IP, () => console.log(JSON.stringify({ msg: `fake ${name} listening` })));
process.on('SIGTERM', () => {
  if (process.env.FAKE_IGNORE_TERM !== '1') server.close(() => process.exit(0));
});
