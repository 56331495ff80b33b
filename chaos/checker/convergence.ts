// Convergence after healing: every replica of a shard reports the same digest at the same
// applied index. Pure: one poll's reports in, a verdict out.
//
// How the runner polls (the waiting is its job, not this module's): after healing, every
// `intervalMs` (250 ms) ask each node for `{node, shard, applied_index, digest}` of each of
// its replicas, call `checkConvergence` on the whole poll, and stop as soon as
// `pollVerdict(check, elapsedMs, deadlineMs)` is not `wait`:
// - converged: every shard's replicas agree;
// - diverged: two replicas report different digests at the same applied index. That is a
//   safety anomaly, not lag (a digest is of the state at that index), so there is no point
//   waiting: report it at once;
// - timeout: the deadline passed with replicas still behind or missing: report the last poll
//   (`no-convergence`).
// A node that does not answer a poll simply has no report in it (it is `missing` if the
// caller says which nodes should hold the shard).

export interface ReplicaReport {
  readonly node: string;
  readonly shard: string;
  readonly applied_index: number;
  readonly digest: string;
}

export interface ShardConvergence {
  readonly shard: string;
  readonly converged: boolean;
  /** When converged: the index and digest they agree on. */
  readonly appliedIndex?: number;
  readonly digest?: string;
  /** Same applied index, different digests: nodes grouped by digest, per index. */
  readonly diverged: readonly { readonly appliedIndex: number; readonly digests: Readonly<Record<string, readonly string[]>> }[];
  /** Nodes behind the highest applied index reported for this shard. */
  readonly lagging: readonly string[];
  /** Nodes expected to hold the shard that sent no report. */
  readonly missing: readonly string[];
  readonly replicas: readonly ReplicaReport[];
}

export interface ConvergenceCheck {
  /** Every shard converged. */
  readonly ok: boolean;
  /** Some shard's replicas diverged (a safety anomaly). */
  readonly diverged: boolean;
  readonly shards: readonly ShardConvergence[];
}

/**
 * `expected`: per shard, the nodes that should report it (optional; shards listed there with
 * no report at all are not converged). A node reporting the same shard twice in one poll is
 * the caller's mistake and throws.
 */
export function checkConvergence(reports: readonly ReplicaReport[], expected: Readonly<Record<string, readonly string[]>> = {}): ConvergenceCheck {
  const byShard = new Map<string, ReplicaReport[]>();
  for (const shard of Object.keys(expected)) byShard.set(shard, []);
  for (const r of reports) {
    let rs = byShard.get(r.shard);
    if (rs === undefined) byShard.set(r.shard, (rs = []));
    if (rs.some((x) => x.node === r.node)) throw new Error(`checkConvergence: ${r.node} reported shard ${r.shard} twice`);
    rs.push(r);
  }
  const shards = [...byShard].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([shard, replicas]) => checkShard(shard, replicas, expected[shard] ?? []));
  return { ok: shards.every((s) => s.converged), diverged: shards.some((s) => s.diverged.length > 0), shards };
}

function checkShard(shard: string, replicas: readonly ReplicaReport[], expected: readonly string[]): ShardConvergence {
  const missing = expected.filter((node) => !replicas.some((r) => r.node === node));
  const top = Math.max(...replicas.map((r) => r.applied_index));
  const lagging = replicas.filter((r) => r.applied_index < top).map((r) => r.node);
  const byIndex = new Map<number, Map<string, string[]>>();
  for (const r of replicas) {
    let digests = byIndex.get(r.applied_index);
    if (digests === undefined) byIndex.set(r.applied_index, (digests = new Map()));
    digests.set(r.digest, [...(digests.get(r.digest) ?? []), r.node]);
  }
  const diverged = [...byIndex]
    .filter(([, digests]) => digests.size > 1)
    .sort(([a], [b]) => a - b)
    .map(([appliedIndex, digests]) => ({ appliedIndex, digests: Object.fromEntries(digests) }));
  const converged = replicas.length > 0 && missing.length === 0 && lagging.length === 0 && diverged.length === 0;
  return { shard, converged, ...(converged ? { appliedIndex: top, digest: replicas[0]!.digest } : {}), diverged, lagging, missing, replicas };
}

export type PollVerdict = 'converged' | 'diverged' | 'wait' | 'timeout';

/** What the runner does after a poll: stop (converged, diverged, timeout) or poll again. */
export function pollVerdict(check: ConvergenceCheck, elapsedMs: number, deadlineMs: number): PollVerdict {
  if (check.diverged) return 'diverged';
  if (check.ok) return 'converged';
  return elapsedMs >= deadlineMs ? 'timeout' : 'wait';
}

/** A replica as a node's `GET /_cluster/shards` (or `/_cluster/vdb-shards`) lists it: the fields read here. */
export interface ReplicaStatusView {
  readonly group: string;
  readonly role?: string;
  readonly term?: number;
  readonly leader?: string | null;
  readonly applied?: number;
  readonly catching_up?: boolean;
  readonly stopped?: string | null;
  readonly followers?: readonly { readonly node: string; readonly match: number; readonly state: string; readonly link: string; readonly queued?: number }[];
}

/** One node's view in the runner's last convergence poll. */
export interface NodeView {
  readonly node: string;
  /** This node's own link to each other node (`GET /_cluster/nodes`). */
  readonly links?: Readonly<Record<string, string>>;
  readonly shards?: readonly ReplicaStatusView[];
}

/**
 * Why a replica lags, as far as the last poll tells: its own status, and what every node
 * leading its group says of it (progress and that node's link to it). A replica that never
 * catches up is either one no leader reaches (`link none`/`down`, or a term behind the
 * leader's) or one that stopped (`stopped`); the line says which. Pure.
 */
export function explainLagging(shard: string, node: string, views: readonly NodeView[]): string {
  const own = views.find((v) => v.node === node)?.shards?.find((r) => r.group === shard);
  const parts = [
    own === undefined
      ? `${node} lists no replica of ${shard}`
      : `${node}'s replica: ${own.role ?? '?'} at term ${own.term ?? '?'}, leader ${own.leader ?? 'none'}, applied ${own.applied ?? '?'}${own.catching_up === true ? ', catching up' : ''}${typeof own.stopped === 'string' ? `, stopped: ${own.stopped}` : ''}`,
  ];
  for (const v of views) {
    const led = v.shards?.find((r) => r.group === shard && r.role === 'leader');
    if (led === undefined) continue;
    const f = led.followers?.find((x) => x.node === node);
    const link = v.links?.[node] ?? f?.link ?? '?';
    parts.push(f === undefined ? `leader ${v.node} (term ${led.term ?? '?'}) does not count ${node} in its group (link ${link})` : `leader ${v.node} (term ${led.term ?? '?'}): match ${f.match}, ${f.state}, link ${link}${f.queued ? `, ${f.queued} queued` : ''}`);
  }
  if (parts.length === 1) parts.push('no node leads it');
  return parts.join('; ');
}
