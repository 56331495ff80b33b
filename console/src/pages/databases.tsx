import { useEffect, useRef, useState } from 'preact/hooks';
import { api, describeError, enc, headers } from '../api.js';
import { usePoll } from '../hooks.js';
import { type LeafAnswer, type RevNode, buildRevTree } from '../revtree.js';
import { ErrorBox, Json, Loaded } from '../ui.js';

const PAGE_ROWS = 20;
const FEED_ROWS_MAX = 200;

interface DbSummary {
  name: string;
  doc_count: number;
  doc_del_count: number;
  update_seq: string;
  disk_size: number;
}

// There is no list-all-databases route: /health carries the catalogue.
async function fetchDatabases(): Promise<DbSummary[]> {
  const res = await fetch('/health', { headers: { accept: 'application/json' } });
  const body = (await res.json()) as { docdb?: { databases?: DbSummary[] } };
  return body.docdb?.databases ?? [];
}

function CreateDatabase({ onCreated }: { onCreated: () => void }) {
  const [name, setName] = useState('');
  const [error, setError] = useState<string | null>(null);
  const submit = async (event: Event) => {
    event.preventDefault();
    setError(null);
    try {
      await api('PUT', `/db/${enc(name)}`);
      setName('');
      onCreated();
    } catch (err) {
      setError(describeError(err));
    }
  };
  return (
    <form class="row" onSubmit={submit} aria-label="Create a database">
      <label>Database name<input name="db-name" required pattern="[a-z][a-z0-9_$()+/\-]*" value={name} onInput={(e) => setName(e.currentTarget.value)} /></label>
      <button type="submit">Create database</button>
      {error !== null && <ErrorBox message={error} />}
    </form>
  );
}

interface AllDocs {
  total_rows: number;
  rows: { id: string; value: { rev: string } }[];
}

function AllDocsTable({ db, onOpen }: { db: string; onOpen: (id: string) => void }) {
  // Keyset paging: each page starts after the last id of the previous one.
  const [starts, setStarts] = useState<string[]>([]);
  const start = starts[starts.length - 1];
  const [page] = usePoll(
    () => api<AllDocs>('GET', `/db/${enc(db)}/_all_docs?limit=${PAGE_ROWS + 1}${start === undefined ? '' : `&startkey=${enc(JSON.stringify(start))}`}`),
    [db, start],
  );
  return (
    <Loaded load={page}>
      {(p) => (
        <>
          <table aria-label="Documents">
            <thead><tr><th>id</th><th>winning rev</th></tr></thead>
            <tbody>
              {p.rows.slice(0, PAGE_ROWS).map((r) => (
                <tr>
                  <td><button type="button" onClick={() => onOpen(r.id)}>{r.id}</button></td>
                  <td><code>{r.value.rev.slice(0, 12)}…</code></td>
                </tr>
              ))}
            </tbody>
          </table>
          <div class="row">
            <button type="button" disabled={starts.length === 0} onClick={() => setStarts((s) => s.slice(0, -1))}>Previous page</button>
            <button type="button" disabled={p.rows.length <= PAGE_ROWS} onClick={() => setStarts((s) => [...s, p.rows[PAGE_ROWS]!.id])}>Next page</button>
            <span class="muted">{p.total_rows} documents</span>
          </div>
        </>
      )}
    </Loaded>
  );
}

const STEP_X = 90;
const STEP_Y = 46;

function RevTreeSvg({ nodes }: { nodes: RevNode[] }) {
  const minGen = Math.min(...nodes.map((n) => n.generation));
  const x = (n: RevNode) => 30 + (n.generation - minGen) * STEP_X;
  const y = (n: RevNode) => 24 + n.row * STEP_Y;
  const byRev = new Map(nodes.map((n) => [n.rev, n]));
  const width = 80 + (Math.max(...nodes.map((n) => n.generation)) - minGen) * STEP_X;
  const height = 50 + Math.max(...nodes.map((n) => n.row)) * STEP_Y;
  const leaves = nodes.filter((n) => n.kind !== 'inner');
  return (
    <svg class="revtree" width={width} height={height} role="img" aria-label={`Revision tree: ${leaves.length} leaves (${leaves.map((l) => `${l.kind} ${l.rev.slice(0, 8)}`).join(', ')})`}>
      {nodes.map((n) => {
        const parent = n.parent === null ? undefined : byRev.get(n.parent);
        return parent === undefined ? null : <line x1={x(parent)} y1={y(parent)} x2={x(n)} y2={y(n)} />;
      })}
      {nodes.map((n) => (
        <g data-rev={n.rev} data-kind={n.kind}>
          <title>{`${n.rev} (${n.kind})`}</title>
          <circle class={n.kind} cx={x(n)} cy={y(n)} r={8} />
          <text x={x(n) - 14} y={y(n) + 20}>{n.rev.slice(0, 8)}</text>
        </g>
      ))}
    </svg>
  );
}

function DocumentView({ db, id }: { db: string; id: string }) {
  const [load] = usePoll(async () => {
    const doc = await api<{ _rev: string }>('GET', `/db/${enc(db)}/${enc(id)}?deleted=true&conflicts=true&deleted_conflicts=true`);
    const leaves = await api<LeafAnswer[]>('GET', `/db/${enc(db)}/${enc(id)}?open_revs=all&revs=true`);
    return { doc, tree: buildRevTree(leaves, doc._rev) };
  }, [db, id]);
  return (
    <section aria-label={`Document ${id}`}>
      <h2>Document {id}</h2>
      <Loaded load={load}>
        {({ doc, tree }) => (
          <div class="columns">
            <Json value={doc} />
            <div>
              <h3>Revision tree</h3>
              <p class="muted">green: winner · amber: conflict · red: deleted leaf</p>
              <RevTreeSvg nodes={tree} />
            </div>
          </div>
        )}
      </Loaded>
    </section>
  );
}

interface Change {
  seq: string;
  id: string;
  rev: string;
  deleted: boolean;
}

/** Reads the SSE feed with fetch (EventSource cannot send the Authorization header). */
function ChangesFeed({ db }: { db: string }) {
  const [changes, setChanges] = useState<Change[]>([]);
  const [paused, setPaused] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const lastSeq = useRef<string>('now');
  useEffect(() => {
    if (paused) return;
    const abort = new AbortController();
    const run = async () => {
      const res = await fetch(`/db/${enc(db)}/_changes/stream?since=${enc(lastSeq.current)}`, { headers: headers(), signal: abort.signal });
      if (!res.ok || res.body === null) throw new Error(`changes feed answered ${res.status}`);
      setError(null);
      const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
      let buffer = '';
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return;
        buffer += value;
        let end: number;
        while ((end = buffer.indexOf('\n\n')) !== -1) {
          const event = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const data = event.split('\n').find((l) => l.startsWith('data: '));
          if (data === undefined) continue;
          const change = JSON.parse(data.slice(6)) as Change;
          lastSeq.current = change.seq;
          setChanges((cs) => [change, ...cs].slice(0, FEED_ROWS_MAX));
        }
      }
    };
    run().catch((err: unknown) => {
      if (!abort.signal.aborted) setError(describeError(err));
    });
    return () => abort.abort();
  }, [db, paused]);
  return (
    <section aria-label="Live changes">
      <h2>Live changes</h2>
      <div class="row">
        <button type="button" onClick={() => setPaused((p) => !p)} aria-pressed={paused}>{paused ? 'Resume' : 'Pause'}</button>
        <span class="muted" role="status">{paused ? 'paused' : 'following'}</span>
      </div>
      {error !== null && <ErrorBox message={error} />}
      <ol class="feed" aria-label="Changes feed">
        {changes.map((c) => (
          <li data-id={c.id}>{c.id} {c.rev.slice(0, 10)}…{c.deleted ? ' (deleted)' : ''}</li>
        ))}
      </ol>
    </section>
  );
}

function DatabaseDetail({ db }: { db: string }) {
  const [open, setOpen] = useState<string | null>(null);
  const [idInput, setIdInput] = useState('');
  return (
    <>
      <h2>Database {db}</h2>
      <form class="row" aria-label="Open a document" onSubmit={(e) => { e.preventDefault(); setOpen(idInput); }}>
        <label>Document id<input name="open-doc-id" required value={idInput} onInput={(e) => setIdInput(e.currentTarget.value)} /></label>
        <button type="submit">Open document</button>
      </form>
      <div class="columns">
        <AllDocsTable db={db} onOpen={setOpen} />
        <ChangesFeed key={db} db={db} />
      </div>
      {open !== null && <DocumentView key={open} db={db} id={open} />}
    </>
  );
}

export function DatabasesPage() {
  const [list, reload] = usePoll(fetchDatabases, []);
  const [selected, setSelected] = useState<string | null>(null);
  return (
    <>
      <CreateDatabase onCreated={reload} />
      <Loaded load={list}>
        {(dbs) =>
          dbs.length === 0 ? (
            <p class="muted">No databases yet.</p>
          ) : (
            <table aria-label="Databases">
              <thead><tr><th>name</th><th>documents</th><th>deleted</th><th>size</th></tr></thead>
              <tbody>
                {dbs.map((d) => (
                  <tr>
                    <td><button type="button" onClick={() => setSelected(d.name)} aria-pressed={selected === d.name}>{d.name}</button></td>
                    <td>{d.doc_count}</td>
                    <td>{d.doc_del_count}</td>
                    <td>{d.disk_size} B</td>
                  </tr>
                ))}
              </tbody>
            </table>
          )
        }
      </Loaded>
      {selected !== null && <DatabaseDetail key={selected} db={selected} />}
    </>
  );
}
