// A cluster of real node processes for tests, run through scripts/cluster.sh itself, so a
// test's nodes get exactly the environment a user's get (the script's node_env is the one
// place it is made). Ports are free ones below the ephemeral range: tests run in parallel
// and the fixed 8081/9081 may be taken.
import { execFile, execFileSync } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { NODE_FLAGS } from '../../src/core/node-flags.js';
import { nodeMainArgs } from './built-node.js';
import { type Reply, type RequestOptions, TEST_CACHE_ENV, request, tempDir } from './node.js';
import { waitFor } from './wait.js';

const SCRIPT = fileURLToPath(new URL('../../scripts/cluster.sh', import.meta.url));
/** Below Linux's ephemeral range (32768+), so no port-0 listener elsewhere can take ours. */
const PORT_MIN = 10_000;
const PORT_MAX = 32_000;
const PORT_TRIES_MAX = 50;
const SCRIPT_TIMEOUT_MS = 120_000;

export interface ClusterNode {
  readonly name: string;
  readonly url: string;
  /** host:port of its gRPC listener (what seeds name). */
  readonly grpc: string;
  /** undefined while the node is not running. */
  pid: number | undefined;
}

export interface ClusterOptions {
  nodes: number;
  /** Environment for the script and through it every node: SERVICE_* settings, FIRKIN_NODE_CMD… */
  env?: Record<string, string>;
  /** The cluster directory; default a new temp dir that close() removes. */
  dir?: string;
  /** Ports kept free for nodes that up() adds later. */
  spareNodes?: number;
}

export interface LocalCluster {
  readonly dir: string;
  readonly adminKey: string;
  readonly nodes: readonly ClusterNode[];
  node(name: string): ClusterNode;
  /** A request to one node, with the admin key unless `key` says otherwise. */
  request<T = any>(node: string | ClusterNode, method: string, path: string, options?: RequestOptions): Promise<Reply<T>>;
  /** Run scripts/cluster.sh with this cluster's settings; rejects with its stderr on failure. */
  script(args: string[], env?: Record<string, string>): Promise<string>;
  /** Grow to `total` nodes (within the spare ports) and wait until all are members. */
  up(total: number): Promise<void>;
  kill9(name: string): Promise<void>;
  stop(name: string): Promise<void>;
  /** Start a stopped node; by default waits until it is a member. */
  start(name: string, options?: { wait?: boolean }): Promise<void>;
  pause(name: string): Promise<void>;
  resume(name: string): Promise<void>;
  /** Every running node that is not paused answers state "member". */
  waitMembers(options?: { timeoutMs?: number }): Promise<void>;
  /** SIGKILL every node and remove the directory if this helper made it. */
  close(): Promise<void>;
}

function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

/** Two bases with `count` free ports each, for HTTP and gRPC. */
async function freePortBases(count: number): Promise<{ http: number; grpc: number }> {
  for (let i = 0; i < PORT_TRIES_MAX; i++) {
    const http = PORT_MIN + Math.floor(Math.random() * (PORT_MAX - PORT_MIN - 2 * count));
    const grpc = http + count;
    let free = true;
    for (let p = http; p < grpc + count && free; p++) free = await portFree(p);
    if (free) return { http, grpc };
  }
  throw new Error(`no ${2 * count} consecutive free ports between ${PORT_MIN} and ${PORT_MAX}`);
}

/**
 * The test process's environment without an operator's scripts/cluster.sh settings: a shell
 * that exported FIRKIN_HTTP_BASE for its own cluster (as docs/cluster.md shows) made every
 * script call of a test that sets only FIRKIN_CLUSTER_DIR refuse ("the cluster … uses 24176").
 */
export function inheritedEnv(): NodeJS.ProcessEnv {
  return Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^FIRKIN_(CLUSTER_DIR|CLUSTER_NODE|HTTP_BASE|GRPC_BASE|ZONES|WAIT_S|STOP_TIMEOUT_S|NODE_CMD|NODES|URL|KEY)$/.test(k)));
}

export async function startCluster(options: ClusterOptions): Promise<LocalCluster> {
  const ownDir = options.dir === undefined;
  const dir = options.dir ?? tempDir('firkin-cluster-');
  const slots = options.nodes + (options.spareNodes ?? 2);
  const bases = await freePortBases(slots);
  const scriptEnv = {
    ...inheritedEnv(),
    // Small block caches, as every test node (a node's close takes ~1 ms per MB of them).
    ...TEST_CACHE_ENV,
    // The script evals it: each word quoted.
    FIRKIN_NODE_CMD: [process.execPath, ...NODE_FLAGS, ...nodeMainArgs()].map((w) => `'${w}'`).join(' '),
    ...options.env,
    FIRKIN_CLUSTER_DIR: dir,
    FIRKIN_HTTP_BASE: String(bases.http),
    FIRKIN_GRPC_BASE: String(bases.grpc),
  };
  const nodes: ClusterNode[] = [];
  const paused = new Set<string>();
  const nodeAt = (i: number): ClusterNode => ({
    name: `n${i}`,
    url: `http://127.0.0.1:${bases.http + i - 1}`,
    grpc: `127.0.0.1:${bases.grpc + i - 1}`,
    pid: undefined,
  });

  const script = (args: string[], env: Record<string, string> = {}) =>
    new Promise<string>((resolve, reject) => {
      execFile('bash', [SCRIPT, ...args], { env: { ...scriptEnv, ...env }, timeout: SCRIPT_TIMEOUT_MS }, (err, stdout, stderr) => {
        if (err === null) resolve(stdout);
        else reject(new Error(`cluster.sh ${args.join(' ')} failed (${err.code ?? err.signal}): ${stderr.trim() || stdout.trim()}`));
      });
    });
  const readPid = (n: ClusterNode) => {
    try {
      n.pid = Number(readFileSync(path.join(dir, n.name, 'pid'), 'utf8'));
    } catch {
      n.pid = undefined;
    }
  };
  const node = (name: string) => {
    const n = nodes.find((x) => x.name === name);
    if (n === undefined) throw new Error(`no node ${name} in this cluster (${nodes.map((x) => x.name).join(', ')})`);
    return n;
  };
  // Last resort when a test dies without close(): no node may outlive the test process.
  const killAllSync = () => {
    try {
      execFileSync('bash', [SCRIPT, 'down'], { env: { ...scriptEnv, FIRKIN_STOP_TIMEOUT_S: '0' }, stdio: 'ignore' });
    } catch {
      // nothing was started, or it is already gone
    }
  };
  process.once('exit', killAllSync);

  const up = async (total: number) => {
    if (total > slots) throw new Error(`up(${total}): ports were kept for ${slots} nodes (spareNodes)`);
    await script(['up', String(total)]);
    for (let i = nodes.length + 1; i <= total; i++) nodes.push(nodeAt(i));
    nodes.forEach(readPid);
  };
  const cluster: LocalCluster = {
    dir,
    get adminKey() {
      return readFileSync(path.join(dir, 'admin.key'), 'utf8').trim();
    },
    nodes,
    node,
    request(target, method, urlPath, requestOptions = {}) {
      const n = typeof target === 'string' ? node(target) : target;
      return request(n.url, method, urlPath, { ...requestOptions, key: requestOptions.key ?? cluster.adminKey });
    },
    script,
    up,
    async kill9(name) {
      await script(['kill', node(name).name]);
      readPid(node(name));
      paused.delete(name);
    },
    async stop(name) {
      await script(['stop', node(name).name]);
      readPid(node(name));
      paused.delete(name);
    },
    async start(name, startOptions = {}) {
      await script(['start', node(name).name], startOptions.wait === false ? { FIRKIN_WAIT_S: '0' } : {});
      readPid(node(name));
    },
    async pause(name) {
      await script(['pause', node(name).name]);
      paused.add(name);
    },
    async resume(name) {
      await script(['resume', node(name).name]);
      paused.delete(name);
    },
    async waitMembers(waitOptions = {}) {
      const running = nodes.filter((n) => n.pid !== undefined && !paused.has(n.name));
      await waitFor(
        async () => {
          const states = await Promise.all(running.map((n) => cluster.request(n, 'GET', '/vectordb/cluster/status').then((r) => r.body?.state)));
          return states.every((s) => s === 'member');
        },
        { timeoutMs: waitOptions.timeoutMs ?? 60_000, what: `${running.map((n) => n.name).join(', ')} to be members` },
      );
    },
    async close() {
      process.removeListener('exit', killAllSync);
      await script(['down'], { FIRKIN_STOP_TIMEOUT_S: '0' }).catch(() => undefined);
      nodes.forEach(readPid);
      if (ownDir) rmSync(dir, { recursive: true, force: true });
    },
  };
  try {
    await up(options.nodes);
  } catch (err) {
    await cluster.close();
    throw err;
  }
  return cluster;
}
