import { api, enc } from '../api.js';
import { usePoll } from '../hooks.js';
import { Loaded, StatusDot } from '../ui.js';

const CLUSTER_POLL_MS = 2_000;

interface NodeView {
  name: string;
  http: string;
  zone: string;
  status: string;
  role: 'voter' | 'learner' | 'none';
  last_heartbeat_ms_ago: number | null;
}
interface ShardRow {
  shard: number;
  replicas: string[];
  leader: string | null;
  voters?: string[];
  learners?: string[];
  lag?: Record<string, number | null>;
  message?: string;
}
interface ClusterView {
  standalone: false;
  leader: string | null;
  term: number;
  nodes: NodeView[];
  collections: { name: string; shards: ShardRow[]; error?: string }[];
}

async function fetchCluster(): Promise<ClusterView | { standalone: true }> {
  // /health says whether the node is clustered, so a standalone node is not asked for
  // /_cluster/* only to answer not_clustered.
  const health = (await (await fetch('/health', { headers: { accept: 'application/json' } })).json()) as { cluster?: { state?: string } };
  if (health.cluster?.state === 'standalone') return { standalone: true };
  const nodes = await api<{ leader: string | null; term: number; nodes: NodeView[] }>('GET', '/_cluster/nodes');
  const names = Object.keys(await api<Record<string, unknown>>('GET', '/vectordb/collections').catch(() => ({})));
  const collections = await Promise.all(
    names.map((name) =>
      api<{ shards: ShardRow[] }>('GET', `/_cluster/collections/${enc(name)}/shards`).then(
        (r) => ({ name, shards: r.shards }),
        (err: unknown) => ({ name, shards: [], error: (err as Error).message }),
      ),
    ),
  );
  return { standalone: false, leader: nodes.leader, term: nodes.term, nodes: nodes.nodes, collections };
}

function role(row: ShardRow, node: string): string {
  if (!row.replicas.includes(node)) return '';
  if (row.leader === node) return 'leader';
  if (row.learners?.includes(node)) return 'learner';
  return 'follower';
}

export function ClusterPage() {
  const [load] = usePoll(fetchCluster, [], CLUSTER_POLL_MS);
  return (
    <Loaded load={load}>
      {(view) =>
        view.standalone ? (
          <p>This node runs standalone (no cluster): there are no other nodes, no metadata group and no shard replicas.</p>
        ) : (
          <>
            <p>
              Metadata group leader: <strong>{view.leader ?? 'none (election)'}</strong>, term {view.term}. Voters:{' '}
              {view.nodes.filter((n) => n.role === 'voter').map((n) => n.name).join(', ')}.
            </p>
            <h2>Nodes</h2>
            <table aria-label="Nodes">
              <thead>
                <tr><th>node</th><th>status</th><th>zone</th><th>role</th><th>last heartbeat</th><th>HTTP</th></tr>
              </thead>
              <tbody>
                {view.nodes.map((n) => (
                  <tr data-node={n.name}>
                    <td>{n.name}</td>
                    <td class="node-status"><StatusDot status={n.status} /> {n.status}</td>
                    <td>{n.zone}</td>
                    <td>{n.role}</td>
                    <td>{n.last_heartbeat_ms_ago === null ? 'never' : `${n.last_heartbeat_ms_ago} ms ago`}</td>
                    <td>{n.http}</td>
                  </tr>
                ))}
              </tbody>
            </table>
            {view.collections.map((c) => (
              <section aria-label={`Shards of ${c.name}`}>
                <h2>Collection {c.name}</h2>
                {c.error !== undefined && <p class="error">{c.error}</p>}
                <table class="grid">
                  <thead>
                    <tr><th>shard</th>{view.nodes.map((n) => <th>{n.name}</th>)}</tr>
                  </thead>
                  <tbody>
                    {c.shards.map((row) => (
                      <tr data-shard={row.shard}>
                        <td>{row.shard}{row.message !== undefined && <span class="muted"> ({row.message})</span>}</td>
                        {view.nodes.map((n) => {
                          const r = role(row, n.name);
                          const lag = row.lag?.[n.name];
                          return <td class={r} data-node={n.name}>{r}{r !== '' && r !== 'leader' && lag !== undefined ? ` lag ${lag ?? '?'}` : ''}</td>;
                        })}
                      </tr>
                    ))}
                  </tbody>
                </table>
              </section>
            ))}
          </>
        )
      }
    </Loaded>
  );
}
