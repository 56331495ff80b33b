// A real node with the gateway on: temp RocksDB, port 0 (the gateway on the same server),
// a clock the test moves by hand, and requests that carry X-Api-Key instead of a Bearer key.
import { rmSync } from 'node:fs';
import { loadConfig } from '../../src/config.js';
import type { Clock } from '../../src/core/hlc.js';
import { type FirkinNode, startNode } from '../../src/node.js';
import { type Reply, TEST_ADMIN_KEY, request, tempDir } from '../support/node.js';

export const MASTER_KEY = 'master-test-key-0123456789';

export class ManualClock implements Clock {
  constructor(public ms = 1_700_000_000_000) {}
  nowMs(): number {
    return this.ms;
  }
  advance(ms: number): void {
    this.ms += ms;
  }
}

export interface GatewayNode {
  readonly node: FirkinNode;
  readonly url: string;
  readonly clock: ManualClock;
  readonly dataDir: string;
  /** A request with `key` in X-Api-Key (none when undefined). */
  call<T = any>(method: string, path: string, key: string | undefined, body?: unknown, headers?: Record<string, string>): Promise<Reply<T>>;
  admin<T = any>(method: string, path: string, body?: unknown): Promise<Reply<T>>;
  restart(): Promise<void>;
  close(): Promise<void>;
}

export async function startGatewayNode(env: Record<string, string> = {}): Promise<GatewayNode> {
  const dataDir = tempDir('firkin-gateway-');
  const fullEnv = {
    SERVICE_DATA_DIR: dataDir,
    SERVICE_HTTP_PORT: '0',
    SERVICE_GATEWAY_PORT: '0',
    SERVICE_GATEWAY_ENABLED: 'true',
    SERVICE_GATEWAY_MASTER_KEY: MASTER_KEY,
    SERVICE_ADMIN_KEY: TEST_ADMIN_KEY,
    SERVICE_LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    SERVICE_NODE_NAME: 'gateway-test',
    ...env,
  };
  const clock = new ManualClock();
  let node = await startNode(loadConfig(fullEnv), { clock });
  const call: GatewayNode['call'] = (method, path, key, body, headers = {}) =>
    request(node.gatewayUrl!, method, path, { body, key: false, headers: { ...(key === undefined ? {} : { 'x-api-key': key }), ...headers } });
  return {
    get node() {
      return node;
    },
    get url() {
      return node.gatewayUrl!;
    },
    clock,
    dataDir,
    call,
    admin: (method, path, body) => call(method, path, MASTER_KEY, body),
    async restart() {
      await node.close();
      node = await startNode(loadConfig(fullEnv), { clock });
    },
    async close() {
      await node.close();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
