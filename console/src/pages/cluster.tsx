import { useEffect, useRef, useState } from 'preact/hooks';
import { api, enc } from '../api.js';
import { useAction, usePoll } from '../hooks.js';
import { type JobRecord, cancelCall, jobProgress, replicaMoves } from '../jobs.js';
import { type GridRow, type VdbShardRow, fromCollectionShard, fromVdbShard, gridCell, gridColumns } from '../shard-grid.js';
import { ConfirmButton, ErrorBox, Loaded, ProgressBar, StatusDot } from '../ui.js';

const CLUSTER_POLL_MS = 2_000;

interface NodeView {
  name: string;
  http: string;
  zone: string;
  /** null: the node recorded none (older than the field); absent from an older server. */
  version?: string | null;
  status: string;
  role: 'voter' | 'learner' | 'none';
  last_heartbeat_ms_ago: number | null;
  /** Shard groups it leads; null: not known; absent from an older server. */
  shard_leaders?: number | null;
}
interface ShardRow {
  shard: number;
  replicas: string[];
  leader: string | null;
  voters?: string[];
  learners?: string[];
  lag?: Record<string, number | null>;
  commit?: number;
  message?: string;
}
interface ClusterView {
  standalone: false;
  leader: string | null;
  term: number;
  nodes: NodeView[];
  jobs: JobRecord[];
  collections: { name: string; shards: ShardRow[]; error?: string }[];
}

async function fetchCluster(): Promise<ClusterView | { standalone: true }> {
  // /health says whether the node is clustered, so a standalone node is not asked for
  // /_cluster/* only to answer not_clustered.
  const health = (await (await fetch('/health', { headers: { accept: 'application/json' } })).json()) as { cluster?: { state?: string } };
  if (health.cluster?.state === 'standalone') return { standalone: true };
  const [nodes, jobs] = await Promise.all([
    api<{ leader: string | null; term: number; nodes: NodeView[] }>('GET', '/_cluster/nodes'),
    api<{ jobs: JobRecord[] }>('GET', '/_cluster/jobs'),
  ]);
  const names = Object.keys(await api<Record<string, unknown>>('GET', '/vectordb/collections').catch(() => ({})));
  const collections = await Promise.all(
    names.map((name) =>
      api<{ shards: ShardRow[] }>('GET', `/_cluster/collections/${enc(name)}/shards`).then(
        (r) => ({ name, shards: r.shards }),
        (err: unknown) => ({ name, shards: [], error: (err as Error).message }),
      ),
    ),
  );
  return { standalone: false, leader: nodes.leader, term: nodes.term, nodes: nodes.nodes, jobs: jobs.jobs, collections };
}

/** `#/cluster/vdb/<name>` (the Databases page links there): that VDB's grid is scrolled into view. */
function vdbInHash(): string | null {
  const m = /^#\/cluster\/vdb\/(.+)$/.exec(location.hash);
  return m === null ? null : decodeURIComponent(m[1]!);
}

/**
 * Shards × nodes, for a collection or a VDB: what each node is to each shard's group. A down
 * node's cells say so: the leader still counts its lag from the last entry the node took.
 */
function ShardGrid({ label, nodes, down, rows }: { label: string; nodes: readonly string[]; down: ReadonlySet<string>; rows: readonly GridRow[] }) {
  const columns = gridColumns(nodes, rows);
  return (
    <table class="grid" aria-label={label}>
      <thead>
        <tr><th>shard</th>{columns.map((n) => <th>{n}</th>)}</tr>
      </thead>
      <tbody>
        {rows.map((row) => (
          <tr data-shard={row.shard} class={row.leader === null ? 'no-leader' : undefined}>
            <td>
              {row.shard}
              {row.readonly && <span class="tag"> read-only</span>}
              {row.note !== undefined && <span class={row.leader === null ? 'no-leader-note' : 'muted'}> ({row.note})</span>}
            </td>
            {columns.map((n) => {
              const cell = gridCell(row, n);
              const isDown = cell.role !== '' && down.has(n);
              return <td class={isDown ? `${cell.role} down` : cell.role} data-node={n}>{cell.text}{isDown && <span class="muted"> (node down)</span>}</td>;
            })}
          </tr>
        ))}
      </tbody>
    </table>
  );
}

/** Start an online reshard of a collection (POST …/reshard); the job then shows under Jobs. */
function ReshardForm({ collection, shards, onStarted }: { collection: string; shards: number; onStarted: () => void }) {
  const [count, setCount] = useState(String(shards * 2));
  const { busy, error, run } = useAction();
  const submit = (event: Event) => {
    event.preventDefault();
    void run(() => api('POST', `/vectordb/collections/${enc(collection)}/reshard`, { num_shards: Number(count) }), onStarted);
  };
  return (
    <form class="row" onSubmit={submit} aria-label={`Reshard ${collection}`}>
      <label>Shards<input name="num-shards" type="number" min="1" max="1024" required value={count} onInput={(e) => setCount(e.currentTarget.value)} /></label>
      <button type="submit" disabled={busy}>Reshard</button>
      <span class="muted">online: reads and writes go on; the job shows under Jobs</span>
      {error !== null && <ErrorBox message={error} />}
    </form>
  );
}

/** Split a VDB shard, or merge one into another (admin routes); in a cluster the job then shows under Jobs. */
function VdbRebalanceForm({ vdb, rows, onStarted }: { vdb: string; rows: readonly GridRow[]; onStarted: () => void }) {
  const active = rows.filter((r) => !r.readonly).map((r) => r.shard);
  const [source, setSource] = useState(String(active[0] ?? 0));
  const [target, setTarget] = useState(String(active[1] ?? active[0] ?? 0));
  const { busy, error, run } = useAction();
  const base = `/vdb/${enc(vdb)}/_shards/${enc(source)}`;
  const select = (name: string, value: string, set: (v: string) => void) => (
    <select name={name} value={value} onChange={(e) => set(e.currentTarget.value)}>
      {active.map((n) => <option value={String(n)}>{n}</option>)}
    </select>
  );
  return (
    <form class="row" aria-label={`Split or merge shards of ${vdb}`} onSubmit={(e) => e.preventDefault()}>
      <label>Shard{select('vdb-source', source, setSource)}</label>
      <button type="button" disabled={busy} onClick={() => void run(() => api('POST', `${base}/_split`, {}), onStarted)}>Split</button>
      <label>into{select('vdb-target', target, setTarget)}</label>
      <button type="button" disabled={busy || source === target} onClick={() => void run(() => api('POST', `${base}/_merge`, { target_shard: Number(target) }), onStarted)}>Merge</button>
      <span class="muted">a split gives the upper half of the shard's range to a new shard; a merge moves the shard into an adjacent one</span>
      {error !== null && <ErrorBox message={error} />}
    </form>
  );
}

interface VdbGrid {
  name: string;
  rows: GridRow[];
  error?: string;
}

/**
 * Every VDB's shards. `GET /vdb` reads each shard's counts through its leader, so while a
 * shard has none the listing waits for one: the grids are drawn for the names listed last,
 * and a VDB created since appears once the listing answers.
 */
function VdbShards({ nodes, down, standalone }: { nodes: readonly string[]; down: ReadonlySet<string>; standalone: boolean }) {
  const listed = useRef<string[] | null>(null);
  const [load, reload] = usePoll(async (): Promise<VdbGrid[]> => {
    const listing = api<{ vdbs: { name: string }[] }>('GET', '/vdb').then((r) => (listed.current = r.vdbs.map((v) => v.name)));
    let names: string[];
    if (listed.current === null) names = await listing;
    else {
      names = listed.current;
      listing.catch(() => undefined);
    }
    return Promise.all(
      names.map((name) =>
        api<{ shards: VdbShardRow[] }>('GET', `/vdb/${enc(name)}/_shards`).then(
          (r) => ({ name, rows: r.shards.map(fromVdbShard) }),
          (err: unknown) => ({ name, rows: [], error: (err as Error).message }),
        ),
      ),
    );
  }, [], CLUSTER_POLL_MS);
  const focus = vdbInHash();
  const scrolled = useRef(false);
  useEffect(() => {
    if (load.state !== 'ready' || focus === null || scrolled.current) return;
    scrolled.current = true;
    document.querySelector(`section[data-vdb="${CSS.escape(focus)}"]`)?.scrollIntoView();
  }, [load.state, focus]);
  if (load.state === 'error') return <section aria-label="Virtual databases"><ErrorBox message={load.message} /></section>;
  if (load.state === 'loading' || load.value.length === 0) return null;
  return (
    <>
      {standalone && <p>Virtual databases are node-local here: each shard is a database on this node (<code>&lt;vdb&gt;_s&lt;shard&gt;</code>).</p>}
      {load.value.map((v) => (
        <section aria-label={`Shards of VDB ${v.name}`} data-vdb={v.name} class={v.name === focus ? 'focused' : undefined}>
          <h2>Virtual database {v.name}</h2>
          {v.error !== undefined && <ErrorBox message={v.error} />}
          <ShardGrid label={`Shards of VDB ${v.name} by node`} nodes={nodes} down={down} rows={v.rows} />
          {v.rows.length > 0 && <VdbRebalanceForm vdb={v.name} rows={v.rows} onStarted={reload} />}
        </section>
      ))}
      {!standalone && <p class="muted">VDB shards: leader is the shard's Raft leader; replica is any other member (the VDB API does not tell followers from learners); lag in log entries behind the leader.</p>}
    </>
  );
}

function downNodes(view: ClusterView): Set<string> {
  return new Set(view.nodes.filter((n) => n.status === 'down').map((n) => n.name));
}

function formatAge(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  return s < 120 ? `${s} s ago` : `${Math.round(s / 60)} min ago`;
}

const MOVE_TEXT = { adding: 'placed here, waiting to join the shard group', catching_up: 'catching up (learner)', removing: 'leaving the shard group' } as const;

function Jobs({ view, reload }: { view: ClusterView; reload: () => void }) {
  const moves = replicaMoves(view.collections);
  const nowMs = Date.now();
  return (
    <section aria-label="Jobs">
      <h2>Jobs</h2>
      {view.jobs.length === 0 ? (
        <p class="muted">No leave, repair, reshard, VDB split or merge job in the metadata.</p>
      ) : (
        <table aria-label="Cluster jobs">
          <thead><tr><th>job</th><th>kind</th><th>target</th><th>step (leader)</th><th>started</th><th>progress</th><th></th></tr></thead>
          <tbody>
            {view.jobs.map((job) => {
              const p = jobProgress(job, view.nodes, view.collections);
              const text = p.fraction === null ? `${job.step} (its progress is not reported)` : p.current;
              const cancel = cancelCall(job);
              return (
                <tr key={job.id} data-job={job.id}>
                  <td><code>{job.id}</code></td>
                  <td>{job.kind}</td>
                  <td>{job.target}</td>
                  <td>{job.step}</td>
                  <td>{formatAge(nowMs - job.createdAtMs)}</td>
                  <td><ProgressBar label={`${job.kind} ${job.target}`} fraction={p.fraction} text={text} /></td>
                  <td>
                    {cancel !== null && (
                      <ConfirmButton label="Cancel" ariaLabel={`Cancel ${job.kind} of ${job.target}`} question={`Cancel the ${job.kind} of ${job.target}? What it copied is dropped.`}
                        confirmLabel="Cancel the job" danger onConfirm={() => api(cancel.method, cancel.path)} onDone={reload} />
                    )}
                  </td>
                </tr>
              );
            })}
          </tbody>
        </table>
      )}
      {moves.length > 0 && (
        <table aria-label="Replica moves">
          <thead><tr><th>collection</th><th>shard</th><th>node</th><th>progress</th></tr></thead>
          <tbody>
            {moves.map((m) => (
              <tr key={`${m.collection}/${m.shard}/${m.node}`}>
                <td>{m.collection}</td>
                <td>{m.shard}</td>
                <td>{m.node}</td>
                <td>
                  <ProgressBar label={`replica of ${m.collection} shard ${m.shard} on ${m.node}`} fraction={m.fraction}
                    text={m.fraction === null ? MOVE_TEXT[m.state] : `${MOVE_TEXT[m.state]}: ${Math.round(m.fraction * 100)}% of the log`} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}

export function ClusterPage() {
  const [load, reload] = usePoll(fetchCluster, [], CLUSTER_POLL_MS);
  return (
    <Loaded load={load}>
      {(view) =>
        view.standalone ? (
          <>
            <p>This node runs standalone (no cluster): there are no other nodes, no metadata group and no shard replicas.</p>
            <VdbShards nodes={[]} down={new Set()} standalone={true} />
          </>
        ) : (
          <>
            <p>
              Metadata group leader: <strong>{view.leader ?? 'none (election)'}</strong>, term {view.term}. Voters:{' '}
              {view.nodes.filter((n) => n.role === 'voter').map((n) => n.name).join(', ')}.
            </p>
            <h2>Nodes</h2>
            <table aria-label="Nodes">
              <thead>
                <tr><th>node</th><th>status</th><th>zone</th><th>role</th><th>shard leaderships</th><th>version</th><th>last heartbeat</th><th>HTTP</th></tr>
              </thead>
              <tbody>
                {view.nodes.map((n) => (
                  <tr data-node={n.name}>
                    <td>{n.name}</td>
                    <td class="node-status"><StatusDot status={n.status} /> {n.status}</td>
                    <td>{n.zone}</td>
                    <td>{n.role}</td>
                    <td class="node-leads">{n.shard_leaders ?? '-'}</td>
                    <td class="node-version">{n.version ?? 'older (unrecorded)'}</td>
                    <td>{n.last_heartbeat_ms_ago === null ? 'never' : `${n.last_heartbeat_ms_ago} ms ago`}</td>
                    <td>{n.http}</td>
                  </tr>
                ))}
              </tbody>
            </table>
            <Jobs view={view} reload={reload} />
            {view.collections.map((c) => (
              <section aria-label={`Shards of ${c.name}`}>
                <h2>Collection {c.name}</h2>
                {c.error !== undefined && <p class="error">{c.error}</p>}
                <ShardGrid label={`Shards of ${c.name} by node`} nodes={view.nodes.map((n) => n.name)} down={downNodes(view)} rows={c.shards.map(fromCollectionShard)} />
                {c.error === undefined && <ReshardForm collection={c.name} shards={c.shards.length} onStarted={reload} />}
              </section>
            ))}
            <VdbShards nodes={view.nodes.map((n) => n.name)} down={downNodes(view)} standalone={false} />
          </>
        )
      }
    </Loaded>
  );
}
