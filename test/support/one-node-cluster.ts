// A cluster node in this process: the cluster's code paths (metadata group, shard groups and
// their leaders, the cluster's routes) behind the same HTTP routes, without child processes.
import { freePorts } from '../raft/kv-cluster.js';
import { request, startTestNode, TEST_ADMIN_KEY, type TestNode } from './node.js';
import { waitFor } from './wait.js';

/** Resolves once the node at `url` says it is a member of its cluster. */
export async function waitForMember(url: string): Promise<void> {
  await waitFor(async () => ((await request(url, 'GET', '/vectordb/cluster/status', { key: TEST_ADMIN_KEY })).body.state === 'member' ? true : undefined), { what: `${url} a member of its cluster`, timeoutMs: 30_000 });
}

/** The cluster settings of a one-node cluster on a free gRPC port (replication factor 1: the only one it can place). */
export async function oneNodeClusterEnv(name = 'n1'): Promise<Record<string, string>> {
  const [grpc] = await freePorts(1);
  return { SERVICE_ENABLE_CLUSTER: 'true', RELEASE_COOKIE: 'one-node-cluster', SERVICE_NODE_NAME: name, SERVICE_GRPC_PORT: String(grpc), SERVICE_REPLICATION_FACTOR: '1' };
}

/** A one-node cluster, a member once this resolves. */
export async function startClusterTestNode(env: Record<string, string> = {}): Promise<TestNode> {
  const node = await startTestNode({ ...(await oneNodeClusterEnv()), ...env });
  try {
    await waitForMember(node.url);
  } catch (err) {
    await node.close();
    throw err;
  }
  return node;
}
