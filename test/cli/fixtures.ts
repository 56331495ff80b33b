// Answers of the cluster endpoints shared by the render and CLI tests, and firkin as a child
// process.
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { firkinCliArgs } from '../support/built-node.js';

const root = fileURLToPath(new URL('../../', import.meta.url));

/** GET /_cluster/nodes: a leader that reports no heartbeat of its own, an up voter, a down learner elsewhere that recorded no version (its shard leaderships unknown). */
export const DETAILS = {
  leader: 'n1',
  term: 4,
  commit: 120,
  applied: 119,
  nodes: [
    { name: 'n1', http: 'http://127.0.0.1:8081', grpc: '127.0.0.1:9081', zone: 'default', version: '0.9.0', status: 'up', role: 'voter', joined_at: 1_790_000_000_000, last_heartbeat_ms_ago: null, shard_leaders: 3 },
    { name: 'n2', http: 'http://127.0.0.1:8082', grpc: '127.0.0.1:9082', zone: 'default', version: '0.9.0', status: 'up', role: 'voter', joined_at: 1_790_000_001_000, last_heartbeat_ms_ago: 84, shard_leaders: 2 },
    { name: 'n3', http: 'http://127.0.0.1:8083', grpc: '127.0.0.1:9083', zone: 'eu-1', version: null, status: 'down', role: 'learner', joined_at: 1_790_000_002_000, last_heartbeat_ms_ago: 61_500, shard_leaders: null },
  ],
};

/** How firkin prints DETAILS. */
export const DETAILS_TABLE = [
  'leader n1  term 4  commit 120  applied 119',
  'NAME  STATUS  ROLE     LEADS  ZONE     VERSION  HTTP                   GRPC            HEARTBEAT',
  'n1 *  up      voter    3      default  0.9.0    http://127.0.0.1:8081  127.0.0.1:9081  -',
  'n2    up      voter    2      default  0.9.0    http://127.0.0.1:8082  127.0.0.1:9082  84ms ago',
  'n3    down    learner  -      eu-1     ?        http://127.0.0.1:8083  127.0.0.1:9083  1m01s ago',
  '',
].join('\n');

export interface FirkinRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Run firkin (or `command`) from the repository root, without the caller's FIRKIN_URL/FIRKIN_KEY:
 * the test build's CLI when it holds the sources (built-node.ts), else bin/firkin.js.
 */
export function runFirkin(args: string[], env: Record<string, string> = {}, command = [process.execPath, ...firkinCliArgs()]): Promise<FirkinRun> {
  const { FIRKIN_URL: _u, FIRKIN_KEY: _k, ...inherited } = process.env;
  const proc = spawn(command[0]!, [...command.slice(1), ...args], { cwd: root, env: { ...inherited, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  proc.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  proc.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  return new Promise((resolve) => proc.once('close', (code) => resolve({ code, stdout, stderr })));
}
