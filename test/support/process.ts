// A node as a real child process, for crash (kill -9) and multi-node tests.
import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { NODE_FLAGS } from '../../src/core/node-flags.js';
import { nodeMainArgs } from './built-node.js';
import { TEST_ADMIN_KEY, TEST_CACHE_ENV } from './node.js';
import { waitFor } from './wait.js';

const root = fileURLToPath(new URL('../../', import.meta.url));

export interface ChildNode {
  proc: ChildProcess;
  url: string;
  output(): string;
  /** SIGKILL: no shutdown code runs. */
  kill9(): Promise<void>;
  /** SIGTERM and wait for exit; resolves with the exit code. */
  stop(): Promise<number | null>;
}

/**
 * Start a child process: `script` under tsx, or `entry` (node's arguments after its flags: a
 * built JavaScript file, the node by built-node.ts); resolves once its output matches `ready`
 * (the first capture group is the URL). A child that fails to start is killed.
 */
export async function spawnScript(options: ({ script: string } | { entry: string[] }) & { args?: string[]; env: Record<string, string>; ready: RegExp; what: string; cwd?: string }): Promise<ChildNode> {
  const entry = 'entry' in options ? options.entry : ['--import', 'tsx', options.script];
  const proc = spawn(process.execPath, [...NODE_FLAGS, ...entry, ...(options.args ?? [])], {
    cwd: options.cwd ?? root,
    env: { ...process.env, ...options.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  proc.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  proc.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number | null>((resolve) => proc.once('exit', (code) => resolve(code)));
  let url: string;
  try {
    url = await waitFor(
      () => {
        if (proc.exitCode !== null) throw new Error(`${options.what} exited with ${proc.exitCode}: ${out}`);
        return options.ready.exec(out)?.[1];
      },
      { timeoutMs: 30_000, what: `${options.what} to listen` },
    );
  } catch (err) {
    proc.kill('SIGKILL'); // never leave an orphan behind a failed start
    throw err;
  }
  return {
    proc,
    url,
    output: () => out,
    async kill9() {
      proc.kill('SIGKILL');
      await exited;
    },
    async stop() {
      proc.kill('SIGTERM');
      return exited;
    },
  };
}

/** `spawnNode` for tests: small block caches (`TEST_CACHE_ENV`); benches spawn the product's defaults. */
export function spawnTestNode(env: Record<string, string>, args: string[] = []): Promise<ChildNode> {
  return spawnNode({ ...TEST_CACHE_ENV, ...env }, args);
}

/**
 * Start the node (built-node.ts: the build, or src/main.ts under tsx; `entry` to choose) with
 * the given env; resolves once it logs its URL (it must log at info).
 */
export function spawnNode(env: Record<string, string>, args: string[] = [], entry: string[] = nodeMainArgs()): Promise<ChildNode> {
  return spawnScript({
    entry,
    args,
    env: { SERVICE_HTTP_PORT: '0', SERVICE_ADMIN_KEY: TEST_ADMIN_KEY, SERVICE_LOG_LEVEL: 'info', ...env },
    ready: /listening on (https?:\/\/[^\s]+) /,
    what: 'child node',
  });
}

/**
 * Run the node expecting it to exit (config errors); returns code and output. One that is
 * still running after `deadlineMs` is killed (code null, the output says so): a test of a
 * start that should fail must not leave a node behind when it does not.
 */
export async function runNodeExpectingExit(env: Record<string, string>, args: string[] = [], deadlineMs = 60_000): Promise<{ code: number | null; output: string }> {
  const proc = spawn(process.execPath, [...NODE_FLAGS, ...nodeMainArgs(), ...args], {
    cwd: root,
    env: { ...process.env, SERVICE_HTTP_PORT: '0', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  proc.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  proc.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  let killed = false;
  const timer = setTimeout(() => {
    killed = true;
    proc.kill('SIGKILL');
  }, deadlineMs);
  const code = await new Promise<number | null>((resolve) => proc.once('exit', (c) => resolve(c)));
  clearTimeout(timer);
  return { code, output: killed ? `${out}(still running after ${deadlineMs} ms: killed)\n` : out };
}
