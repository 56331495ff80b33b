// `firkin`, the admin CLI: the one part with I/O. It parses (args.ts), calls the node's HTTP
// API, checks the answer (contract.ts) and prints it (render.ts), or prints the JSON as the
// node sent it with --json. bin/firkin.js runs it.
import { type Command, type Target, parseArgs } from './args.js';
import { asHealth, asImportCancel, asJobs, asNodeDetails, asNodeStatus, asNodes, asReshardJob, asReshardStarted, asShards, asStatus, asTasks, asVdbRebalance, asVdbShardChange, asVdbShards } from './contract.js';
import { CliFailure, EXIT_FAILED, EXIT_USAGE, failureLine } from './failure.js';
import { cleanCell } from './table.js';
import { isReshardEnded } from '../cluster/meta-state.js';
import { type NodeHealth, renderClusterHealth, renderImportCancel, renderJobs, renderNodeDetails, renderNodeNames, renderNodeStatus, renderReshardProgress, renderShards, renderStatus, renderTasks, renderVdbCancel, renderVdbProgress, renderVdbShards } from './render.js';

export interface CliIo {
  out(text: string): void;
  err(text: string): void;
  fetch: typeof fetch;
}

/** The process's own streams and fetch: what an entry (bin/firkin.js) runs the CLI with. */
export function processIo(): CliIo {
  return { out: (text) => process.stdout.write(text), err: (text) => process.stderr.write(text), fetch: globalThis.fetch };
}

/** Join may wait on the leader; anything slower than this is a node in trouble. */
const REQUEST_TIMEOUT_MS = 30_000;
/** A VDB split or merge answers when its job ends; the node itself gives up after 30 minutes. */
const SHARD_CHANGE_TIMEOUT_MS = 31 * 60_000;
/** How much of a non-JSON answer an error line quotes. */
const QUOTED_CHARS_MAX = 120;

export async function runCli(argv: readonly string[], env: Readonly<Record<string, string | undefined>>, io: CliIo): Promise<number> {
  const parsed = parseArgs(argv, env);
  switch (parsed.kind) {
    case 'help':
      io.out(`${parsed.text}\n`);
      return 0;
    case 'usage_error':
      io.err(`${failureLine('usage', parsed.message)}\n`);
      return EXIT_USAGE;
    case 'run':
    case 'offline':
      try {
        // The offline commands load RocksDB: only when asked for.
        const result = parsed.kind === 'offline' ? await (await import('./recover.js')).runRecover(parsed.command) : await run(parsed.command, parsed.target, io.fetch, (line) => io.err(line));
        if (typeof result === 'string') {
          io.out(result);
          return 0;
        }
        io.out(result.out);
        return result.exitCode;
      } catch (err) {
        if (!(err instanceof CliFailure)) throw err;
        io.err(`${failureLine(err.code, err.message)}\n`);
        return err.exitCode;
      }
  }
}

/** How often `collection reshard --wait`, `vdb split` and `vdb merge` ask for the job. */
const RESHARD_POLL_MS = 1_000;

/** `cluster health` when some node is not ok: the report is printed, and the status says so. */
export const EXIT_NOT_HEALTHY = 3;
/** How long `cluster health` waits for one node's /health. */
const HEALTH_TIMEOUT_MS = 5_000;

/** Commands about the node asked itself: never sent to another one. */
const THIS_NODE_COMMANDS: ReadonlySet<Command['kind']> = new Set(['join', 'leave', 'tasks']);

/**
 * Connection failures that mean the request was never sent (nothing listens, no route, no such
 * host, or no connection in time): a cluster-wide command may ask another node. A reset or a
 * timeout after connecting may have been acted on, so it is not retried elsewhere.
 */
const NOT_SENT_CODES: ReadonlySet<string> = new Set(['ECONNREFUSED', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN', 'UND_ERR_CONNECT_TIMEOUT']);

async function run(command: Command, target: Target, fetchFn: typeof fetch, progress: (line: string) => void): Promise<string | { out: string; exitCode: number }> {
  // The node asked; a cluster-wide command moves to the next of FIRKIN_NODES when this one
  // cannot be connected to, and stays there for the rest of the command (its polls).
  let url = target.url;
  const others = THIS_NODE_COMMANDS.has(command.kind) ? [] : [...(target.fallbacks ?? [])];
  const call = async (method: string, path: string, body?: unknown, timeoutMs?: number): Promise<unknown> => {
    for (;;) {
      try {
        return await callNode(fetchFn, { ...target, url }, method, path, body, timeoutMs);
      } catch (err) {
        if (!(err instanceof CliFailure) || !err.notSent || others.length === 0) throw err;
        const next = others.shift()!;
        progress(`${failureLine(err.code, `${err.message}; asking ${next} instead (FIRKIN_NODES)`)}\n`);
        url = next;
      }
    }
  };
  const print = <T>(raw: unknown, check: (raw: unknown) => T, render: (body: T) => string) =>
    target.json ? `${JSON.stringify(raw)}\n` : render(check(raw));
  switch (command.kind) {
    case 'status':
      return print(await call('GET', '/vectordb/cluster/status'), asStatus, renderStatus);
    case 'nodes': {
      if (target.key !== undefined) {
        const details = await call('GET', '/_cluster/nodes').catch((err: unknown) => {
          // A standalone node (or one from before the cluster work) has no detailed view.
          if (err instanceof CliFailure && (err.code === 'not_clustered' || err.code === 'not_found')) return undefined;
          throw err;
        });
        if (details !== undefined) return print(details, asNodeDetails, renderNodeDetails);
      }
      return print(await call('GET', '/vectordb/cluster/nodes'), asNodes, renderNodeNames);
    }
    case 'health': {
      const nodes = await clusterHealth(target, fetchFn, call, () => url);
      const out = target.json ? `${JSON.stringify({ nodes: nodes.map((n) => ({ name: n.name, member: n.member ?? null, health: n.raw })) })}\n` : renderClusterHealth(nodes);
      return { out, exitCode: nodes.every((n) => n.health.status === 'ok') ? 0 : EXIT_NOT_HEALTHY };
    }
    case 'join':
      return print(
        await call('POST', '/_cluster/join', { seed: command.seed }),
        (raw) => asNodeStatus(raw, 'join answer'),
        (body) => renderNodeStatus(body, `seed ${command.seed}`),
      );
    case 'leave':
      return print(await call('POST', '/vectordb/cluster/leave'), (raw) => asNodeStatus(raw, 'leave answer'), (body) => renderNodeStatus(body));
    case 'shards':
      return print(await call('GET', `/_cluster/collections/${encodeURIComponent(command.collection)}/shards`), asShards, renderShards);
    case 'jobs':
      return print(await call('GET', '/_cluster/jobs'), asJobs, (jobs) => renderJobs(jobs, Date.now()));
    case 'tasks':
      return print(await call('GET', '/_active_tasks'), asTasks, (tasks) => renderTasks(tasks, Date.now()));
    case 'reshard-cancel':
      return print(await call('DELETE', `/vectordb/collections/${encodeURIComponent(command.collection)}/reshard`), asReshardJob, renderReshardProgress);
    case 'vdb-cancel':
      return print(await call('DELETE', `/vdb/${encodeURIComponent(command.vdb)}/_rebalance`), asVdbRebalance, renderVdbCancel);
    case 'vdb-shards':
      return print(await call('GET', `/vdb/${encodeURIComponent(command.vdb)}/_shards`), asVdbShards, (shards) => renderVdbShards(command.vdb, shards));
    case 'vdb-cancel-import':
      return print(await call('DELETE', `/vdb/${encodeURIComponent(command.vdb)}/_import`), asImportCancel, (b) => renderImportCancel(command.vdb, b.cancelled));
    case 'vdb-split':
    case 'vdb-merge': {
      const path = `/vdb/${encodeURIComponent(command.vdb)}/_shards/${command.shard}/${command.kind === 'vdb-split' ? '_split' : '_merge'}`;
      const answer = call('POST', path, command.kind === 'vdb-merge' ? { target_shard: command.into } : {}, SHARD_CHANGE_TIMEOUT_MS);
      const following = followVdbJob(command.vdb, answer, () => call('GET', '/_cluster/jobs'), progress);
      try {
        return print(await answer, asVdbShardChange, (b) => `${cleanCell(command.vdb)}: ${cleanCell(b.message)} (${b.docs_moved} documents moved)\n`);
      } finally {
        await following;
      }
    }
    case 'remove':
      return print(
        await call('DELETE', `/_cluster/nodes/${encodeURIComponent(command.node)}${command.force === true ? '?force=true' : ''}`),
        (raw) => asNodeStatus(raw, 'remove answer'),
        (body) => renderNodeStatus(body),
      );
    case 'reshard': {
      const path = `/vectordb/collections/${encodeURIComponent(command.collection)}/reshard`;
      const started = await call('POST', path, { num_shards: command.shards });
      if (!command.wait) return print(started, asReshardStarted, (b) => `reshard of ${command.collection} started: ${b.old_shards} -> ${b.new_shards} shards (follow it with --wait, or GET ${path})\n`);
      // Follow the job: a line on stderr whenever it moves, the last one on stdout.
      let last = '';
      for (;;) {
        const raw = await call('GET', path);
        const job = asReshardJob(raw);
        const line = renderReshardProgress(job);
        if (isReshardEnded(job.state)) {
          if (job.state !== 'done') throw new CliFailure(`reshard_${job.state}`, `the reshard of ${command.collection} ${job.state}${job.last_error === null ? '' : `: ${job.last_error}`}`);
          return target.json ? `${JSON.stringify(raw)}\n` : line;
        }
        if (line !== last) progress(line);
        last = line;
        await new Promise((r) => setTimeout(r, RESHARD_POLL_MS));
      }
    }
  }
}

/**
 * Every member's /health (from the member list, with an admin key), or the target's alone (no
 * key, or a standalone node). A node that does not answer is `unreachable`, not an error.
 */
async function clusterHealth(target: Target, fetchFn: typeof fetch, call: (method: string, path: string) => Promise<unknown>, asked: () => string): Promise<(NodeHealth & { raw: unknown })[]> {
  let members: { name: string; http: string; status: string }[] | undefined;
  if (target.key !== undefined) {
    const details = await call('GET', '/_cluster/nodes').catch((err: unknown) => {
      if (err instanceof CliFailure && (err.code === 'not_clustered' || err.code === 'not_found')) return undefined;
      throw err;
    });
    if (details !== undefined) members = asNodeDetails(details).nodes.filter((n) => n.status !== 'left');
  }
  if (members === undefined) {
    const own = await nodeHealth(fetchFn, asked());
    return [{ name: 'node' in own.health ? own.health.node : asked(), member: undefined, ...own }];
  }
  return Promise.all(members.map(async (m) => ({ name: m.name, member: m.status, ...(await nodeHealth(fetchFn, m.http)) })));
}

/** One node's GET /health: 200 and 503 both carry the report. */
async function nodeHealth(fetchFn: typeof fetch, url: string): Promise<{ health: NodeHealth['health']; raw: unknown }> {
  const unreachable = (why: string) => {
    const health = { status: 'unreachable' as const, problems: [why] as [string] };
    return { health, raw: health };
  };
  try {
    const res = await fetchFn(`${url}/health`, { headers: { accept: 'application/json' }, signal: AbortSignal.timeout(HEALTH_TIMEOUT_MS) });
    const raw = JSON.parse(await res.text()) as unknown;
    return { health: asHealth(raw), raw };
  } catch (err) {
    if ((err as Error).name === 'TimeoutError') return unreachable(`no answer from ${url} within ${HEALTH_TIMEOUT_MS / 1000} s`);
    if (err instanceof CliFailure) return unreachable(`${url} answered something that is not a health report: ${err.message}`);
    if (err instanceof SyntaxError) return unreachable(`${url} answered something that is not JSON`);
    return unreachable(`cannot reach ${url}: ${whyUnreachable(err)}`);
  }
}

/**
 * While a VDB split or merge request waits for its job, a progress line on stderr whenever the
 * job moves (from the cluster's job list). A standalone node runs the change inside the request
 * and has no job list: nothing to follow. A failed poll is skipped; the request decides.
 */
async function followVdbJob(vdb: string, answer: Promise<unknown>, jobs: () => Promise<unknown>, progress: (line: string) => void): Promise<void> {
  let settled = false;
  const ended = answer.then(
    () => (settled = true),
    () => (settled = true),
  );
  let last = '';
  while (!settled) {
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([ended, new Promise((r) => (timer = setTimeout(r, RESHARD_POLL_MS)))]);
    clearTimeout(timer);
    if (settled) return;
    try {
      const job = asJobs(await jobs()).find((j) => j.kind === 'vdb-rebalance' && j.target === vdb && !isReshardEnded(j.step));
      if (job === undefined || settled) continue;
      const line = renderVdbProgress(job);
      if (line !== last) progress(line);
      last = line;
    } catch (err) {
      if (err instanceof CliFailure && (err.code === 'not_clustered' || err.code === 'not_found')) return;
    }
  }
}

/** Why fetch could not reach a node: the socket's error code (ECONNREFUSED, ...) when there is one. */
function whyUnreachable(err: unknown): string {
  const cause = (err as Error & { cause?: { code?: string; message?: string } }).cause;
  return cause?.code ?? cause?.message ?? (err as Error).message;
}

/** The parsed JSON of a 2xx answer; anything else is a CliFailure carrying the node's code. */
async function callNode(fetchFn: typeof fetch, target: Target, method: string, path: string, body?: unknown, timeoutMs = REQUEST_TIMEOUT_MS): Promise<unknown> {
  const headers: Record<string, string> = { accept: 'application/json' };
  if (target.key !== undefined) headers.authorization = `Bearer ${target.key}`;
  if (body !== undefined) headers['content-type'] = 'application/json';
  const where = `${method} ${target.url}${path}`;
  let res: Response;
  let text: string;
  try {
    res = await fetchFn(target.url + path, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(timeoutMs),
    });
    text = await res.text();
  } catch (err) {
    if ((err as Error).name === 'TimeoutError') throw new CliFailure('timeout', `no answer to ${where} within ${timeoutMs / 1000} s`);
    const why = whyUnreachable(err);
    throw new CliFailure('unreachable', `cannot reach ${target.url}: ${why}`, EXIT_FAILED, NOT_SENT_CODES.has(why));
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    const quoted = JSON.stringify(text.slice(0, QUOTED_CHARS_MAX));
    throw new CliFailure(res.ok ? 'bad_response' : `http_${res.status}`, `${where} answered ${res.status} with non-JSON ${quoted}`);
  }
  const e = parsed as { ok?: unknown; error?: unknown; message?: unknown } | null;
  // A long request (a split, a merge) answers 200 at once and streams keep-alives; a failure
  // after that point ends the body as {ok: false, error, message}: the node's error all the same.
  if (res.ok && !(e?.ok === false && typeof e.error === 'string' && typeof e.message === 'string')) return parsed;
  if (typeof e?.error === 'string' && typeof e.message === 'string') throw new CliFailure(e.error, e.message);
  throw new CliFailure(`http_${res.status}`, `${where} answered ${res.status} with ${JSON.stringify(parsed).slice(0, QUOTED_CHARS_MAX)}`);
}
