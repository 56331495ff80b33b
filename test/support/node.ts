// A real node for tests: real RocksDB in a temp dir, real HTTP on an ephemeral port.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { loadConfig } from '../../src/config.js';
import type { Clock } from '../../src/core/hlc.js';
import { type FirkinNode, startNode } from '../../src/node.js';

export const TEST_ADMIN_KEY = 'fk_test-admin-key-0123456789abcdefghijklmnopqrs';

/**
 * Test nodes keep the binding's 8 MB block caches: stopping a node takes ~3 ms per MB of cache
 * (0.09 s at 8 MB, ~0.5 s at the product's 128), and the suite stops hundreds of nodes.
 */
export const TEST_CACHE_ENV = { SERVICE_STORAGE_CACHE_MB: '8' } as const;

export interface Reply<T = any> {
  status: number;
  headers: Headers;
  body: T;
  text: string;
}

export interface RequestOptions {
  body?: unknown;
  headers?: Record<string, string>;
  /** Bearer key to send; default the admin key; false sends none. */
  key?: string | false;
  /** Send `body` as-is (string/Buffer) instead of JSON. */
  raw?: boolean;
}

export interface TestNode {
  node: FirkinNode;
  url: string;
  dataDir: string;
  adminKey: string;
  request<T = any>(method: string, path: string, options?: RequestOptions): Promise<Reply<T>>;
  /** Close and start again on the same data dir (and the same port settings). */
  restart(): Promise<void>;
  close(): Promise<void>;
}

/** Every temp dir this process made, removed when it exits (whatever its test removed or not). */
const madeDirs: string[] = [];
let removeOnExit = false;

export function tempDir(prefix = 'firkin-test-'): string {
  const dir = mkdtempSync(path.join(tmpdir(), prefix));
  madeDirs.push(dir);
  if (!removeOnExit) {
    removeOnExit = true;
    // Tap runs each test file in a process of its own: its dirs go with it (a file's tests may
    // reopen a dir until then). Many tests opened stores here and never removed them: CI's
    // /tmp grew by ~170 dirs, some of 75 MB, a run.
    process.on('exit', () => {
      for (const d of madeDirs) rmSync(d, { recursive: true, force: true });
    });
  }
  return dir;
}

export async function request<T = any>(base: string, method: string, urlPath: string, options: RequestOptions = {}): Promise<Reply<T>> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.key !== false && options.key !== undefined) headers.authorization = `Bearer ${options.key}`;
  let body: string | Buffer | undefined;
  if (options.body !== undefined) {
    if (options.raw) body = options.body as string | Buffer;
    else {
      body = JSON.stringify(options.body);
      headers['content-type'] ??= 'application/json';
    }
  }
  const res = await fetch(base + urlPath, { method, headers, body });
  const text = await res.text();
  let parsed: unknown = text;
  if ((res.headers.get('content-type') ?? '').includes('json') && text !== '') parsed = JSON.parse(text);
  return { status: res.status, headers: res.headers, body: parsed as T, text };
}

/** `clock`: an injected wall clock (tests of time-based behaviour advance it instead of sleeping). */
export async function startTestNode(env: Record<string, string> = {}, options: { clock?: Clock; version?: string; protocol?: number } = {}): Promise<TestNode> {
  const dataDir = env.SERVICE_DATA_DIR ?? tempDir();
  const fullEnv = {
    SERVICE_DATA_DIR: dataDir,
    SERVICE_HTTP_PORT: '0',
    SERVICE_ADMIN_KEY: TEST_ADMIN_KEY,
    SERVICE_LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    SERVICE_NODE_NAME: 'test-node',
    ...TEST_CACHE_ENV,
    ...env,
  };
  let node = await startNode(loadConfig(fullEnv), options);
  const self: TestNode = {
    get node() {
      return node;
    },
    get url() {
      return node.url!;
    },
    dataDir,
    adminKey: TEST_ADMIN_KEY,
    request(method, urlPath, options = {}) {
      return request(node.url!, method, urlPath, { ...options, key: options.key ?? TEST_ADMIN_KEY });
    },
    async restart() {
      await node.close();
      node = await startNode(loadConfig(fullEnv), options);
    },
    async close() {
      await node.close();
      if (env.SERVICE_DATA_DIR === undefined) rmSync(dataDir, { recursive: true, force: true });
    },
  };
  return self;
}
