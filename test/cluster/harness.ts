// Real multi-process clusters for tests: each node is `src/main.ts` in its own process with
// its own RocksDB, on loopback, with fixed gRPC ports (peers dial them) and ephemeral HTTP
// ports. `close()` kills every process it started and deletes the data.
import { rmSync } from 'node:fs';
import path from 'node:path';
import { type ChildNode, spawnTestNode } from '../support/process.js';
import { TEST_ADMIN_KEY, type Reply, type RequestOptions, request, tempDir } from '../support/node.js';
import { waitFor } from '../support/wait.js';
import { freePorts } from '../raft/kv-cluster.js';
import { FaultNetwork } from '../../chaos/proxy/network.js';
import { mathRand } from '../../src/core/rand.js';

/** Fast failure detection for tests (the defaults are the product's). */
export const FAST_CLUSTER_ENV = {
  SERVICE_FD_SUSPECT_MS: '800',
  SERVICE_FD_DOWN_MS: '1500',
  SERVICE_FD_MIN_DWELL_MS: '1000',
  SERVICE_DEAD_VOTER_GRACE_MS: '500',
  SERVICE_CLUSTER_HEARTBEAT_MS: '100',
  SERVICE_CLUSTER_PROPOSAL_TIMEOUT_MS: '2000',
  SERVICE_LOG_LEVEL: 'info',
} as const;

export interface ClusterNode {
  name: string;
  grpcPort: number;
  dir: string;
  env: Record<string, string>;
  child: ChildNode | undefined;
}

export class TestCluster {
  readonly nodes = new Map<string, ClusterNode>();
  readonly root = tempDir('firkin-cluster-');
  readonly cookie = 'test-cookie-1234';

  /**
   * Nodes whose peer links pass through the chaos fault proxy (`net` cuts, holds and delays
   * them): the first bootstraps, the others join through it; every one a member on return.
   * `close()` both, cluster first.
   */
  static async behindProxy(names: readonly string[]): Promise<{ cluster: TestCluster; net: FaultNetwork; close: () => Promise<void> }> {
    const ports = await freePorts(names.length);
    const grpcPorts = new Map(names.map((n, i) => [n, ports[i]!]));
    const net = await FaultNetwork.open({ grpcPorts, rand: mathRand });
    const cluster = new TestCluster();
    const close = async () => {
      await cluster.close();
      await net.close();
    };
    try {
      for (const n of names) {
        await cluster.add(n, {
          SERVICE_GRPC_PORT: String(grpcPorts.get(n)),
          SERVICE_CLUSTER_DIAL_MAP: net.dialMap(n),
          SERVICE_SEED_NODES: n === names[0] ? '' : net.seedFor(n, names[0]!),
        });
      }
      await cluster.waitMembers();
    } catch (err) {
      await close();
      throw err;
    }
    return { cluster, net, close };
  }

  /** Start `count` nodes n1..nN: n1 bootstraps, the others join through n1. */
  static async start(count: number, env: Record<string, string> = {}): Promise<TestCluster> {
    const c = new TestCluster();
    try {
      for (let i = 1; i <= count; i++) await c.add(`n${i}`, env);
      await c.waitMembers();
    } catch (err) {
      await c.close();
      throw err;
    }
    return c;
  }

  seeds(): string {
    return [...this.nodes.values()].slice(0, 3).map((n) => `127.0.0.1:${n.grpcPort}`).join(',');
  }

  /** Start a new node joining through the first nodes (or bootstrapping if it is the first). */
  async add(name: string, env: Record<string, string> = {}): Promise<ClusterNode> {
    const [grpcPort] = await freePorts(1);
    const node: ClusterNode = {
      name,
      grpcPort: grpcPort!,
      dir: path.join(this.root, name),
      env: {
        ...FAST_CLUSTER_ENV,
        SERVICE_ENABLE_CLUSTER: 'true',
        SERVICE_NODE_NAME: name,
        SERVICE_GRPC_PORT: String(grpcPort),
        SERVICE_SEED_NODES: this.seeds(),
        RELEASE_COOKIE: this.cookie,
        SERVICE_DATA_DIR: path.join(this.root, name),
        ...env,
      },
      child: undefined,
    };
    this.nodes.set(name, node);
    await this.startNode(name);
    return node;
  }

  node(name: string): ClusterNode {
    const n = this.nodes.get(name);
    if (n === undefined) throw new Error(`no node ${name}`);
    return n;
  }

  url(name: string): string {
    const child = this.node(name).child;
    if (child === undefined) throw new Error(`node ${name} is not running`);
    return child.url;
  }

  running(): string[] {
    return [...this.nodes.values()].filter((n) => n.child !== undefined).map((n) => n.name);
  }

  async startNode(name: string): Promise<void> {
    const n = this.node(name);
    n.child = await spawnTestNode(n.env);
  }

  async kill9(name: string): Promise<void> {
    const n = this.node(name);
    await n.child?.kill9();
    n.child = undefined;
  }

  async stop(name: string): Promise<void> {
    const n = this.node(name);
    await n.child?.stop();
    n.child = undefined;
  }

  request<T = any>(name: string, method: string, urlPath: string, options: RequestOptions = {}): Promise<Reply<T>> {
    return request<T>(this.url(name), method, urlPath, { key: TEST_ADMIN_KEY, ...options });
  }

  async status(name: string): Promise<{ state: string; is_leader: boolean; leader: string | null; nodes: string[]; healthy_nodes: string[] }> {
    return (await this.request(name, 'GET', '/vectordb/cluster/status')).body;
  }

  /** Every running node is a member and agrees on the leader and the live node list. */
  async waitMembers(timeoutMs = 30_000): Promise<string> {
    return waitFor(
      async () => {
        const names = this.running();
        const all = await Promise.all(names.map((n) => this.status(n)));
        const leader = all[0]?.leader;
        const same = all.every((s) => s.state === 'member' && s.leader === leader && leader !== null && JSON.stringify(s.nodes) === JSON.stringify(all[0]!.nodes));
        return same ? leader! : undefined;
      },
      { timeoutMs, intervalMs: 100, what: 'every node to be a member and agree on the leader' },
    );
  }

  /** Wait until the metadata group has `count` voters that are up (learners get promoted once caught up). */
  async waitVoters(count: number, timeoutMs = 20_000): Promise<void> {
    await waitFor(
      async () => {
        const via = this.running()[0]!;
        const nodes = (await this.request(via, 'GET', '/_cluster/nodes')).body.nodes as { role: string; status: string }[];
        return nodes.filter((n) => n.role === 'voter' && n.status === 'up').length === count;
      },
      { timeoutMs, intervalMs: 100, what: `${count} voters up` },
    );
  }

  async leader(): Promise<string> {
    return waitFor(
      async () => {
        for (const n of this.running()) {
          const s = await this.status(n).catch(() => undefined);
          if (s?.is_leader) return n;
        }
        return undefined;
      },
      { timeoutMs: 15_000, intervalMs: 50, what: 'a metadata leader' },
    );
  }

  async close(): Promise<void> {
    await Promise.all([...this.nodes.values()].map((n) => n.child?.kill9()));
    rmSync(this.root, { recursive: true, force: true });
  }
}
