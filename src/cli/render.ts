// What each command prints by default: the node's answer as aligned text. Pure; every
// function returns the whole output, lines joined, ending with a newline.
import { type HealthBody, type JobRow, type NodeDetailsBody, type NodeStatusBody, type NodesBody, type ReshardJobBody, type ShardRow, type ShardsBody, type StatusBody, type TaskRow, type VdbRebalanceBody, type VdbShardRow, documentCount } from './contract.js';
import { isReshardEnded } from '../cluster/meta-state.js';
import { CAUGHT_UP_LAG } from '../cluster/removal-risk.js';
import { cleanCell, formatTable } from './table.js';

const NONE = '-';

const lines = (rows: readonly string[]): string => rows.map((row) => `${row}\n`).join('');
const list = (names: readonly string[]): string => (names.length === 0 ? NONE : names.map(cleanCell).join(', '));

/** A heartbeat age for people: 850ms, 12.3s, 4m05s, 2h07m. Missing or nonsense shows as '-'. */
export function formatAgo(ms: number | null): string {
  if (ms === null || !Number.isFinite(ms) || ms < 0) return NONE;
  if (ms < 1_000) return `${Math.floor(ms)}ms ago`;
  if (ms < 60_000) return `${(Math.floor(ms / 100) / 10).toFixed(1)}s ago`;
  const s = Math.floor(ms / 1_000);
  if (s < 3_600) return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s ago`;
  const m = Math.floor(s / 60);
  return `${Math.floor(m / 60)}h${String(m % 60).padStart(2, '0')}m ago`;
}

export function renderStatus(body: StatusBody): string {
  const leader = body.leader === null ? NONE : body.leader === body.node ? `${body.leader} (this node)` : body.leader;
  const rows: string[][] = [
    ['node', body.node],
    ['state', body.state],
    ['leader', leader],
    ['nodes', list(body.nodes)],
  ];
  if (body.healthy_nodes !== undefined) {
    const healthy = new Set(body.healthy_nodes);
    rows.push(['healthy', list(body.healthy_nodes)]);
    const unhealthy = body.nodes.filter((n) => !healthy.has(n));
    if (unhealthy.length > 0) rows.push(['unhealthy', list(unhealthy)]);
  }
  return lines(formatTable(rows));
}

/** The plain view: one name a line. */
export function renderNodeNames(body: NodesBody): string {
  return lines(body.nodes.map(cleanCell));
}

export function renderNodeDetails(body: NodeDetailsBody): string {
  const summary = `leader ${cleanCell(body.leader ?? NONE)}  term ${body.term}  commit ${body.commit}  applied ${body.applied}`;
  const header = ['NAME', 'STATUS', 'ROLE', 'LEADS', 'ZONE', 'VERSION', 'HTTP', 'GRPC', 'HEARTBEAT'];
  const rows = body.nodes.map((n) => [
    n.name === body.leader ? `${n.name} *` : n.name,
    n.status,
    n.role,
    n.shard_leaders === null ? '-' : String(n.shard_leaders),
    n.zone,
    n.version ?? '?',
    n.http,
    n.grpc,
    formatAgo(n.last_heartbeat_ms_ago),
  ]);
  return lines([summary, ...formatTable([header, ...rows])]);
}

/** join, leave and remove: `<node>: <status>`, plus what the status came through. */
export function renderNodeStatus(body: NodeStatusBody, via?: string): string {
  return lines([`${cleanCell(body.node)}: ${cleanCell(body.status)}${via === undefined ? '' : ` (${via})`}`]);
}

/** Lag per member in entries: `?` unknown, `+` a learner, `down` a member whose node the cluster counts down. */
function lagCell(lag: Record<string, number | null> | undefined, learners: readonly string[] | undefined, down: readonly string[] | undefined): string {
  if (lag === undefined) return NONE;
  return Object.entries(lag)
    .map(([n, l]) => `${cleanCell(n)}${learners?.includes(n) === true ? '+' : ''}:${down?.includes(n) === true ? 'down' : l === null ? '?' : l}`)
    .join(' ');
}

/**
 * Why a shard is not settled (none: it is): no leader, a replica down, a learner, members other
 * than its placement (a move under way), a member not heard from or more than CAUGHT_UP_LAG
 * entries behind (the removal guard's "in step").
 */
export function unsettled(s: Pick<ShardRow, 'leader' | 'lag' | 'down' | 'learners' | 'replicas'>): string[] {
  if (s.leader === null || s.lag === undefined) return ['no leader'];
  const why: string[] = [];
  for (const n of s.down ?? []) why.push(`${n} down`);
  for (const n of s.learners ?? []) why.push(`${n} a learner`);
  const members = Object.keys(s.lag);
  const moving = members.length !== s.replicas.length || s.replicas.some((r) => !members.includes(r));
  if (moving) why.push(`members ${members.join(', ')} are not its placement`);
  for (const [n, lag] of Object.entries(s.lag)) {
    if (s.down?.includes(n) === true) continue;
    if (lag === null) why.push(`${n} not heard from`);
    else if (lag > CAUGHT_UP_LAG) why.push(`${n} ${lag} entries behind`);
  }
  return why;
}

/** The last line of a shard table: `settled: …`, or each unsettled shard with its reasons. */
function settledLine(shards: readonly { shard: number; why: readonly string[] }[], settled: string): string {
  const open = shards.filter((s) => s.why.length > 0);
  return open.length === 0 ? `settled: ${settled}` : `not settled: ${open.map((s) => `shard ${s.shard} (${s.why.map(cleanCell).join('; ')})`).join(', ')}`;
}

/** One row per shard: replicas, leader (term), lag per member (`lagCell`); then whether every shard is settled. */
export function renderShards(body: ShardsBody): string {
  const header = ['SHARD', 'GROUP', 'REPLICAS', 'LEADER', 'LAG'];
  const rows = body.shards.map((s) => {
    const leader = s.leader === null ? `${NONE} (${cleanCell(s.error ?? 'no leader')})` : `${cleanCell(s.leader)} (term ${s.term ?? '?'})`;
    return [String(s.shard), cleanCell(s.group), list(s.replicas), leader, lagCell(s.lag, s.learners, s.down)];
  });
  const verdict = settledLine(body.shards.map((s) => ({ shard: s.shard, why: unsettled(s) })), 'every shard has a leader and its placement, all in step');
  return lines([`${cleanCell(body.collection)}: replication factor ${body.replication_factor}`, ...formatTable([header, ...rows]), verdict]);
}

/** A VDB's shards: hash range (hex), replicas, primary, status, lag per replica (`lagCell`). */
export function renderVdbShards(vdb: string, shards: readonly VdbShardRow[]): string {
  const hex = (n: number) => n.toString(16).padStart(8, '0');
  const header = ['SHARD', 'RANGE', 'REPLICAS', 'PRIMARY', 'STATUS', 'LAG'];
  const rows = shards.map((s) => [
    String(s.shard_id),
    s.range === undefined ? NONE : `${hex(s.range[0])}-${hex(s.range[1])}`,
    s.replicas.length === 0 ? '(this node)' : list(s.replicas),
    s.primary === null ? NONE : cleanCell(s.primary),
    cleanCell(s.status),
    lagCell(s.lag, undefined, s.down),
  ]);
  // On a cluster, whether every shard is settled (as `renderShards` says it), and active.
  const clustered = shards.some((s) => s.replicas.length > 0);
  const why = (s: VdbShardRow) => [...(s.status === 'active' ? [] : [s.status]), ...unsettled({ ...s, leader: s.primary })];
  const verdict = clustered ? [settledLine(shards.map((s) => ({ shard: s.shard_id, why: why(s) })), 'every shard active, with a primary and its placement, all in step')] : [];
  return lines([`${cleanCell(vdb)}: ${shards.length} shard${shards.length === 1 ? '' : 's'}`, ...formatTable([header, ...rows]), ...verdict]);
}

/** A text progress bar: `[########------------]  40%` (fraction clamped to 0..1). */
export function progressBar(fraction: number, width = 20): string {
  const f = Number.isFinite(fraction) ? Math.min(1, Math.max(0, fraction)) : 0;
  const filled = Math.round(f * width);
  return `[${'#'.repeat(filled)}${'-'.repeat(width - filled)}] ${String(Math.floor(f * 100)).padStart(3)}%`;
}

/** One line of a reshard's progress: state, bar (toward the documents it began with), counts. */
export function renderReshardProgress(job: ReshardJobBody): string {
  const expected = job.documents_expected;
  const done = job.state === 'done' || job.state === 'cleaning';
  const fraction = done ? 1 : expected === null || expected === 0 ? 0 : job.documents_migrated / expected;
  const counts = documentCount(job.documents_migrated, expected ?? undefined);
  const error = job.last_error === null || done ? '' : ` (last error: ${cleanCell(job.last_error)})`;
  return `reshard ${cleanCell(job.collection)} ${job.old_shards} -> ${job.new_shards}: ${job.state.padEnd(11)} ${progressBar(fraction)} ${counts}${error}\n`;
}

/** One row per job, running ones first (newest first within each). */
export function renderJobs(jobs: readonly JobRow[], nowMs: number): string {
  if (jobs.length === 0) return 'no jobs\n';
  const sorted = [...jobs].sort((a, b) => Number(isReshardEnded(a.step)) - Number(isReshardEnded(b.step)) || b.updatedAtMs - a.updatedAtMs);
  const header = ['ID', 'KIND', 'TARGET', 'STEP', 'PROGRESS', 'UPDATED'];
  const rows = sorted.map((j) => {
    const parts = [j.what, j.moved === undefined ? undefined : documentCount(j.moved, j.expected), j.cancelRequested === true && !isReshardEnded(j.step) ? 'cancel requested' : undefined, j.error === undefined ? undefined : `error: ${j.error}`, j.waiting === undefined ? undefined : `waiting: ${j.waiting}`];
    const progress = parts.filter((p) => p !== undefined).join(', ');
    return [cleanCell(j.id), cleanCell(j.kind), cleanCell(j.target), cleanCell(j.step), progress === '' ? NONE : cleanCell(progress), formatAgo(nowMs - j.updatedAtMs)];
  });
  return lines(formatTable([header, ...rows]));
}

/** One line of a VDB split's or merge's progress (from its job in GET /_cluster/jobs). */
export function renderVdbProgress(job: JobRow): string {
  const done = job.step === 'done' || job.step === 'cleaning';
  const fraction = done ? 1 : job.expected === undefined || job.expected === 0 ? 0 : (job.moved ?? 0) / job.expected;
  const error = job.error === undefined || done ? '' : ` (last error: ${cleanCell(job.error)})`;
  return `${cleanCell(job.target)} ${cleanCell(job.what ?? job.kind)}: ${job.step.padEnd(11)} ${progressBar(fraction)} ${documentCount(job.moved ?? 0, job.expected)}${error}\n`;
}

/** A cancelled (or cancelling) VDB split or merge. */
export function renderVdbCancel(job: VdbRebalanceBody): string {
  const what = `${job.op} of ${cleanCell(job.vdb)} shard ${job.source} -> ${job.target}`;
  if (job.state === 'cancelled') return `${what}: cancelled (${job.documents_copied} documents had been copied; the shards are as they were)\n`;
  if (isReshardEnded(job.state)) return `${what}: ${job.state}${job.last_error === null ? '' : ` (${cleanCell(job.last_error)})`}\n`;
  return `${what}: cancel taken, the job is still ${job.state} (follow it with firkin cluster jobs)\n`;
}

/** The answer to `firkin vdb cancel-import VDB`. */
export function renderImportCancel(vdb: string, cancelled: number): string {
  return `${cleanCell(vdb)}: ${cancelled} import${cancelled === 1 ? '' : 's'} cancelled (each answers its client "cancelled"; what it wrote stays)\n`;
}

/** One node's answer to GET /health, or why there was none. */
export interface NodeHealth {
  name: string;
  /** Its membership status (up, suspect, down, ...); undefined for a standalone node. */
  member: string | undefined;
  health: HealthBody | { status: 'unreachable'; problems: [string] };
}

/** A row per node, then each problem on a line of its own under a blank line. */
export function renderClusterHealth(nodes: readonly NodeHealth[]): string {
  const header = ['NODE', 'HEALTH', 'MEMBER', 'PROBLEMS'];
  const rows = nodes.map((n) => [cleanCell(n.name), cleanCell(n.health.status), cleanCell(n.member ?? NONE), String(n.health.problems.length)]);
  const problems = nodes.flatMap((n) => n.health.problems.map((p) => `${cleanCell(n.name)}: ${cleanCell(p)}`));
  const ok = nodes.filter((n) => n.health.status === 'ok').length;
  const summary = `${nodes.length} node${nodes.length === 1 ? '' : 's'}: ${ok} ok${ok === nodes.length ? '' : `, ${nodes.length - ok} not`}`;
  return lines([...formatTable([header, ...rows]), ...(problems.length === 0 ? [] : ['', ...problems]), '', summary]);
}

/** GET /_active_tasks as a table, the most recently updated first. */
export function renderTasks(tasks: readonly TaskRow[], nowMs: number): string {
  if (tasks.length === 0) return 'no active tasks\n';
  const sorted = [...tasks].sort((a, b) => b.updatedOnS - a.updatedOnS);
  const rows = sorted.map((t) => [cleanCell(t.type), cleanCell(t.node) || NONE, cleanCell(t.what) || NONE, cleanCell(t.progress) || NONE, formatAgo(nowMs - t.updatedOnS * 1000)]);
  return lines(formatTable([['TYPE', 'NODE', 'WHAT', 'PROGRESS', 'UPDATED'], ...rows]));
}
