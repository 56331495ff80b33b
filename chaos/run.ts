// The chaos runner: a cluster of real node processes whose node-to-node links all pass
// through fault proxies, a workload that records every operation, faults on a schedule drawn
// from the seed, then heal, wait for convergence, check, report.
//
//   npm run chaos -- --seed 7 --minutes 5 --nodes 3 --workload keys --nemesis kill,pause,partition
//
// Last line: `chaos: <N> ops, <N> faults, <N> anomalies`; exit 1 when an anomaly was found
// (2 on bad options). Everything it starts is stopped by its own PID before it exits.
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { NODE_FLAGS } from '../src/core/node-flags.js';
import { isReshardEnded } from '../src/cluster/meta-state.js';
import { TEST_ADMIN_KEY, TEST_CACHE_ENV, request, tempDir } from '../test/support/node.js';
import { waitFor } from '../test/support/wait.js';
import { nodeMainArgs } from '../test/support/built-node.js';
import { freePorts } from '../test/raft/kv-cluster.js';
import { FAST_CLUSTER_ENV } from '../test/cluster/harness.js';
import type { FaultWindow } from './checker/availability.js';
import { type NodeView, type PollVerdict, type ReplicaReport, checkConvergence, explainLagging, pollVerdict } from './checker/convergence.js';
import type { KeyOp, Outcome, RegisterOp, SetElement, SetOp } from './checker/history.js';
import { DEFAULT_STEP_BUDGET } from './checker/linearizable.js';
import { type AckedWrite, type FeedPoll, generation } from './checker/changes.js';
import type { NodeListing } from './checker/listing.js';
import type { Scroll } from './checker/scroll.js';
import { type Bm25NodeRead, type Bm25Search, CHAOS_BM25_PARAMS, bucketToken, elementText } from './checker/bm25.js';
import { runCheckers } from './checker/report.js';
import { OptionError, type ChaosOptions, bm25Backend, parseChaosArgs } from './options.js';
import { type ShardRow, everyGroupLed, groupsLosingMajority, mergeShardRows } from './nemesis/group-quorum.js';
import { type Proc, fromChild, kill9, pause, resume, stop } from './nemesis/process.js';
import { type ScheduledEvent, SeededRand, isHeal, schedule } from './nemesis/schedule.js';
import { FaultNetwork } from './proxy/network.js';

const ROOT = fileURLToPath(new URL('../', import.meta.url));

/** Every node process started and not yet exited, and the runs' data dirs: what the hard bound cleans up. */
const liveChildren = new Set<ChildProcess>();
const liveDirs = new Set<string>();

/** What each run still open writes before it is abandoned: its nodes' logs (synchronous: the process exits next). */
const lastWords = new Set<() => void>();

/** The run overran its bound: keep its nodes' logs, kill its node processes (paused ones too) and remove its data, now. */
export function abandonRuns(): void {
  for (const write of lastWords) {
    try {
      write();
    } catch (err) {
      process.stderr.write(`chaos: the nodes' logs could not be kept: ${(err as Error).message}\n`);
    }
  }
  for (const child of liveChildren) child.kill('SIGKILL');
  for (const dir of liveDirs) rmSync(dir, { recursive: true, force: true });
}
/**
 * The run's hard bound, set again by each phase with a budget of its own (the final reads
 * scale with the elements written, which a bound fixed at the start cannot). The CLI shell
 * sets it; a run started another way (tests) has none.
 */
let phaseBound: (what: string, budgetMs: number) => void = () => {};
export function onPhase(bound: (what: string, budgetMs: number) => void): void {
  phaseBound = bound;
}
let phaseStartedMs = 0;
let phaseName = '';
/** Enter a phase: log how long the last one took, and give the new one its bound. */
function phase(what: string, budgetMs: number): void {
  const now = performance.now();
  if (phaseName !== '') log(`chaos: ${phaseName} took ${((now - phaseStartedMs) / 1000).toFixed(1)} s`);
  phaseName = what;
  phaseStartedMs = now;
  phaseBound(what, budgetMs);
}
/** The final reads' floor, per read, for their bound: well below what this runner reaches on 2 busy cores. */
const FINAL_READS_PER_S = 300;
const COOKIE = 'chaos-cookie';
/** The gateway's master key (the keys workload runs the gateway on each node's HTTP port). */
const GATEWAY_MASTER_KEY = 'chaos-gateway-master-key';
/** Tenant keys appear in the keys history under this prefix and the tenant's id. */
const TENANT_PREFIX = 'tenant-';
const REQUEST_TIMEOUT_MS = 5_000;

interface NodeProc {
  name: string;
  env: Record<string, string>;
  child: ChildProcess | undefined;
  proc: Proc | undefined;
  url: string | undefined;
  paused: boolean;
  output: string;
  /**
   * Output of this node's earlier processes (the last 50, 1 MB each), kept for the report: an
   * anomaly early in a run needs the logs of processes long restarted (seed 91's loss at 2 s was
   * undiagnosable with the last 5).
   */
  logs: string[];
  /** Shard leaderships its processes handed over to balance leaders (their log lines). */
  leaderTransfers: number;
  /** Reshard, split or merge switches its processes rolled back for running out of time (their log lines). */
  switchRollbacks: number;
  /**
   * A `replace` fault's leave was accepted: its rejoin waits for `left`, then starts it afresh.
   * True until it has started again, so that another node's leave waits for it as a taker.
   */
  leaving: boolean;
  /** A leave was asked since this node last started afresh, whatever it answered: only then may one have committed. */
  leaveAsked: boolean;
}

/** A `replace` fault waits this long for its node to have left (its replicas moved). */
const LEAVE_TIMEOUT_MS = 90_000;

/** A `remove` fault tries this long to have its dead node removed (it must be `down` first). */
const REMOVE_TIMEOUT_MS = 20_000;
/** A `remove` fault waits this long for the replicas to be in step (`replicasInStep`) before it wipes a disk. */
const READD_CATCH_UP_MS = 15_000;
/** Entries a replica may trail its group's most advanced one and count as in step. */
const REPLICA_LAG = 100;
/** A `replace` fault retries a leave refused for now (409, 503) this long. */
const LEAVE_RETRY_MS = 10_000;

/** The log line of a leader balancing transfer (ShardHost), counted by the runner. */
const LEADER_TRANSFER_LINE = /to balance leaders/g;
/** The log line of a switch rolled back for running out of time (cluster/switch-bound.ts), counted by the runner. */
const SWITCH_ROLLBACK_LINE = /did not finish within \d+ ms of its fence/g;

function log(line: string): void {
  process.stdout.write(`${line}\n`);
}

/** Start a node process; resolves with its URL once it listens (or undefined if it was killed first). */
function startNode(n: NodeProc, waitReady = true): Promise<void> {
  const child = spawn(process.execPath, [...NODE_FLAGS, ...nodeMainArgs()], { cwd: ROOT, env: { ...process.env, ...n.env }, stdio: ['ignore', 'pipe', 'pipe'] });
  n.child = child;
  liveChildren.add(child);
  child.once('exit', () => liveChildren.delete(child));
  n.proc = fromChild(child);
  n.url = undefined;
  n.paused = false;
  if (n.output !== '') n.logs = [...n.logs, n.output].slice(-50);
  n.output = ''; // this process's output only: an old "listening on" line names an old port
  const onData = (d: Buffer) => {
    const text = d.toString();
    n.leaderTransfers += text.match(LEADER_TRANSFER_LINE)?.length ?? 0;
    n.switchRollbacks += text.match(SWITCH_ROLLBACK_LINE)?.length ?? 0;
    n.output = (n.output + text).slice(-1_000_000);
    n.url ??= /listening on (https?:\/\/[^\s]+) /.exec(n.output)?.[1];
  };
  child.stdout!.on('data', onData);
  child.stderr!.on('data', onData);
  if (!waitReady) return Promise.resolve();
  return waitFor(
    () => {
      if (child.exitCode !== null || child.signalCode !== null) throw new Error(`${n.name} exited during start: ${n.output.slice(-2000)}`);
      return n.url !== undefined;
    },
    { timeoutMs: 60_000, what: `${n.name} to listen` },
  ).then(() => undefined);
}

/** Start a stopped node; one that does not come up is logged, and the run goes on (convergence will say). */
async function startOrSay(n: NodeProc): Promise<void> {
  await startNode(n).catch((err: unknown) => log(`chaos: ${n.name} did not start: ${(err as Error).message.slice(0, 300)}`));
}

/** SIGTERM (the clean stop), and the node is down. */
async function stopNode(n: NodeProc): Promise<void> {
  if (n.proc !== undefined) await stop(n.proc);
  n.proc = undefined;
  n.child = undefined;
  n.url = undefined;
}

async function killNode(n: NodeProc): Promise<void> {
  if (n.proc === undefined) return;
  const p = n.proc;
  n.proc = undefined;
  n.child = undefined;
  n.url = undefined;
  await kill9(p).catch(() => undefined);
}

class Recorder {
  readonly ops: KeyOp[] = [];
  readonly registers: RegisterOp[] = [];
  readonly set: SetOp[] = [];
  /** The set workload's scrolls during the run (each finished one). */
  readonly scrolls: Scroll[] = [];
  /** The cas workload's `_changes` follower, and the document writes acknowledged with their revisions. */
  readonly feed = { polls: [] as FeedPoll[], acked: [] as AckedWrite[], refusals: [] as { node: string; since: string; status: number; detail: string }[], cursor: '0', replicatorPolls: 0, resumedMidPage: 0, longPolls: 0 };
  /** Why writes and cas reads were not acknowledged: `<op> <status> <error>` -> count. */
  readonly refusals = new Map<string, number>();
  readonly t0 = performance.now();
  now(): number {
    return Math.round(performance.now() - this.t0);
  }
  refused(op: string, r: Awaited<ReturnType<typeof call>>): void {
    // `committed`: a 504 for a write the leader committed that the answering node had not applied.
    const why = r === undefined ? 'no answer (timeout or reset)' : `${r.status} ${r.status === 0 ? 'refused' : String(r.body?.error)}${r.body?.committed === true ? ' (committed)' : ''}`;
    this.refusals.set(`${op} ${why}`, (this.refusals.get(`${op} ${why}`) ?? 0) + 1);
  }
}

/** One HTTP call with a bound: status and body, or undefined (a timeout or a refused connection). */
async function call(url: string | undefined, method: string, p: string, options: { body?: unknown; key?: string; apiKey?: string; ifMatch?: string; timeoutMs?: number } = {}) {
  if (url === undefined) return undefined;
  const ac = new AbortController();
  const timer = setTimeout(() => ac.abort(), options.timeoutMs ?? REQUEST_TIMEOUT_MS);
  try {
    const headers: Record<string, string> = { authorization: `Bearer ${options.key ?? TEST_ADMIN_KEY}` };
    if (options.body !== undefined) headers['content-type'] = 'application/json';
    if (options.ifMatch !== undefined) headers['if-match'] = `"${options.ifMatch}"`;
    if (options.apiKey !== undefined) headers['x-api-key'] = options.apiKey;
    const res = await fetch(url + p, { method, headers, body: options.body === undefined ? undefined : JSON.stringify(options.body), signal: ac.signal });
    const text = await res.text();
    let body: any = text;
    try {
      body = JSON.parse(text);
    } catch {
      // not JSON: keep the text
    }
    return { status: res.status, body };
  } catch (err) {
    // Refused: it never reached the node (a definite failure). Timed out, or the connection
    // broke after the request was sent (the node died mid-request): unknown.
    const code = ((err as Error & { cause?: { code?: string } }).cause?.code ?? '') as string;
    return ac.signal.aborted || code !== 'ECONNREFUSED' ? undefined : { status: 0, body: String((err as Error).message) };
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Use a key: a node key on `GET /db/…` (404 = authenticated, 401 = refused), a tenant key on the
 * gateway's `GET /v1/collections` (200 = authenticated, 401 = refused); 503 from either: the
 * node cannot vouch for cluster keys now.
 */
async function useKey(url: string | undefined, keyId: string, key: string): Promise<{ r: Awaited<ReturnType<typeof call>>; result?: 'valid' | 'invalid' | 'unavailable' }> {
  const tenant = keyId.startsWith(TENANT_PREFIX);
  const r = tenant ? await call(url, 'GET', '/v1/collections', { apiKey: key }) : await call(url, 'GET', '/db/chaos-nothing-here', { key });
  const result = r?.status === (tenant ? 200 : 404) ? 'valid' : r?.status === 401 ? 'invalid' : r?.status === 503 ? 'unavailable' : undefined;
  return result === undefined ? { r } : { r, result };
}

/**
 * The keys workload: create, revoke and use API keys on random nodes; and a quarter of the
 * time the same with gateway tenants (create a tenant: its first key; delete it: every key of
 * it revoked), checked alike under the key id `tenant-<id>`.
 */
async function keysWorkload(nodes: NodeProc[], o: ChaosOptions, rec: Recorder, untilMs: number, rand: SeededRand): Promise<Map<string, string>> {
  const keys = new Map<string, string>(); // id -> key, for acknowledged (and answered) creates
  const revoked: string[] = [];
  let tenantSeq = 0;
  const pick = <T>(xs: readonly T[]): T => xs[rand.int(xs.length)]!;
  const client = async (clientId: string) => {
    while (rec.now() < untilMs) {
      const n = pick(nodes);
      if (n.url === undefined) {
        // Down (killed or starting): a client would not reach it at all; try another.
        await new Promise((r) => setTimeout(r, 20));
        continue;
      }
      // The stale-keys fixture breaks node keys only: tenants there would just dilute its checks.
      const tenants = o.broken !== 'stale-keys' && rand.int(4) === 0;
      const ours = [...keys.keys()].filter((id) => id.startsWith(TENANT_PREFIX) === tenants);
      const roll = rand.int(10);
      const invokeMs = rec.now();
      if (roll < 3 || ours.length === 0) {
        const tenantId = `c${tenantSeq++}`;
        const r = tenants
          ? await call(n.url, 'POST', '/admin/tenants', { apiKey: GATEWAY_MASTER_KEY, body: { tenant_id: tenantId, rpm_limit: 10_000_000 } })
          : await call(n.url, 'POST', '/_keys', { body: { permissions: ['read'], label: 'chaos' } });
        const outcome = r?.status === 201 ? 'ok' : r === undefined || r.status >= 500 ? 'unknown' : 'fail';
        if (r?.status === 0) await new Promise((res) => setTimeout(res, 20));
        const keyId = r?.status !== 201 ? undefined : tenants ? `${TENANT_PREFIX}${tenantId}` : (r.body.id as string);
        if (keyId !== undefined) keys.set(keyId, (tenants ? r!.body.api_key : r!.body.key) as string);
        else rec.refused(tenants ? 'tenant create' : 'key create', r);
        rec.ops.push({ kind: 'create', process: clientId, node: n.name, invokeMs, completeMs: rec.now(), outcome, ...(keyId === undefined ? {} : { keyId }) });
      } else if (roll < 4) {
        const keyId = pick(ours);
        const r = tenants ? await call(n.url, 'DELETE', `/admin/tenants/${keyId.slice(TENANT_PREFIX.length)}`, { apiKey: GATEWAY_MASTER_KEY }) : await call(n.url, 'DELETE', `/_keys/${keyId}`);
        const outcome = r?.status === 200 ? 'ok' : r === undefined || r.status >= 500 ? 'unknown' : 'fail';
        if (r?.status === 0) await new Promise((res) => setTimeout(res, 20));
        rec.ops.push({ kind: 'revoke', process: clientId, node: n.name, invokeMs, completeMs: rec.now(), outcome, keyId, ...(r?.status === 404 ? { absent: true } : {}) });
        if (outcome === 'ok') revoked.push(keyId);
        else rec.refused(tenants ? 'tenant delete' : 'key revoke', r);
      } else {
        const phantom = roll === 9;
        // Half the uses go to recently revoked keys: where a stale node would betray itself.
        const recent = revoked.slice(-8).filter((id) => keys.has(id) && id.startsWith(TENANT_PREFIX) === tenants);
        const keyId = phantom ? `${tenants ? TENANT_PREFIX : ''}phantom-${rand.int(1e9)}` : recent.length > 0 && roll < 7 ? pick(recent) : pick(ours);
        const key = phantom ? (tenants ? `fgw_${'p'.repeat(40)}` : `fk_${'p'.repeat(43)}`) : keys.get(keyId)!;
        const { r, result } = await useKey(n.url, keyId, key);
        const outcome = result === 'valid' || result === 'invalid' ? 'ok' : r === undefined ? 'unknown' : 'fail';
        if (r?.status === 0) await new Promise((res) => setTimeout(res, 20));
        rec.ops.push({ kind: 'check', process: clientId, node: n.name, invokeMs, completeMs: rec.now(), outcome, keyId, phantom, ...(result === undefined ? {} : { result }) });
      }
    }
  };
  await Promise.all(Array.from({ length: o.clients }, (_, i) => client(`c${i + 1}`)));
  return keys;
}

// ---- data workloads: a replicated vector collection (3 shards, replication factor 3) ----------

const DATA = 'chaos';
/**
 * Registers in a run: 5, and two more per minute past that, so each key's history stays small
 * enough for the linearizability search (its cost grows fast with the ops of one key,
 * unknown writes most: they stay open to the end).
 */
const registerKeys = (minutes: number) => Math.max(5, Math.round(minutes * 2));
const DOC_VECTOR = [1, 0, 0, 0];

/** The collection of the register and set workloads; the set workload's has a keyword index (`--bm25`). */
async function createDataCollection(nodes: NodeProc[], o: ChaosOptions): Promise<void> {
  const bm25 = o.workload === 'set' ? { bm25_backend: bm25Backend(o), bm25: CHAOS_BM25_PARAMS } : {};
  const r = await call(nodes[0]!.url, 'PUT', `/vectordb/collections/${DATA}`, { body: { dimensions: DOC_VECTOR.length, num_shards: 3, replication_factor: 3, ...bm25 } });
  if (r?.status !== 200 && r?.status !== 201) throw new Error(`chaos: could not create the data collection: ${r?.status} ${JSON.stringify(r?.body).slice(0, 300)}`);
}

/** A write's outcome: acknowledged, refused before it could take effect (4xx, refused connection), or unknown. */
function writeOutcome(r: Awaited<ReturnType<typeof call>>, okStatus: number): Outcome {
  if (r === undefined) return 'unknown';
  if (r.status === okStatus) return 'ok';
  if (r.status === 0 || (r.status >= 400 && r.status < 500)) return 'fail';
  return 'unknown'; // 5xx: no_quorum and timeouts may still commit
}

async function pauseAfterRefusal(r: Awaited<ReturnType<typeof call>>): Promise<void> {
  if (r?.status === 0) await new Promise((res) => setTimeout(res, 20));
}

/** Registers: documents r0..r4; writes set metadata.v to a unique value, reads are linearizable GETs. */
async function registerWorkload(nodes: NodeProc[], o: ChaosOptions, rec: Recorder, untilMs: number, rand: SeededRand): Promise<void> {
  let seq = 0;
  const client = async (clientId: string) => {
    while (rec.now() < untilMs) {
      const n = nodes[rand.int(nodes.length)]!;
      if (n.url === undefined) {
        await new Promise((r) => setTimeout(r, 20));
        continue;
      }
      const key = `r${rand.int(registerKeys(o.minutes))}`;
      const invokeMs = rec.now();
      if (rand.int(2) === 0) {
        const value = `${clientId}-${++seq}`;
        const r = await call(n.url, 'POST', `/vectordb/collections/${DATA}/docs`, { body: { id: key, vector: DOC_VECTOR, metadata: { v: value } } });
        rec.registers.push({ kind: 'write', process: clientId, node: n.name, invokeMs, completeMs: rec.now(), outcome: writeOutcome(r, 201), key, value });
        await pauseAfterRefusal(r);
      } else {
        const r = await call(n.url, 'GET', `/vectordb/collections/${DATA}/docs/${key}`);
        // The collection exists all along: a node that says otherwise reads `null` here, which
        // the checker judges; the line says which 404 it was.
        if (r?.status === 404 && /^collection /.test(String(r.body?.message))) log(`chaos: ${String(rec.now()).padStart(7)} ms  ${n.name} answered 404 for the collection itself: ${r.body.message}`);
        const ok = r?.status === 200 || (r?.status === 404 && r.body?.error === 'not_found');
        const value = r?.status === 200 ? ((r.body?.metadata?.v as string | undefined) ?? null) : null;
        rec.registers.push({ kind: 'read', process: clientId, node: n.name, invokeMs, completeMs: rec.now(), outcome: ok ? 'ok' : r?.status === 0 ? 'fail' : 'unknown', key, ...(ok ? { value } : {}) });
        await pauseAfterRefusal(r);
      }
    }
  };
  await Promise.all(Array.from({ length: o.clients }, (_, i) => client(`c${i + 1}`)));
}

/** A set: new documents added, earlier ones deleted; returns every element someone tried to add. */
async function setWorkload(nodes: NodeProc[], o: ChaosOptions, rec: Recorder, untilMs: number, rand: SeededRand): Promise<string[]> {
  const attempted: string[] = [];
  let seq = 0;
  const client = async (clientId: string) => {
    while (rec.now() < untilMs) {
      const n = nodes[rand.int(nodes.length)]!;
      if (n.url === undefined) {
        await new Promise((r) => setTimeout(r, 20));
        continue;
      }
      const invokeMs = rec.now();
      if (rand.int(10) < 7 || attempted.length === 0) {
        const element = `e${++seq}`;
        attempted.push(element);
        const r = await call(n.url, 'POST', `/vectordb/collections/${DATA}/docs`, { body: { id: element, vector: DOC_VECTOR, text: elementText(element), metadata: {} } });
        rec.set.push({ kind: 'add', process: clientId, node: n.name, invokeMs, completeMs: rec.now(), outcome: writeOutcome(r, 201), element });
        await pauseAfterRefusal(r);
      } else {
        const element = attempted[rand.int(attempted.length)]!;
        const r = await call(n.url, 'DELETE', `/vectordb/collections/${DATA}/docs/${element}`);
        // 404: nothing was there to delete, so the delete had no effect.
        rec.set.push({ kind: 'delete', process: clientId, node: n.name, invokeMs, completeMs: rec.now(), outcome: r?.status === 404 ? 'fail' : writeOutcome(r, 200), element, ...(r?.status === 404 ? { absent: true } : {}) });
        await pauseAfterRefusal(r);
      }
    }
  };
  // The scroller has its own random stream: the clients' choices stay those of the seed.
  await Promise.all([...Array.from({ length: o.clients }, (_, i) => client(`c${i + 1}`)), scroller(nodes, rec, untilMs, new SeededRand(o.seed + 5))]);
  return attempted;
}

/**
 * `ask` again every 100 ms until it answers (not undefined) or `ms` have passed since the first
 * ask: the final reads' and searches' retry. Undefined: no answer in time.
 */
async function untilAnswered<T>(ms: number, ask: () => Promise<T | undefined>): Promise<T | undefined> {
  const until = performance.now() + ms;
  for (;;) {
    const answer = await ask();
    if (answer !== undefined || performance.now() > until) return answer;
    await new Promise((res) => setTimeout(res, 100));
  }
}

/**
 * The whole collection by scroll, pages of `limit` from `next_offset`, each page asked through
 * `pick()` (again, for `retryMs`, when not answered: `refused` hears why). Undefined: a page was
 * never answered.
 */
async function scrollAll(pick: () => NodeProc, limit: number, retryMs: number, refused: (r: Awaited<ReturnType<typeof call>>) => void = () => {}): Promise<{ ids: string[]; nodes: string[] } | undefined> {
  const ids: string[] = [];
  const nodes: string[] = [];
  let offset: string | null | undefined;
  while (offset !== null) {
    const page = await untilAnswered(retryMs, async () => {
      const n = pick();
      const r = await call(n.url, 'POST', `/vectordb/collections/${DATA}/docs/scroll`, { body: { limit, ...(offset === undefined ? {} : { offset }) } });
      if (r?.status === 200) return { node: n.name, documents: r.body.documents as { id: string }[], next: r.body.next_offset as string | null };
      refused(r);
      return undefined;
    });
    if (page === undefined) return undefined;
    ids.push(...page.documents.map((d) => d.id));
    nodes.push(page.node);
    offset = page.next;
  }
  return { ids, nodes };
}

/** A scroll page of 100 (small: a scroll spans more of the run's switches). */
const SCROLL_PAGE = 100;

/**
 * The set workload's scroller: lists the collection from its start over and over while the
 * clients write and the collection is resharded, each page through a random node; a page not
 * answered is asked again (through another node) for 10 s, then the scroll is dropped (not
 * judged). Each finished scroll goes to the scroll checker.
 */
async function scroller(nodes: NodeProc[], rec: Recorder, untilMs: number, rand: SeededRand): Promise<void> {
  while (rec.now() < untilMs) {
    const startMs = rec.now();
    const scrolled = await scrollAll(() => nodes[rand.int(nodes.length)]!, SCROLL_PAGE, 10_000, (r) => rec.refused('scroll', r));
    if (scrolled !== undefined) rec.scrolls.push({ startMs, endMs: rec.now(), ...scrolled });
    await new Promise((res) => setTimeout(res, 200 + rand.int(300)));
  }
}

/** After healing: each node's own view of the whole set (stale reads answer from its replicas). */
async function finalSetReads(nodes: NodeProc[], rec: Recorder, attempted: readonly string[]): Promise<void> {
  let loggedMs = performance.now();
  for (const n of nodes) {
    const invokeMs = rec.now();
    const present: string[] = [];
    let answered = true;
    for (let i = 0; i < attempted.length && answered; i += 16) {
      if (performance.now() - loggedMs > 15_000) {
        loggedMs = performance.now();
        log(`chaos: final reads on ${n.name}: ${i} of ${attempted.length} elements`);
      }
      await Promise.all(
        attempted.slice(i, i + 16).map(async (element) => {
          const until = performance.now() + 15_000;
          for (;;) {
            const r = await call(n.url, 'GET', `/vectordb/collections/${DATA}/docs/${element}?consistency=stale`);
            if (r?.status === 200) present.push(element);
            if (r?.status === 200 || r?.status === 404) return;
            if (performance.now() > until) {
              answered = false;
              return;
            }
            await new Promise((res) => setTimeout(res, 100));
          }
        }),
      );
    }
    rec.set.push({ kind: 'read', node: n.name, invokeMs, completeMs: rec.now(), outcome: answered ? 'ok' : 'unknown', final: true, ...(answered ? { elements: present } : {}) });
  }
}

/** A node's final set read, the elements it holds (undefined: it had no answered one). */
function finalPresent(rec: Recorder, n: NodeProc): readonly SetElement[] | undefined {
  const final = rec.set.find((op) => op.kind === 'read' && op.final === true && op.node === n.name);
  return final?.kind === 'read' && final.outcome === 'ok' ? final.elements : undefined;
}

/** Element tokens searched on every node after the bucket tokens (the same ones on each). */
const BM25_ELEMENT_PROBES = 20;

/**
 * After the final set reads: each node searches its replicas (`consistency: stale`) for every
 * bucket token (k 1000, above a bucket's size) and some elements' own tokens, for the keyword
 * index's checker to hold against that node's final read; each search once through
 * `search/bm25` and once through `search/hybrid` (every document's vector as the query vector,
 * weighted 0: the keyword list decides the order, and what the vector list adds must exist).
 * An answer that is not a 200 or is partial is asked again for 15 s, as a final read is.
 */
async function finalBm25Searches(nodes: NodeProc[], rec: Recorder, attempted: readonly string[], rand: SeededRand): Promise<Bm25NodeRead[]> {
  const buckets = [...new Set(attempted.map(bucketToken))];
  const probes = Array.from({ length: Math.min(BM25_ELEMENT_PROBES, attempted.length) }, () => attempted[rand.int(attempted.length)]!);
  const queries = [...buckets.map((query) => ({ query, k: 1000 })), ...probes.map((query) => ({ query, k: 10 }))];
  const reads: Bm25NodeRead[] = [];
  for (const n of nodes) {
    const present = finalPresent(rec, n);
    const ask = async (query: string, k: number, via?: 'hybrid'): Promise<Bm25Search> => {
      const hits = await untilAnswered(15_000, async () => {
        const r =
          via === 'hybrid'
            ? await call(n.url, 'POST', `/vectordb/collections/${DATA}/search/hybrid`, { body: { query, vector: DOC_VECTOR, k, bm25_weight: 1, vector_weight: 0, consistency: 'stale' } })
            : await call(n.url, 'POST', `/vectordb/collections/${DATA}/search/bm25`, { body: { query, k, consistency: 'stale' } });
        if (r?.status !== 200 || r.body?.partial === true) return undefined;
        return via === 'hybrid'
          ? (r.body.results as { id: string; bm25_score: number | null }[]).map(({ id, bm25_score }) => ({ id, score: bm25_score }))
          : (r.body.results as { id: string; score: number }[]).map(({ id, score }) => ({ id, score }));
      });
      return { query, k, ...(via === undefined ? {} : { via }), ...(hits === undefined ? {} : { hits }) };
    };
    const searches = await Promise.all(queries.flatMap(({ query, k }) => [ask(query, k), ask(query, k, 'hybrid')]));
    reads.push({ node: n.name, present, searches });
  }
  return reads;
}

/**
 * After the final set reads: each node lists the whole collection with scroll (pages of 1,000
 * from `next_offset`, linearizable), for the listing checker to hold against that node's final
 * read. A page not answered is asked again for 15 s; then the node's listing is given up.
 */
async function finalListings(nodes: NodeProc[], rec: Recorder): Promise<NodeListing[]> {
  const out: NodeListing[] = [];
  for (const n of nodes) out.push({ node: n.name, present: finalPresent(rec, n), listed: (await scrollAll(() => n, 1000, 15_000))?.ids });
  return out;
}

/** Final linearizable reads of every register through every node (they join the history). */
async function finalRegisterReads(nodes: NodeProc[], rec: Recorder, minutes: number): Promise<void> {
  for (const n of nodes) {
    for (let k = 0; k < registerKeys(minutes); k++) {
      const key = `r${k}`;
      const invokeMs = rec.now();
      const r = await call(n.url, 'GET', `/vectordb/collections/${DATA}/docs/${key}`);
      const ok = r?.status === 200 || (r?.status === 404 && r.body?.error === 'not_found');
      rec.registers.push({ kind: 'read', process: `final-${n.name}`, node: n.name, invokeMs, completeMs: rec.now(), outcome: ok ? 'ok' : 'unknown', key, ...(ok ? { value: r?.status === 200 ? ((r.body?.metadata?.v as string | undefined) ?? null) : null } : {}) });
    }
  }
}

// ---- cas: documents of a clustered VDB (2 shards, replica_factor 3) as registers --------------

/**
 * Each document `k<i>` is a register whose value is its body's `v`; every write puts a value
 * unique to the run, so a revision names exactly one value and "the rev I hold is current" is
 * "the value I read is current". A PUT naming a rev is therefore cas(value read -> new value):
 * 201 it found it (result true), 409 it did not and changed nothing (result false: the shard
 * decides conflicts when it applies the entry, in log order). A PUT without a rev (the client
 * saw no document) is cas(null -> new): 409 when the document exists.
 */
async function createCasVdb(nodes: NodeProc[]): Promise<void> {
  const r = await call(nodes[0]!.url, 'POST', '/vdb', { body: { name: DATA, shard_count: 2, placement: { replica_factor: 3 } } });
  if (r?.status !== 201) throw new Error(`chaos: could not create the VDB: ${r?.status} ${JSON.stringify(r?.body).slice(0, 300)}`);
}

interface CasRead {
  readonly outcome: Outcome;
  readonly value?: string | null;
  readonly rev?: string;
}

/**
 * A linearizable GET of a cas register: a document, or a `_local` one (key `_local/k<i>`);
 * 404 "document … not found" ("local document …" for a `_local` one) is the register at null.
 */
async function casRead(url: string | undefined, key: string, rec: Recorder): Promise<CasRead> {
  const r = await call(url, 'GET', `/vdb/${DATA}/${key}`);
  if (r?.status === 200) return { outcome: 'ok', value: (r.body?.v as string | undefined) ?? null, rev: r.body?._rev as string };
  if (r?.status === 404 && (isLocalKey(key) ? /^local document .* not found$/ : /^document .* not found$/).test(String(r.body?.message))) return { outcome: 'ok', value: null };
  rec.refused('read', r);
  return { outcome: r?.status === 0 ? 'fail' : 'unknown' };
}

/**
 * The cas registers: documents `k<i>` and as many `_local/k<i>` documents (replication
 * checkpoints: a `local` entry in their shard's log, revisions `0-<n>`, one per value as for a
 * document, since each write that passes its check is the next number).
 */
const casKeys = (minutes: number): string[] => Array.from({ length: registerKeys(minutes) }, (_, k) => [`k${k}`, `_local/k${k}`]).flat();
const isLocalKey = (key: string) => key.startsWith('_local/');

/**
 * read (40%): GET. write (30%): PUT naming the rev this client last read of the key, however
 * old (often a 409 under contention). cas (30%): GET, then PUT naming the rev it returned. The
 * reads are recorded as reads, the PUTs as cas ops over the PUT's own interval.
 */
async function casWorkload(nodes: NodeProc[], o: ChaosOptions, rec: Recorder, untilMs: number, rand: SeededRand): Promise<void> {
  let seq = 0;
  const keys = casKeys(o.minutes);
  const pickNode = () => nodes[rand.int(nodes.length)]!;
  const client = async (clientId: string) => {
    const lastRead = new Map<string, { value: string | null; rev?: string }>();
    const read = async (n: NodeProc, key: string): Promise<CasRead> => {
      const invokeMs = rec.now();
      const r = await casRead(n.url, key, rec);
      rec.registers.push({ kind: 'read', process: clientId, node: n.name, invokeMs, completeMs: rec.now(), outcome: r.outcome, key, ...(r.outcome === 'ok' ? { value: r.value! } : {}) });
      if (r.outcome === 'ok') lastRead.set(key, { value: r.value!, ...(r.rev === undefined ? {} : { rev: r.rev }) });
      if (r.outcome === 'fail') await new Promise((res) => setTimeout(res, 20));
      return r;
    };
    while (rec.now() < untilMs) {
      const n = pickNode();
      if (n.url === undefined) {
        await new Promise((r) => setTimeout(r, 20));
        continue;
      }
      const key = keys[rand.int(keys.length)]!;
      const roll = rand.int(10);
      if (roll < 4) {
        await read(n, key);
        continue;
      }
      if (roll >= 7 && (await read(n, key)).outcome !== 'ok') continue;
      const from = lastRead.get(key) ?? { value: null };
      const value = `${clientId}-${++seq}`;
      const invokeMs = rec.now();
      // A `_local` document names its revision in the body (CouchDB's checkpointers do).
      const r = isLocalKey(key)
        ? await call(n.url, 'PUT', `/vdb/${DATA}/${key}`, { body: { v: value, ...(from.rev === undefined ? {} : { _rev: from.rev }) } })
        : await call(n.url, 'PUT', `/vdb/${DATA}/${key}`, { body: { v: value }, ...(from.rev === undefined ? {} : { ifMatch: from.rev }) });
      const conflict = r?.status === 409 && r.body?.error === 'conflict';
      const outcome: Outcome = r?.status === 201 || conflict ? 'ok' : writeOutcome(r, 201);
      if (outcome !== 'ok') rec.refused('cas', r);
      rec.registers.push({ kind: 'cas', process: clientId, node: n.name, invokeMs, completeMs: rec.now(), outcome, key, expected: from.value, value, ...(outcome === 'ok' ? { result: !conflict } : {}) });
      if (r?.status === 201) {
        lastRead.set(key, { value, rev: r.body?.rev as string });
        if (!isLocalKey(key)) rec.feed.acked.push({ key, rev: r.body?.rev as string, invokeMs });
      }
      await pauseAfterRefusal(r);
    }
  };
  // Its own random stream: the clients' choices stay those of the seed before the follower.
  await Promise.all([...Array.from({ length: o.clients }, (_, i) => client(`c${i + 1}`)), feedFollower(nodes, rec, untilMs, new SeededRand(o.seed + 4))]);
}

/**
 * One page of the cas VDB's `_changes` through `n`, from the follower's cursor (a replicator's
 * poll): recorded, and the cursor moved. Returns how many changes it listed; undefined when it
 * was not answered (a 5xx, a timeout, a refused connection, a 4xx: only a 400, the cursor
 * refused, is the checker's). `replicator`: CouchDB's replicator form (`style=all_docs`, each
 * change's `seq` a cursor), and `cutAt` a change of the page to resume after, as a replicator
 * that checkpointed there and stopped: only the changes up to it count as read. `longpoll`:
 * the node holds the request up to a second until there is a change.
 */
async function pollFeed(n: NodeProc, rec: Recorder, how: { form: 'plain' | 'longpoll' | 'replicator'; cutAt?: number } = { form: 'plain' }): Promise<number | undefined> {
  if (n.url === undefined) return undefined;
  const since = rec.feed.cursor;
  const invokeMs = rec.now();
  const form = how.form === 'replicator' ? '&style=all_docs' : how.form === 'longpoll' ? '&feed=longpoll&timeout=1000' : '';
  const r = await call(n.url, 'GET', `/vdb/${DATA}/_changes?since=${encodeURIComponent(since)}&limit=1000${form}`);
  if (r?.status !== 200) {
    if (r?.status === 400) rec.feed.refusals.push({ node: n.name, since, status: r.status, detail: JSON.stringify(r.body).slice(0, 300) });
    else rec.refused('feed', r);
    return undefined;
  }
  let changes: { id: string; rev: string }[];
  let cursor = String(r.body.last_seq);
  if (how.form === 'replicator') {
    let rows = r.body.results as { id: string; seq: string; changes: { rev: string }[] }[];
    rec.feed.replicatorPolls++;
    if (how.cutAt !== undefined && rows.length > 1) {
      rec.feed.resumedMidPage++;
      rows = rows.slice(0, (how.cutAt % rows.length) + 1);
      cursor = String(rows.at(-1)!.seq);
    }
    // The newest leaf (a cas chain has one).
    changes = rows.map(({ id, changes: leaves }) => ({ id, rev: leaves.map((l) => l.rev).sort((a, b) => generation(b) - generation(a))[0]! }));
  } else {
    changes = (r.body.changes as { id: string; rev: string }[]).map(({ id, rev }) => ({ id, rev }));
  }
  rec.feed.polls.push({ node: n.name, invokeMs, completeMs: rec.now(), changes });
  rec.feed.cursor = cursor;
  return changes.length;
}

/**
 * The follower during the run: a poll through a random node every 200-500 ms, half of them in
 * the replicator's form (half of those resuming after a change inside the page), a quarter
 * long-polls.
 */
async function feedFollower(nodes: NodeProc[], rec: Recorder, untilMs: number, rand: SeededRand): Promise<void> {
  while (rec.now() < untilMs) {
    const roll = rand.int(4);
    const form = roll < 2 ? 'replicator' : roll === 2 ? 'plain' : 'longpoll';
    const cutAt = form === 'replicator' && rand.int(2) === 0 ? rand.int(1000) : undefined;
    if (form === 'longpoll') rec.feed.longPolls++;
    await pollFeed(nodes[rand.int(nodes.length)]!, rec, { form, ...(cutAt === undefined ? {} : { cutAt }) });
    await new Promise((r) => setTimeout(r, 200 + rand.int(300)));
  }
}

/** After healing: the follower reads on, through each node in turn, to an empty page (60 s at most). */
async function drainFeed(nodes: NodeProc[], rec: Recorder): Promise<boolean> {
  const until = performance.now() + 60_000;
  for (let i = 0; performance.now() < until; i++) {
    const listed = await pollFeed(nodes[i % nodes.length]!, rec);
    if (listed === 0) return true;
    if (listed === undefined) await new Promise((r) => setTimeout(r, 200));
  }
  return false;
}

/**
 * Final linearizable reads of every cas document through every node; then the whole VDB
 * through `_all_docs` on every node (each shard's leader after a ReadIndex barrier): every
 * register it lists, and at null every one it lacks, is a read over the listing's interval,
 * checked with the rest.
 */
async function finalCasReads(nodes: NodeProc[], rec: Recorder, minutes: number): Promise<void> {
  for (const n of nodes) {
    for (const key of casKeys(minutes)) {
      const invokeMs = rec.now();
      const r = await casRead(n.url, key, rec);
      rec.registers.push({ kind: 'read', process: `final-${n.name}`, node: n.name, invokeMs, completeMs: rec.now(), outcome: r.outcome === 'ok' ? 'ok' : 'unknown', key, ...(r.outcome === 'ok' ? { value: r.value! } : {}) });
    }
  }
  for (const n of nodes) {
    const invokeMs = rec.now();
    const r = await call(n.url, 'GET', `/vdb/${DATA}/_all_docs?include_docs=true`);
    const completeMs = rec.now();
    if (r?.status !== 200) {
      rec.refused('read', r);
      continue;
    }
    const listed = new Map((r.body.rows as { id: string; doc?: { v?: string } }[]).map((row) => [row.id, row.doc?.v ?? null]));
    for (let k = 0; k < registerKeys(minutes); k++) {
      const key = `k${k}`;
      // One process per listed register: the rows were read concurrently, one per shard.
      rec.registers.push({ kind: 'read', process: `list-${n.name}-${key}`, node: n.name, invokeMs, completeMs, outcome: 'ok', key, value: listed.get(key) ?? null });
    }
  }
}

/** A split or merge waits this long for its answer (it answers when the job ends). */
const REBALANCE_TIMEOUT_MS = 90_000;
/** A run with a longer time than this without an acknowledged write keeps the nodes' logs too, to read the gap against. */
const LONG_GAP_MS = 15_000;

/**
 * `--rebalance`: through a random node every 4 to 10 s after the last answer (none started in
 * the run's last 30 s, or its last quarter when shorter), `step` asks for one job and says what it was answered (undefined:
 * nothing asked). Returns the answers counted, by kind and status.
 */
async function rebalanceLoop(nodes: NodeProc[], untilMs: number, rec: Recorder, rand: SeededRand, step: (n: NodeProc) => Promise<string | undefined>): Promise<Map<string, number>> {
  const answers = new Map<string, number>();
  for (;;) {
    await new Promise((r) => setTimeout(r, 4_000 + rand.int(6_000)));
    if (rec.now() > untilMs - Math.min(30_000, untilMs / 4)) return answers;
    const answer = await step(nodes[rand.int(nodes.length)]!);
    if (answer !== undefined) answers.set(answer, (answers.get(answer) ?? 0) + 1);
  }
}

/**
 * cas: split or merge the VDB's shards, one job at a time: at 2 shards a split, at 4 a merge
 * of two adjacent shards, between either (seeded). The request answers when the job ends.
 */
async function splitOrMerge(n: NodeProc, rec: Recorder, rand: SeededRand): Promise<string> {
  const shards = await call(n.url, 'GET', `/vdb/${DATA}/_shards`);
  if (shards?.status !== 200) return `_shards ${shards?.status ?? 'timeout'}`;
  const ranges = (shards.body.ranges as { shard_id: number; start_hash: number }[]).sort((a, b) => a.start_hash - b.start_hash);
  const split = ranges.length <= 2 || (ranges.length < 4 && rand.int(2) === 0);
  const startedMs = rec.now();
  let r: Awaited<ReturnType<typeof call>>;
  let what: string;
  if (split) {
    const shard = ranges[rand.int(ranges.length)]!.shard_id;
    what = `split of shard ${shard}`;
    r = await call(n.url, 'POST', `/vdb/${DATA}/_shards/${shard}/_split`, { body: {}, timeoutMs: REBALANCE_TIMEOUT_MS });
  } else {
    const i = rand.int(ranges.length - 1);
    const [into, from] = [ranges[i]!.shard_id, ranges[i + 1]!.shard_id];
    what = `merge of shard ${from} into ${into}`;
    r = await call(n.url, 'POST', `/vdb/${DATA}/_shards/${from}/_merge`, { body: { target_shard: into }, timeoutMs: REBALANCE_TIMEOUT_MS });
  }
  log(`chaos: ${String(rec.now()).padStart(7)} ms  ${what} through ${n.name}: ${r?.status ?? 'no answer'} after ${rec.now() - startedMs} ms${r !== undefined && r.status !== 200 ? ` ${JSON.stringify(r.body).slice(0, 200)}` : ''}`);
  return `${split ? 'split' : 'merge'} ${r?.status ?? 'timeout'}`;
}

/**
 * register, set: reshard the collection to a count from 2 to 5 other than its own, one job at a
 * time (the request answers at once; the job runs on the metadata leader).
 */
async function reshard(n: NodeProc, rec: Recorder, rand: SeededRand): Promise<string | undefined> {
  const job = await call(n.url, 'GET', `/vectordb/collections/${DATA}/reshard`);
  if (job?.status === 200 && !isReshardEnded(job.body.state as string)) return undefined; // one at a time
  if (job?.status === 200 && job.body.state === 'failed') log(`chaos: ${String(rec.now()).padStart(7)} ms  the last reshard failed: ${JSON.stringify(job.body.last_error).slice(0, 300)}`);
  const info = await call(n.url, 'GET', `/vectordb/collections/${DATA}`);
  const current = info?.body?.num_shards as number | undefined;
  if (info?.status !== 200 || current === undefined) return `collection info ${info?.status ?? 'timeout'}`;
  const counts = [2, 3, 4, 5].filter((c) => c !== current);
  const to = counts[rand.int(counts.length)]!;
  const r = await call(n.url, 'POST', `/vectordb/collections/${DATA}/reshard`, { body: { num_shards: to } });
  log(`chaos: ${String(rec.now()).padStart(7)} ms  reshard ${current} -> ${to} through ${n.name}: ${r?.status ?? 'no answer'}${r !== undefined && r.status !== 200 ? ` ${JSON.stringify(r.body).slice(0, 200)}` : ''}`);
  return `reshard ${r?.status ?? 'timeout'}`;
}

/**
 * After healing: wait until no split, merge or reshard job is running (they resume after the
 * faults). Returns the jobs still running at the deadline: each is an anomaly (a job that
 * never ends leaves its VDB or collection half moved).
 */
async function jobsEnded(nodes: NodeProc[], timeoutMs: number): Promise<{ id: string; step: string }[]> {
  const running = async () => {
    for (const n of nodes) {
      const r = await call(n.url, 'GET', '/_cluster/jobs');
      if (r?.status !== 200) continue;
      return (r.body.jobs as { id: string; step: string }[]).filter((j) => !isReshardEnded(j.step));
    }
    return undefined;
  };
  try {
    await waitFor(async () => ((await running())?.length === 0 ? true : undefined), { timeoutMs, intervalMs: 250, what: 'the rebalance jobs to end' });
    return [];
  } catch {
    const stuck = (await running()) ?? [];
    log(`chaos: jobs still running after ${timeoutMs / 1000} s: ${JSON.stringify(stuck).slice(0, 3000)}`);
    return stuck;
  }
}

/** Process faults that take a node out (its heal is a no-op when the fault was skipped). */
const TAKES_OUT: readonly ScheduledEvent['action'][] = ['kill', 'stop', 'pause'];

/**
 * With `keepQuorum`, whether taking `target` out now would leave fewer than a majority of
 * nodes running and caught up. The schedule plans its faults so, but a node's event can run
 * late (a readd waiting for replicas to catch up keeps its node down past its window) while
 * the other nodes' go on; and a node back on an empty disk votes nowhere until it caught up,
 * which the schedule cannot see (seeds 99, 109, 111: 16–40 s without a majority for a group).
 * Then per group, as the remove route judges (`group-quorum.ts`): a group one replica short
 * loses its majority to the next node out though a majority of nodes runs (seed 116).
 */
async function wouldBreakQuorum(target: string, byName: Map<string, NodeProc>): Promise<string | undefined> {
  const nodes = [...byName.values()];
  const catchingUp = await catchingUpNodes(nodes);
  const out = nodes.filter((m) => m.name !== target && (!running(m) || catchingUp.has(m.name)));
  const room = Math.floor((nodes.length - 1) / 2);
  if (out.length + 1 > room) return `${out.map((m) => `${m.name} ${m.proc === undefined ? 'down' : m.url === undefined ? 'starting' : m.paused ? 'paused' : 'catching up from empty'}`).join(', ')}`;
  const risks = groupsLosingMajority(target, await shardRows(nodes, target), new Set(out.map((m) => m.name)));
  return risks.length === 0 ? undefined : risks.join('; ');
}

/** A placement route asks each group's leader: one cut off answers late, and the guard polls. */
const SHARD_ROWS_TIMEOUT_MS = 2_000;

/**
 * The workload's shards as the placement routes show them (a VDB's and a collection's, which
 * ever exists), asked of the running nodes other than `target` until every group has been
 * seen with a leader: a node cut off from a group's leader answers without one.
 */
async function shardRows(nodes: readonly NodeProc[], target: string): Promise<ShardRow[]> {
  const answers: ShardRow[][] = [];
  for (const m of nodes) {
    if (m.name === target || !running(m)) continue;
    const rows: ShardRow[] = [];
    for (const route of [`/vdb/${DATA}/_shards`, `/_cluster/collections/${DATA}/shards`]) {
      const r = await call(m.url, 'GET', route, { timeoutMs: SHARD_ROWS_TIMEOUT_MS });
      if (r?.status === 200 && Array.isArray(r.body?.shards)) rows.push(...(r.body.shards as ShardRow[]));
    }
    answers.push(rows);
    const merged = mergeShardRows(answers);
    if (rows.length > 0 && everyGroupLed(merged)) return merged;
  }
  return mergeShardRows(answers);
}

/** A node the runner has running: started, answering its port, not paused. */
function running(m: NodeProc): boolean {
  return m.proc !== undefined && m.url !== undefined && !m.paused;
}

/** Its processes' output, earlier ones first: what is kept beside a report or an abandoned run. */
function nodeLog(n: NodeProc): string {
  return n.logs.join('') + n.output;
}

/** The running nodes hosting a replica that opened empty and is not vouched for yet (it votes in no group). */
async function catchingUpNodes(nodes: readonly NodeProc[]): Promise<Set<string>> {
  const out = new Set<string>();
  await Promise.all(
    nodes
      .filter(running)
      .map(async (m) => {
        for (const route of ['/_cluster/shards', '/_cluster/vdb-shards']) {
          const replicas = (await call(m.url, 'GET', route))?.body?.replicas as { catching_up?: boolean }[] | undefined;
          if (replicas?.some((r) => r.catching_up === true)) out.add(m.name);
        }
      }),
  );
  return out;
}

/** How long a kill, stop or pause waits for a majority to be back (running, caught up) before it is skipped. */
const QUORUM_WAIT_MS = 30_000;

async function applyEvent(e: ScheduledEvent, byName: Map<string, NodeProc>, net: FaultNetwork): Promise<void> {
  if (e.action === 'net') {
    net.apply(e.target);
    return;
  }
  if (e.action === 'net-heal') {
    net.apply([]);
    return;
  }
  const n = byName.get(e.target as string)!;
  switch (e.action) {
    case 'kill':
      await killNode(n);
      return;
    case 'stop':
      await stopNode(n);
      return;
    case 'start':
      if (n.proc === undefined) await startOrSay(n);
      return;
    case 'start-and-kill': {
      if (n.proc !== undefined) return; // its kill was skipped (quorum)
      await startNode(n, false);
      await new Promise((r) => setTimeout(r, e.durationMs));
      await killNode(n);
      return;
    }
    case 'pause':
      if (n.proc !== undefined) pause(n.proc);
      n.paused = true;
      return;
    case 'resume':
      if (n.proc !== undefined) resume(n.proc);
      n.paused = false;
      return;
    case 'leave': {
      // An operator retries a leave refused for now (409: its replicas have no taker yet, e.g.
      // a node that just joined again is not live; 503: no quorum; 400 not_member: the node
      // itself, started again on an empty disk, is still joining) for a while.
      // While another node is being replaced (its leave accepted, not yet started again), the
      // window runs from when that one started again: it is the taker this leave waits for
      // (seed 19 on a loaded CI machine: n4's replace outlasted n3's ten seconds of retries).
      const startedMs = Date.now();
      let until = startedMs + LEAVE_RETRY_MS;
      const replaceUnderway = () => [...byName.values()].some((m) => m !== n && m.leaving);
      const forNow = (r: Awaited<ReturnType<typeof call>>) => r?.status === 409 || r?.status === 503 || (r?.status === 400 && r.body?.error === 'not_member' && /is not a member/.test(String(r.body?.message)));
      n.leaveAsked = true;
      let r = await call(n.url, 'POST', '/vectordb/cluster/leave');
      for (;;) {
        if (replaceUnderway()) until = Math.max(until, Math.min(Date.now() + LEAVE_RETRY_MS, startedMs + LEAVE_TIMEOUT_MS));
        if (!forNow(r) || Date.now() >= until) break;
        log(`chaos: ${n.name} leave: ${r?.status} ${JSON.stringify(r?.body).slice(0, 200)}; retrying`);
        await new Promise((res) => setTimeout(res, 500));
        r = await call(n.url, 'POST', '/vectordb/cluster/leave');
      }
      n.leaving = r?.status === 200;
      log(`chaos: ${n.name} leave: ${r?.status ?? 'no answer'}${r !== undefined && r.status !== 200 ? ` ${JSON.stringify(r.body).slice(0, 200)}` : ''}`);
      return;
    }
    case 'rejoin': {
      if (!n.leaving) {
        // A leave answered 503 "it may still commit" (or not at all) may have committed. A node
        // removed and started afresh since (no leave asked) is recorded `left` until it joins again.
        if (!n.leaveAsked) return;
        const status = await recordedStatus(n, byName);
        if (status !== 'leaving' && status !== 'left') return;
        log(`chaos: ${n.name}'s leave committed though its answer said otherwise (its record: ${status})`);
      }
      // Its replicas move first; it is a member until it hosts none.
      const left = await waitFor(async () => ((await call(n.url, 'GET', '/vectordb/cluster/status'))?.body?.state === 'left' ? true : undefined), { timeoutMs: LEAVE_TIMEOUT_MS, intervalMs: 250, what: `${n.name} to leave` }).catch(() => false);
      if (left !== true) {
        log(`chaos: ${n.name} had not left after ${LEAVE_TIMEOUT_MS / 1000} s: it stays as it is (convergence will say what is wrong)`);
        return;
      }
      await stopNode(n);
      // A fresh data directory joins as a new member, through every other node (one may be down).
      await startAfresh(n, byName, net);
      n.leaving = false;
      log(`chaos: ${n.name} left and started again on an empty data directory`);
      return;
    }
    case 'readd': {
      // An operator replaces a dead machine: removes the node (its replicas are placed on the
      // others), then a new one joins under its name. The node must be `down` to be removed.
      if (n.proc !== undefined) return;
      // ...and only once the last machine replaced has caught up, as docs/cluster.md asks: a
      // group that lost the disks of a majority of its replicas before then waits for ever
      // (docs/raft.md, A lost disk; seed 79 wiped two of vs83's three). Not yet: the node
      // starts again on its data (a bounded wait: the schedule, heals included, waits too).
      const inStep = await waitFor(async () => ((await replicasInStep(byName)) ? true : undefined), { timeoutMs: READD_CATCH_UP_MS, intervalMs: 500, what: 'shard replicas to catch up' }).catch(() => false);
      if (inStep !== true) {
        log(`chaos: shard replicas still catching up after ${READD_CATCH_UP_MS / 1000} s: ${n.name} is not removed; it starts again on its data`);
        await startOrSay(n);
        return;
      }
      const removed = await waitFor(async () => {
        const via = [...byName.values()].find((m) => m !== n && m.proc !== undefined && !m.paused);
        const r = await call(via?.url, 'DELETE', `/_cluster/nodes/${n.name}`);
        if (r?.status === 200) return true;
        // Committed though the answer was lost: its record says so.
        return (await recordedStatus(n, byName)) === 'left' ? true : undefined;
      }, { timeoutMs: REMOVE_TIMEOUT_MS, intervalMs: 250, what: `${n.name} to be removed` }).catch(() => false);
      if (removed !== true) {
        log(`chaos: ${n.name} could not be removed within ${REMOVE_TIMEOUT_MS / 1000} s: it starts again on its data`);
        await startOrSay(n);
        return;
      }
      await startAfresh(n, byName, net);
      log(`chaos: ${n.name} removed and started again on an empty data directory`);
      return;
    }
  }
}

/**
 * Every replica the placement puts on a live node is hosted there, not `catching_up` (opened
 * empty, holding less than a leader showed it), and within REPLICA_LAG entries of its group's
 * most advanced one (a replica catching up from an empty disk is far behind, or not open yet);
 * and each group's leader counts exactly the placed replicas as its voters, no learner. A
 * placement runs ahead of its group: a replica moved to a new node is a learner until caught
 * up, and the replaced voter stays until then (seed 80: vs26's voters were n5, a wiped n1 and
 * n3, its new replica on n4 still a learner, when n5 was removed and wiped: no majority left).
 */
async function replicasInStep(byName: Map<string, NodeProc>): Promise<boolean> {
  const live = [...byName.values()].filter((m) => m.proc !== undefined && !m.paused);
  const applied = new Map<string, Map<string, number>>();
  const leaderConf = new Map<string, { voters: string[]; learners: string[] }>();
  for (const m of live) {
    for (const route of ['/_cluster/shards', '/_cluster/vdb-shards']) {
      const replicas = (await call(m.url, 'GET', route))?.body?.replicas as { group: string; role: string; applied: number; catching_up: boolean; voters: string[]; learners: string[] }[] | undefined;
      if (replicas === undefined || replicas.some((r) => r.catching_up)) return false;
      for (const r of replicas) {
        applied.set(r.group, (applied.get(r.group) ?? new Map()).set(m.name, r.applied));
        if (r.role === 'leader') leaderConf.set(r.group, { voters: r.voters, learners: r.learners });
      }
    }
  }
  const placed: { group: string; replicas: string[] }[] = [];
  for (const route of [`/_cluster/collections/${DATA}/shards`, `/vdb/${DATA}/_shards`]) placed.push(...(((await call(live[0]?.url, 'GET', route))?.body?.shards as { group: string; replicas: string[] }[] | undefined) ?? []));
  return placed.every((s) => {
    const conf = leaderConf.get(s.group);
    if (conf === undefined || conf.learners.length > 0 || JSON.stringify([...conf.voters].sort()) !== JSON.stringify([...s.replicas].sort())) return false;
    const byNode = applied.get(s.group) ?? new Map<string, number>();
    const top = Math.max(0, ...byNode.values());
    return s.replicas.every((r) => !live.some((m) => m.name === r) || (byNode.has(r) && top - byNode.get(r)! <= REPLICA_LAG));
  });
}

/** The node's status in the metadata, as the first other live node that answers has it. */
async function recordedStatus(n: NodeProc, byName: Map<string, NodeProc>): Promise<string | undefined> {
  for (const m of byName.values()) {
    if (m === n || m.proc === undefined || m.paused) continue;
    const nodes = (await call(m.url, 'GET', '/_cluster/nodes'))?.body?.nodes as { name: string; status: string }[] | undefined;
    const record = nodes?.find((x) => x.name === n.name);
    if (record !== undefined) return record.status;
  }
  return undefined;
}

/** Start a stopped node on an empty data directory: it joins as a new member, through every other node (one may be down). */
async function startAfresh(n: NodeProc, byName: Map<string, NodeProc>, net: FaultNetwork): Promise<void> {
  rmSync(n.env.SERVICE_DATA_DIR!, { recursive: true, force: true });
  n.leaveAsked = false;
  n.env = { ...n.env, SERVICE_SEED_NODES: [...byName.keys()].filter((m) => m !== n.name).map((m) => net.seedFor(n.name, m)).join(',') };
  await startOrSay(n);
}

/**
 * Poll until the nodes agree on leader and members and their metadata replicas report the
 * same digest at the same applied index (chaos/checker/convergence.ts), or diverge (stop at
 * once: waiting will not mend it), or the deadline passes. Returns the last poll's reports.
 */
async function converge(nodes: NodeProc[], deadlineMs: number, shardsOf: 'none' | 'collection' | 'vdb'): Promise<{ ok: boolean; verdict: PollVerdict; reports: ReplicaReport[]; expected: Record<string, string[]>; detail: unknown }> {
  let last: unknown;
  let reports: ReplicaReport[] = [];
  let verdict = 'wait' as PollVerdict; // set by the probe (a closure: `as` keeps TS from narrowing it to 'wait')
  const startedMs = performance.now();
  const expected: Record<string, string[]> = { metadata: nodes.map((n) => n.name) };
  const withShards = shardsOf !== 'none';
  const replicasPath = shardsOf === 'vdb' ? '/_cluster/vdb-shards' : '/_cluster/shards';
  const placementPath = shardsOf === 'vdb' ? `/vdb/${DATA}/_shards` : `/_cluster/collections/${DATA}/shards`;
  try {
    await waitFor(
      async () => {
        const views = await Promise.all(
          nodes.map(async (n) => {
            const members = (await call(n.url, 'GET', '/_cluster/nodes'))?.body;
            return {
              node: n.name,
              status: (await call(n.url, 'GET', '/vectordb/cluster/status'))?.body,
              meta: members?.metadata,
              // This node's own link to each other node: a replica that never catches up is
              // often one its leader's node does not reach (`none`, `down`, `blocked`).
              links: Array.isArray(members?.nodes) ? Object.fromEntries((members.nodes as { name: string; link: string | null }[]).filter((m) => m.link !== null).map((m) => [m.name, m.link])) : undefined,
              shards: withShards ? ((await call(n.url, 'GET', replicasPath))?.body?.replicas as { group: string; digest: string | null; digest_applied: number | null }[] | undefined) : undefined,
            };
          }),
        );
        last = views;
        reports = views.filter((v) => typeof v.meta?.applied === 'number' && typeof v.meta?.digest === 'string').map((v) => ({ node: v.node, shard: 'metadata', applied_index: v.meta.applied as number, digest: v.meta.digest as string }));
        if (withShards) {
          // Which nodes should hold each shard: the placement as the metadata has it now, on
          // every node alike. A group a reshard's switch dropped since an earlier poll is
          // expected no more (before, it stayed expected, and its dropped replicas read as
          // `missing`: seed 79's vs75 and vs76, most likely), and one node's copy may lag
          // behind that switch.
          const placements = await Promise.all(nodes.map(async (n) => (await call(n.url, 'GET', placementPath))?.body?.shards as { group: string; replicas: string[] }[] | undefined));
          const placement = placements.every((p) => JSON.stringify(p) === JSON.stringify(placements[0])) ? placements[0] : undefined;
          if (placement !== undefined) {
            for (const key of Object.keys(expected)) if (key !== 'metadata') delete expected[key];
            for (const s of placement) expected[s.group] = [...s.replicas];
          }
          for (const v of views) {
            for (const r of v.shards ?? []) if (r.digest !== null && r.digest_applied !== null) reports.push({ node: v.node, shard: r.group, applied_index: r.digest_applied, digest: r.digest });
          }
          if (placement === undefined) return false;
        }
        verdict = pollVerdict(checkConvergence(reports, expected), performance.now() - startedMs, deadlineMs);
        if (verdict === 'diverged') return true;
        const leader = views[0]?.status?.leader;
        const same = views.every((v) => v.status?.state === 'member' && v.status.leader === leader && leader !== null);
        const allUp = views.every((v) => JSON.stringify(v.status?.healthy_nodes) === JSON.stringify(nodes.map((n) => n.name).sort()));
        return verdict === 'converged' && same && allUp;
      },
      { timeoutMs: deadlineMs, intervalMs: 250, what: 'convergence' },
    );
    return { ok: verdict === 'converged', verdict, reports, expected, detail: last };
  } catch {
    return { ok: false, verdict: 'timeout', reports, expected, detail: last };
  }
}

export async function runChaos(o: ChaosOptions): Promise<{ anomalies: number; ops: number; faults: number }> {
  const names = Array.from({ length: o.nodes }, (_, i) => `n${i + 1}`);
  const ports = await freePorts(o.nodes);
  const grpcPorts = new Map(names.map((n, i) => [n, ports[i]!]));
  const rand = new SeededRand(o.seed);
  const net = await FaultNetwork.open({ grpcPorts, rand: new SeededRand(o.seed + 1) });
  const dir = tempDir('firkin-chaos-');
  liveDirs.add(dir);
  const nodes: NodeProc[] = names.map((name) => ({
    name,
    env: {
      ...FAST_CLUSTER_ENV,
      ...TEST_CACHE_ENV,
      SERVICE_ENABLE_CLUSTER: 'true',
      SERVICE_NODE_NAME: name,
      SERVICE_HTTP_PORT: '0',
      SERVICE_ADMIN_KEY: TEST_ADMIN_KEY,
      SERVICE_GRPC_PORT: String(grpcPorts.get(name)),
      SERVICE_CLUSTER_DIAL_MAP: net.dialMap(name),
      SERVICE_SEED_NODES: name === 'n1' ? '' : net.seedFor(name, 'n1'),
      RELEASE_COOKIE: COOKIE,
      SERVICE_DATA_DIR: path.join(dir, name),
      ...(o.workload === 'keys' ? { SERVICE_GATEWAY_ENABLED: 'true', SERVICE_GATEWAY_PORT: '0', SERVICE_GATEWAY_MASTER_KEY: GATEWAY_MASTER_KEY } : {}),
      ...(o.broken === undefined ? {} : { FIRKIN_UNSAFE_FIXTURE: o.broken }),
    },
    child: undefined,
    proc: undefined,
    url: undefined,
    paused: false,
    output: '',
    logs: [],
    leaderTransfers: 0,
    switchRollbacks: 0,
    leaving: false,
    leaveAsked: false,
  }));
  const byName = new Map(nodes.map((n) => [n.name, n]));
  // A run abandoned in a phase that overran its bound writes no report: its nodes' logs are
  // all there is to read it by (seed 8 in CI, 2026-11-30: no convergence within 60 s of the
  // heal, then its final reads overran, and nothing was left to say why).
  const keepLogs = () => {
    mkdirSync(o.out, { recursive: true });
    const stem = path.join(o.out, `chaos-${o.workload}-seed${o.seed}-${Date.now()}-abandoned`);
    for (const n of nodes) writeFileSync(`${stem}-${n.name}.log`, nodeLog(n));
    process.stderr.write(`chaos: node logs kept in ${stem}-*.log\n`);
  };
  lastWords.add(keepLogs);
  const durationMs = Math.round(o.minutes * 60_000);
  const events = schedule({ seed: o.seed, nodes: names, kinds: o.nemeses, durationMs, gapMs: { min: 2_000, max: 6_000 }, faultMs: { min: 1_500, max: 6_000 }, keepQuorum: o.keepQuorum });
  const faults = new Set(events.map((e) => e.fault)).size;
  if (o.broken !== undefined) log(`chaos: BROKEN BUILD on purpose (${o.broken}): the checker must find anomalies`);
  log(`chaos: seed ${o.seed}, ${o.nodes} nodes, ${o.minutes} min, workload ${o.workload}${o.workload === 'set' ? ` (keyword index: ${bm25Backend(o)})` : ''}, nemeses ${o.nemeses.join(',')}: ${faults} faults scheduled; data in ${dir}`);
  const windows: FaultWindow[] = [];
  phaseName = '';
  try {
    // Each start may wait a minute for the node to listen.
    phase('forming the cluster', 60_000 * o.nodes + 60_000);
    for (const n of nodes) await startNode(n);
    await waitFor(async () => (await Promise.all(nodes.map((n) => call(n.url, 'GET', '/_cluster/nodes')))).every((r) => (r?.body?.nodes as { role: string }[] | undefined)?.filter((x) => x.role === 'voter').length === Math.min(o.nodes % 2 === 1 ? o.nodes : o.nodes - 1, 5)), { timeoutMs: 60_000, what: 'the cluster to form' });
    if (o.workload === 'register' || o.workload === 'set') await createDataCollection(nodes, o);
    if (o.workload === 'cas') await createCasVdb(nodes);
    log('chaos: cluster formed; workload and faults start');
    // A fault in flight when the time is up (a start that waits its minute) ends first.
    phase('the workload and faults', durationMs + 120_000);
    const rec = new Recorder();
    const nemesis = (async () => {
      const open = new Map<number, number>();
      // A node's events run in order, each after the one before it on that node; a stalled one
      // (a leave waited for, a start that took its minute) holds up that node's later events
      // only. Before, it held every node's: seed 110's wait for n4's leave kept n2 stopped for
      // 92 s, past its scheduled start, which took a new group its majority.
      const perNode = new Map<string, Promise<void>>();
      const skipped = new Set<number>();
      let dropped = false;
      const run = async (e: ScheduledEvent) => {
        // Past the run's length the remaining faults are dropped; healing below ends the open ones.
        if (rec.now() >= durationMs) {
          if (!dropped) log(`chaos: ${String(rec.now()).padStart(7)} ms  past the run's length: the schedule's remaining events are dropped`);
          dropped = true;
          return;
        }
        if (o.keepQuorum && typeof e.target === 'string' && TAKES_OUT.includes(e.action) && byName.get(e.target)!.proc !== undefined) {
          // It waits (this node's queue only) for a majority to be back, as the runner did when
          // every event waited for the one before it; then it is skipped.
          const since = rec.now();
          let why = await wouldBreakQuorum(e.target, byName);
          while (why !== undefined && rec.now() - since < QUORUM_WAIT_MS && rec.now() < durationMs) {
            await new Promise((r) => setTimeout(r, 250));
            why = await wouldBreakQuorum(e.target, byName);
          }
          if (why !== undefined) {
            log(`chaos: ${String(rec.now()).padStart(7)} ms  ${e.action.padEnd(14)} ${e.target}: skipped, it would leave no majority running and caught up (${why})`);
            skipped.add(e.fault);
            return;
          }
          if (rec.now() - since >= 250) log(`chaos: ${String(rec.now()).padStart(7)} ms  ${e.action.padEnd(14)} ${e.target}: waited ${rec.now() - since} ms for a majority running and caught up`);
        }
        if (skipped.has(e.fault)) return; // the fault's later events: nothing to heal
        log(`chaos: ${String(rec.now()).padStart(7)} ms  ${e.action.padEnd(14)} ${typeof e.target === 'string' ? e.target : JSON.stringify(e.target)}`);
        if (!open.has(e.fault)) open.set(e.fault, rec.now());
        await applyEvent(e, byName, net);
        if (isHeal(e)) windows.push({ kind: e.kind, startMs: open.get(e.fault)!, endMs: rec.now() });
      };
      let cut = false;
      for (const e of events) {
        if (rec.now() >= durationMs) {
          cut = true;
          break;
        }
        const wait = e.atMs - rec.now();
        if (wait > 0) await new Promise((r) => setTimeout(r, wait));
        if (typeof e.target !== 'string') {
          await run(e); // the network's faults apply at once
          continue;
        }
        perNode.set(e.target, (perNode.get(e.target) ?? Promise.resolve()).then(() => run(e)));
      }
      await Promise.all(perNode.values());
      if (cut && !dropped) log(`chaos: ${String(rec.now()).padStart(7)} ms  past the run's length: the schedule's remaining events are dropped`);
    })();
    let keys = new Map<string, string>();
    let attempted: string[] = [];
    let rebalanceAnswers = new Map<string, number>();
    // `--rebalance`: split and merge the cas VDB, or reshard the collection, all along.
    const rebalanceRand = new SeededRand(o.seed + 2);
    const rebalancing = o.rebalance ? rebalanceLoop(nodes, durationMs, rec, rebalanceRand, (n) => (o.workload === 'cas' ? splitOrMerge(n, rec, rebalanceRand) : reshard(n, rec, rebalanceRand))) : undefined;
    if (o.workload === 'keys') keys = await keysWorkload(nodes, o, rec, durationMs, rand);
    else if (o.workload === 'register') await registerWorkload(nodes, o, rec, durationMs, rand);
    else if (o.workload === 'cas') await casWorkload(nodes, o, rec, durationMs, rand);
    else attempted = await setWorkload(nodes, o, rec, durationMs, rand);
    rebalanceAnswers = (await rebalancing) ?? rebalanceAnswers;
    await nemesis;

    // Heal everything, then require convergence: same leader, same metadata at the same index.
    phase('healing', 60_000 * o.nodes + 30_000 + LEAVE_TIMEOUT_MS);
    net.apply([]);
    for (const n of nodes) {
      if (n.paused && n.proc !== undefined) resume(n.proc);
      n.paused = false;
      if (n.proc === undefined) await startNode(n);
      // A replace whose rejoin the schedule's end dropped (or whose leave committed though
      // its answer said otherwise): it rejoins now.
      if (n.leaving || o.nemeses.includes('replace')) await applyEvent({ atMs: rec.now(), fault: -1, kind: 'replace', durationMs: 0, action: 'rejoin', target: n.name }, byName, net);
    }
    let stuckJobs: { id: string; step: string }[] = [];
    if (o.rebalance) {
      phase('the rebalance jobs ending', 150_000);
      stuckJobs = await jobsEnded(nodes, 120_000);
    }
    log('chaos: healed; waiting for convergence');
    phase('convergence', o.convergeSeconds * 1000 + 30_000);
    const converged = await converge(nodes, o.convergeSeconds * 1000, o.workload === 'keys' ? 'none' : o.workload === 'cas' ? 'vdb' : 'collection');
    // Said now: the final reads after a failed convergence may overrun, and then no report is written.
    if (!converged.ok) log(`chaos: no convergence (${converged.verdict}); the last poll saw ${JSON.stringify(converged.detail).slice(0, 3000)}`);
    // Every element, register or key is read on every node; a node that stops answering costs
    // one read's 15 s retry bound before its reads are given up.
    const finalReads = nodes.length * (o.workload === 'set' ? attempted.length : o.workload === 'keys' ? keys.size : o.workload === 'cas' ? casKeys(o.minutes).length : registerKeys(o.minutes));
    // After the reads: the set workload's listings and keyword searches (each node's searches in
    // parallel; a page or a search retried for 15 s at most), the cas workload's drain of its
    // `_changes` follower (60 s at most).
    const afterReadsMs = o.workload === 'set' ? nodes.length * 30_000 + Math.ceil((attempted.length * nodes.length) / 1000) * 1000 : o.workload === 'cas' ? 60_000 : 0;
    phase(`the final reads (${finalReads} on ${nodes.length} nodes)`, 60_000 + nodes.length * 15_000 + afterReadsMs + Math.ceil((finalReads / FINAL_READS_PER_S) * 1000));
    if (o.workload === 'register') await finalRegisterReads(nodes, rec, o.minutes);
    let drained: boolean | undefined;
    if (o.workload === 'cas') {
      await finalCasReads(nodes, rec, o.minutes);
      drained = await drainFeed(nodes, rec);
    }
    let bm25Reads: Bm25NodeRead[] | undefined;
    let listings: NodeListing[] | undefined;
    if (o.workload === 'set') {
      await finalSetReads(nodes, rec, attempted);
      listings = await finalListings(nodes, rec);
      if (bm25Backend(o) !== 'none') bm25Reads = await finalBm25Searches(nodes, rec, attempted, new SeededRand(o.seed + 3));
    }
    // Final reads: every key, on every node.
    // A node may still be catching up or renewing its key lease: 'unavailable' is retried
    // within a bound, and is an anomaly only if it lasts.
    for (const [keyId, key] of keys) {
      for (const n of nodes) {
        let result: 'valid' | 'invalid' | 'unavailable' = 'unavailable';
        const until = performance.now() + 15_000;
        while (result === 'unavailable' && performance.now() < until) {
          result = (await useKey(n.url, keyId, key)).result ?? 'unavailable';
          if (result === 'unavailable') await new Promise((res) => setTimeout(res, 100));
        }
        rec.ops.push({ kind: 'final', node: n.name, keyId, result });
      }
    }
    phase('checking', 600_000);
    const { checkers, anomalies } = runCheckers({
      ...(o.workload === 'keys' ? { keys: rec.ops } : {}),
      ...(o.workload === 'register' || o.workload === 'cas' ? { registers: rec.registers } : {}),
      ...(o.workload === 'set' ? { set: rec.set } : {}),
      ...(bm25Reads === undefined ? {} : { bm25: bm25Reads }),
      ...(listings === undefined ? {} : { listings }),
      ...(o.workload === 'set' ? { scrolls: rec.scrolls } : {}),
      ...(drained === undefined ? {} : { feed: { polls: rec.feed.polls, acked: rec.feed.acked, refusals: rec.feed.refusals, drained, keys: new Set(casKeys(o.minutes).filter((k) => !isLocalKey(k))) } }),
      convergence: { reports: converged.reports, expected: converged.expected, timedOut: converged.verdict === 'timeout' },
      windows,
      startMs: 0,
      endMs: durationMs,
      stepBudget: DEFAULT_STEP_BUDGET,
      gapMsMin: 1_000,
    });
    for (const j of stuckJobs) anomalies.push({ checker: 'jobs', type: 'job-stuck', key: j.id, node: '', detail: JSON.stringify(j).slice(0, 2000) });
    // A shard replica that never caught up: what it and its group's leader said of it last.
    if (Array.isArray(converged.detail)) {
      const views = converged.detail as NodeView[];
      anomalies.forEach((a, i) => {
        if (a.checker !== 'convergence' || a.type !== 'no-convergence' || a.node === '') return;
        anomalies[i] = { ...a, detail: `${a.detail} (${a.node.split(',').map((n) => explainLagging(a.key, n, views)).join(' | ')})` };
      });
    }
    // Leader and members are part of convergence too; the checker sees only the replicas.
    if (!converged.ok && !anomalies.some((a) => a.checker === 'convergence')) {
      anomalies.push({ checker: 'convergence', type: 'no-convergence', key: 'cluster', node: '', detail: JSON.stringify(converged.detail).slice(0, 2000) });
    }
    const ops = o.workload === 'keys' ? rec.ops.filter((op) => op.kind !== 'final').length : o.workload === 'register' || o.workload === 'cas' ? rec.registers.filter((op) => op.process?.startsWith('final-') !== true).length : rec.set.filter((op) => !(op.kind === 'read' && op.final === true)).length;
    const leaderTransfers = nodes.reduce((sum, n) => sum + n.leaderTransfers, 0);
    log(`chaos: ${leaderTransfers} shard leadership transfers to balance leaders`);
    const switchRollbacks = nodes.reduce((sum, n) => sum + n.switchRollbacks, 0);
    if (o.rebalance) log(`chaos: ${o.workload === 'cas' ? 'splits and merges' : 'reshards'} answered: ${[...rebalanceAnswers].map(([k, v]) => `${k} x${v}`).join(', ') || 'none asked'}; ${switchRollbacks} switches rolled back for running out of time`);
    const report = {
      options: o,
      faults,
      windows,
      ops,
      leaderTransfers,
      ...(o.rebalance ? { rebalance: Object.fromEntries(rebalanceAnswers), switchRollbacks } : {}),
      converged: converged.ok,
      // What the last convergence poll saw, whole: a verdict is read back against it.
      convergence: { verdict: converged.verdict, expected: converged.expected, reports: converged.reports, views: converged.detail },
      checkers,
      anomalies,
      // The feed follower's polls and the writes it was owed, to read a feed anomaly back.
      ...(o.workload === 'cas' ? { feed: { polls: rec.feed.polls, acked: rec.feed.acked, refusals: rec.feed.refusals } } : {}),
      // The recorded operations, to read an anomaly back against what happened around it.
      history: o.workload === 'keys' ? rec.ops : o.workload === 'register' || o.workload === 'cas' ? rec.registers : rec.set,
    };
    phase('the report and cleanup', 180_000);
    mkdirSync(o.out, { recursive: true });
    const file = path.join(o.out, `chaos-${o.workload}-seed${o.seed}-${Date.now()}.json`);
    writeFileSync(file, JSON.stringify(report, null, 2));
    log(`chaos: report ${file}`);
    const avail = checkers.availability;
    if (anomalies.length > 0 || avail.longestGap.ms > LONG_GAP_MS) {
      // The nodes' own logs (each one's last processes), to read an anomaly or a long gap against.
      for (const n of nodes) writeFileSync(file.replace(/\.json$/, `-${n.name}.log`), nodeLog(n));
      log(`chaos: node logs beside the report (${nodes.map((n) => n.name).join(', ')})${anomalies.length === 0 ? `: ${avail.longestGap.ms} ms without an acknowledged write` : ''}`);
    }
    log(`chaos: ok share calm ${fmt(avail.calm.share)}; during faults ${Object.entries(avail.duringFaults).map(([k, v]) => `${k} ${fmt(v.share)}`).join(', ') || 'none'}`);
    log(`chaos: longest time without an acknowledged write ${avail.longestGap.ms} ms (from ${avail.longestGap.startMs} ms; faults ${avail.longestGap.faults.join(',') || 'none'})`);
    if (checkers.feed !== null) log(`chaos: _changes follower: ${checkers.feed.polls} polls (${rec.feed.replicatorPolls} in the replicator's form, ${rec.feed.resumedMidPage} resumed inside their page, ${rec.feed.longPolls} long-polls asked), ${checkers.feed.changes} changes, ${checkers.feed.acked} acknowledged writes checked`);
    if (checkers.scroll !== null) log(`chaos: scrolls during the run: ${checkers.scroll.scrolls} finished, ${checkers.scroll.listed} ids listed, each held to the adds and deletes around it`);
    if (checkers.listing !== null) log(`chaos: listings (scroll): ${checkers.listing.listed} ids listed on ${nodes.length} nodes, each held to that node's final read`);
    if (checkers.bm25 !== null) log(`chaos: keyword index (${bm25Backend(o)}): ${checkers.bm25.searches} searches (keyword and hybrid) answered on ${nodes.length} nodes, ${checkers.bm25.hits} hits checked against each node's final read`);
    if (rec.refusals.size > 0) log(`chaos: not acknowledged: ${[...rec.refusals].sort((a, b) => b[1] - a[1]).map(([why, count]) => `${why} x${count}`).join(', ')}`);
    // Feed and scroll anomalies are a client's, not a node's: no `on`.
    for (const a of anomalies.slice(0, 20)) log(`chaos: ANOMALY ${a.checker} ${a.type} ${a.key}${a.node === '' ? '' : ` on ${a.node}`}: ${a.detail}`);
    log(`chaos: ${ops} ops, ${faults} faults, ${anomalies.length} anomalies`);
    return { anomalies: anomalies.length, ops, faults };
  } finally {
    lastWords.delete(keepLogs);
    await Promise.all(nodes.map((n) => killNode(n)));
    await net.close();
    rmSync(dir, { recursive: true, force: true });
    liveDirs.delete(dir);
  }
}

function fmt(share: number | null | undefined): string {
  return share === null || share === undefined ? 'n/a' : `${(share * 100).toFixed(1)}%`;
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) {
  let options: ChaosOptions;
  try {
    options = parseChaosArgs(process.argv.slice(2));
  } catch (err) {
    if (!(err instanceof OptionError)) throw err;
    process.stderr.write(`chaos: ${err.message}\n`);
    process.exit(2);
  }
  // A hard bound on each phase of the run: forming, the schedule, healing, convergence, the
  // final reads, the checkers and cleanup.
  let bound: NodeJS.Timeout | undefined;
  onPhase((what, budgetMs) => {
    clearTimeout(bound);
    const ms = budgetMs * options.boundScale;
    bound = setTimeout(() => {
      process.stderr.write(`chaos: ${what} overran its bound of ${(ms / 1000).toFixed(ms < 10_000 ? 1 : 0)} s; killing its nodes, removing its data, exiting\n`);
      abandonRuns();
      process.exit(3);
    }, ms);
    bound.unref();
  });
  // Stopped from outside (Ctrl-C, a job's timeout): its nodes and data go with it (they were
  // left running, found 2026-11-29).
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      process.stderr.write(`chaos: ${signal}; killing its nodes, removing its data, exiting\n`);
      abandonRuns();
      process.exit(signal === 'SIGINT' ? 130 : 143);
    });
  }
  const outcome = await runChaos(options);
  process.exit(outcome.anomalies > 0 ? 1 : 0);
}
