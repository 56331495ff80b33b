import { useEffect, useRef, useState } from 'preact/hooks';
import { api, describeError, enc, headers, responseError, timedApi } from '../api.js';
import { type DocStore, allDocsPath, attachmentPath, changesStreamPath, docPath, explainPath, findPath, storeId, storeTitle } from '../doc-store.js';
import { usePoll } from '../hooks.js';
import { type LeafAnswer, type RevNode, buildRevTree } from '../revtree.js';
import { feedStep, takeEvents } from '../sse.js';
import { ErrorBox, Json, Loaded, Pager, VirtualList, VirtualTable, usePaged } from '../ui.js';

const PAGE_SIZES = [20, 100, 500] as const;
// The live tail keeps this many changes (newest first); older ones fall off the end.
const FEED_ROWS_MAX = 2_000;
const FEED_ROW_PX = 24;
const FEED_HEIGHT_PX = 260;
const TABLE_ROW_PX = 30;
const TABLE_HEIGHT_PX = 420;
const DATABASES_POLL_MS = 5_000;

interface DbSummary {
  name: string;
  doc_count: number;
  doc_del_count: number;
  update_seq: string;
  disk_size: number;
}

// /health carries every database's figures in one call (GET /_all_dbs has names only); with
// the signed-in key it lists the databases that key may read.
async function fetchDatabases(): Promise<DbSummary[]> {
  const res = await fetch('/health', { headers: headers({ accept: 'application/json' }) });
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

function AllDocsTable({ store, onOpen }: { store: DocStore; onOpen: (id: string) => void }) {
  // Keyset paging: each page starts at the first id the previous page did not show.
  const [starts, setStarts] = useState<string[]>([]);
  const [pageRows, setPageRows] = useState<number>(PAGE_SIZES[0]);
  const start = starts[starts.length - 1];
  // One row more than the page: its id starts the next page, and says there is one.
  const [page, reload] = usePoll(
    () => api<AllDocs>('GET', allDocsPath(store, pageRows + 1, start)),
    [storeId(store), start, pageRows],
    DATABASES_POLL_MS,
  );
  return (
    <section aria-label="All documents">
      <Loaded load={page}>
        {(p) => (
          <>
            <VirtualTable
              label="Documents"
              items={p.rows.slice(0, pageRows)}
              rowPx={TABLE_ROW_PX}
              heightPx={TABLE_HEIGHT_PX}
              head={['id', 'winning rev']}
              row={(r) => ({ key: r.id, cells: [<button type="button" onClick={() => onOpen(r.id)}>{r.id}</button>, <code>{r.value.rev.slice(0, 12)}…</code>] })}
            />
            <nav class="row pager" aria-label="Documents pages">
              <button type="button" disabled={starts.length === 0} onClick={() => setStarts((s) => s.slice(0, -1))}>Previous page</button>
              <button type="button" disabled={p.rows.length <= pageRows} onClick={() => setStarts((s) => [...s, p.rows[pageRows]!.id])}>Next page</button>
              <button type="button" onClick={reload}>Reload</button>
              <span class="muted" role="status">page {starts.length + 1}, {p.total_rows} documents</span>
              <label class="inline">Rows per page{' '}
                <select name="page-rows" value={String(pageRows)} onChange={(e) => { setStarts([]); setPageRows(Number(e.currentTarget.value)); }}>
                  {PAGE_SIZES.map((n) => <option value={String(n)}>{n}</option>)}
                </select>
              </label>
            </nav>
          </>
        )}
      </Loaded>
    </section>
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

interface AttachmentStub {
  content_type: string;
  length: number;
  digest?: string;
}

/** The Authorization header cannot ride on a plain link: fetch the bytes, then save them from a blob URL. */
async function download(store: DocStore, id: string, name: string, contentType: string): Promise<void> {
  const res = await fetch(attachmentPath(store, id, name), { headers: headers() });
  if (!res.ok) throw await responseError(res);
  const url = URL.createObjectURL(new Blob([await res.arrayBuffer()], { type: contentType }));
  const link = document.createElement('a');
  link.href = url;
  link.download = name;
  link.click();
  // The click has started the download; the URL is only needed until then.
  setTimeout(() => URL.revokeObjectURL(url), 0);
}

function Attachments({ store, id, attachments }: { store: DocStore; id: string; attachments: Record<string, AttachmentStub> | undefined }) {
  const [error, setError] = useState<string | null>(null);
  const names = Object.keys(attachments ?? {}).sort();
  if (attachments === undefined || names.length === 0) return <p class="muted">No attachments.</p>;
  return (
    <>
      <table aria-label="Attachments">
        <thead><tr><th>name</th><th>type</th><th>length</th><th></th></tr></thead>
        <tbody>
          {names.map((name) => {
            const a = attachments[name]!;
            return (
              <tr key={name} data-attachment={name}>
                <td>{name}</td>
                <td>{a.content_type}</td>
                <td>{a.length} B</td>
                <td>
                  <button type="button" aria-label={`Download ${name}`} onClick={() => download(store, id, name, a.content_type).catch((err: unknown) => setError(describeError(err)))}>
                    Download
                  </button>
                </td>
              </tr>
            );
          })}
        </tbody>
      </table>
      {error !== null && <ErrorBox message={error} />}
    </>
  );
}

function DocumentView({ store, id }: { store: DocStore; id: string }) {
  const [load] = usePoll(async () => {
    const doc = await api<{ _rev: string; _attachments?: Record<string, AttachmentStub> }>('GET', docPath(store, id, 'deleted=true&conflicts=true&deleted_conflicts=true'));
    const leaves = await api<LeafAnswer[]>('GET', docPath(store, id, 'open_revs=all&revs=true'));
    return { doc, tree: buildRevTree(leaves, doc._rev) };
  }, [storeId(store), id]);
  return (
    <section aria-label={`Document ${id}`}>
      <h2>Document {id}</h2>
      <Loaded load={load}>
        {({ doc, tree }) => (
          <div class="columns">
            <Json value={doc} />
            <div>
              <h3>Attachments</h3>
              <Attachments store={store} id={id} attachments={doc._attachments} />
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

/**
 * Reads the SSE feed with fetch (EventSource cannot send the Authorization header); resumes
 * after a pause from the last cursor the feed gave (sse.ts: no change skipped or repeated).
 */
function ChangesFeed({ store }: { store: DocStore }) {
  const [changes, setChanges] = useState<Change[]>([]);
  const [paused, setPaused] = useState(false);
  // The node answered: the feed's `since` is fixed, so a write from now on is in it.
  const [open, setOpen] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const cursor = useRef<string>('now');
  useEffect(() => {
    if (paused) return;
    const abort = new AbortController();
    const run = async () => {
      const res = await fetch(changesStreamPath(store, cursor.current), { headers: headers(), signal: abort.signal });
      if (!res.ok || res.body === null) throw await responseError(res, `the changes feed answered ${res.status}`);
      setError(null);
      setOpen(true);
      const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
      let buffer = '';
      let held: Change[] = [];
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return;
        const { events, rest } = takeEvents(buffer + value);
        buffer = rest;
        const step = feedStep(held, events, (data) => JSON.parse(data) as Change);
        held = step.held;
        if (step.cursor !== undefined) cursor.current = step.cursor;
        if (step.shown.length > 0) setChanges((cs) => [...step.shown.reverse(), ...cs].slice(0, FEED_ROWS_MAX));
        if (step.error !== undefined) throw new Error(step.error);
      }
    };
    // A feed this effect aborted says nothing: the next one (or none) owns the status.
    run()
      .catch((err: unknown) => {
        if (!abort.signal.aborted) setError(describeError(err));
      })
      .finally(() => !abort.signal.aborted && setOpen(false));
    return () => {
      abort.abort();
      setOpen(false);
    };
  }, [storeId(store), paused]);
  return (
    <section aria-label="Live changes">
      <h2>Live changes</h2>
      <div class="row">
        <button type="button" onClick={() => setPaused((p) => !p)} aria-pressed={paused}>{paused ? 'Resume' : 'Pause'}</button>
        <span class="muted" role="status">{paused ? 'paused' : open ? 'following' : 'connecting…'}</span>
      </div>
      {error !== null && <ErrorBox message={error} />}
      <VirtualList
        label="Changes feed"
        items={changes}
        rowPx={FEED_ROW_PX}
        heightPx={FEED_HEIGHT_PX}
        row={(c) => ({ key: `${c.seq} ${c.id}`, attrs: { 'data-id': c.id }, content: `${c.id} ${c.rev.slice(0, 10)}…${c.deleted ? ' (deleted)' : ''}` })}
      />
      <p class="muted">{changes.length === 0 ? 'No change since the feed opened.' : `${changes.length} ${changes.length === 1 ? 'change' : 'changes'} shown, newest first (at most ${FEED_ROWS_MAX}).`}</p>
    </section>
  );
}

interface FindAnswer {
  docs: Record<string, unknown>[];
  meta: { total: number; offset: number; limit: number | null };
  /** The node's note when no index could narrow the selector (a full scan). */
  warning?: string;
}

type FindResult =
  | { kind: 'find'; answer: FindAnswer; latencyMs: number }
  | { kind: 'count'; total: number; latencyMs: number }
  | { kind: 'explain'; plan: ExplainAnswer; latencyMs: number };

interface ExplainAnswer {
  plan: { kind: 'index'; scan: unknown; estimated_postings: number } | { kind: 'full_scan'; reason: string };
  exact: boolean;
  [more: string]: unknown;
}

const FIND_EXAMPLE = '{\n  "selector": {},\n  "limit": 25\n}';

function planSummary(e: ExplainAnswer): string {
  if (e.plan.kind === 'full_scan') return `full scan: ${e.plan.reason}`;
  return `index scan ${JSON.stringify(e.plan.scan)}, about ${e.plan.estimated_postings} postings${e.exact ? ', exact (answered by the index alone)' : ', each candidate checked against its body'}`;
}

function FindPanel({ store, onOpen }: { store: DocStore; onOpen: (id: string) => void }) {
  const explain = explainPath(store);
  const [query, setQuery] = useState(FIND_EXAMPLE);
  const [result, setResult] = useState<FindResult | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const run = async (kind: FindResult['kind']) => {
    setError(null);
    setBusy(true);
    try {
      let body: Record<string, unknown>;
      try {
        body = JSON.parse(query) as Record<string, unknown>;
      } catch {
        throw new Error('The query is not valid JSON');
      }
      if (kind === 'explain') {
        if (explain === undefined) throw new Error(`${storeTitle(store)} has no _explain`);
        const { body: plan, latencyMs } = await timedApi<ExplainAnswer>('POST', explain, body);
        setResult({ kind, plan, latencyMs });
      } else if (kind === 'count') {
        // limit 0 answers the exact total alone.
        const { body: answer, latencyMs } = await timedApi<FindAnswer>('POST', findPath(store), { ...body, limit: 0 });
        setResult({ kind, total: answer.meta.total, latencyMs });
      } else {
        const { body: answer, latencyMs } = await timedApi<FindAnswer>('POST', findPath(store), body);
        setResult({ kind, answer, latencyMs });
      }
    } catch (err) {
      setError(describeError(err));
    } finally {
      setBusy(false);
    }
  };
  return (
    <section aria-label="Query">
      <h2>Query (<code>_find</code>)</h2>
      <form onSubmit={(e) => { e.preventDefault(); void run('find'); }} aria-label="Find documents">
        <label>
          <span>Query (JSON: <code>selector</code> and/or <code>where</code>, <code>order_by</code>, <code>limit</code>, <code>offset</code>, <code>include_docs</code>)</span>
          <textarea name="find-query" rows={6} value={query} onInput={(e) => setQuery(e.currentTarget.value)} />
        </label>
        <div class="row">
          <button type="submit" disabled={busy}>Find</button>
          {explain !== undefined && <button type="button" disabled={busy} onClick={() => void run('explain')}>Explain</button>}
          <button type="button" disabled={busy} onClick={() => void run('count')}>Count</button>
        </div>
        {explain === undefined && (
          <p class="muted">No Explain here: a virtual database has no <code>_explain</code> (each shard plans its part of the query on its own). Find and Count ask every shard and merge their answers.</p>
        )}
      </form>
      {error !== null && <ErrorBox message={error} />}
      {result !== null && <FindOutput result={result} onOpen={onOpen} />}
    </section>
  );
}

function FindOutput({ result, onOpen }: { result: FindResult; onOpen: (id: string) => void }) {
  const took = `${result.latencyMs.toFixed(1)} ms`;
  switch (result.kind) {
    case 'count':
      return <p role="status" aria-label="Query count">{result.total} matching documents ({took})</p>;
    case 'explain':
      return (
        <div aria-label="Query plan" role="group">
          <p role="status">Plan: {planSummary(result.plan)} ({took})</p>
          <Json value={result.plan} />
        </div>
      );
    case 'find': {
      const { docs, meta, warning } = result.answer;
      return (
        <>
          <p role="status" aria-label="Query summary">{docs.length} of {meta.total} matching documents from offset {meta.offset} ({took})</p>
          {warning !== undefined && <p class="muted" aria-label="Query warning">{warning}</p>}
          <VirtualTable
            label="Query results"
            items={docs}
            rowPx={TABLE_ROW_PX}
            heightPx={TABLE_HEIGHT_PX}
            head={['id', 'rev', 'body']}
            row={(d, index) => {
              // `fields` may leave out `_rev` (and `_id`): the row says so rather than failing.
              const { _id, _rev, ...body } = d as { _id?: string; _rev?: string };
              return {
                key: _id ?? `#${index}`,
                cells: [
                  _id === undefined ? <span class="muted">(no _id)</span> : <button type="button" class="find-id" onClick={() => onOpen(_id)}>{_id}</button>,
                  _rev === undefined ? <span class="muted">–</span> : <code>{_rev.slice(0, 12)}…</code>,
                  <code>{JSON.stringify(body)}</code>,
                ],
              };
            }}
          />
        </>
      );
    }
  }
}

function DatabaseDetail({ store }: { store: DocStore }) {
  const [open, setOpen] = useState<string | null>(null);
  const [idInput, setIdInput] = useState('');
  return (
    <section aria-label={storeTitle(store)}>
      <h2>{storeTitle(store)}</h2>
      <form class="row" aria-label="Open a document" onSubmit={(e) => { e.preventDefault(); setOpen(idInput); }}>
        <label>Document id<input name="open-doc-id" required value={idInput} onInput={(e) => setIdInput(e.currentTarget.value)} /></label>
        <button type="submit">Open document</button>
      </form>
      <div class="columns">
        <AllDocsTable store={store} onOpen={setOpen} />
        <ChangesFeed store={store} />
      </div>
      {open !== null && <DocumentView key={open} store={store} id={open} />}
      <FindPanel store={store} onOpen={setOpen} />
    </section>
  );
}

function DatabaseTable({ dbs, selected, onSelect }: { dbs: DbSummary[]; selected: DocStore | null; onSelect: (store: DocStore) => void }) {
  const [view, setPage] = usePaged(dbs);
  if (dbs.length === 0) return <p class="muted">No databases yet.</p>;
  return (
    <>
      <table aria-label="Databases">
        <thead><tr><th>name</th><th>documents</th><th>deleted</th><th>size</th></tr></thead>
        <tbody>
          {view.rows.map((d) => (
            <tr key={d.name}>
              <td><button type="button" onClick={() => onSelect({ kind: 'db', name: d.name })} aria-pressed={selected?.kind === 'db' && selected.name === d.name}>{d.name}</button></td>
              <td>{d.doc_count}</td>
              <td>{d.doc_del_count}</td>
              <td>{d.disk_size} B</td>
            </tr>
          ))}
        </tbody>
      </table>
      <Pager view={view} total={dbs.length} onPage={setPage} label="Databases" />
    </>
  );
}

interface VdbInfo {
  name: string;
  shard_count: number;
  total_docs: number;
  placement: { replica_factor: number };
}

/** Virtual databases, when there are any: browsed here like a database, their shards drawn on the Cluster page. */
function VdbTable({ selected, onSelect }: { selected: DocStore | null; onSelect: (store: DocStore) => void }) {
  const [list] = usePoll(() => api<{ vdbs: VdbInfo[] }>('GET', '/vdb'), [], DATABASES_POLL_MS);
  if (list.state === 'loading' || (list.state === 'ready' && list.value.vdbs.length === 0)) return null;
  return (
    <section aria-label="Virtual databases">
      <h2>Virtual databases</h2>
      <Loaded load={list}>
        {({ vdbs }) => (
          <table aria-label="Virtual databases">
            <thead><tr><th>name</th><th>shards</th><th>documents</th><th>replica factor</th><th></th></tr></thead>
            <tbody>
              {vdbs.map((v) => (
                <tr key={v.name} data-vdb={v.name}>
                  <td><button type="button" onClick={() => onSelect({ kind: 'vdb', name: v.name })} aria-pressed={selected?.kind === 'vdb' && selected.name === v.name}>{v.name}</button></td>
                  <td>{v.shard_count}</td>
                  <td>{v.total_docs}</td>
                  <td>{v.placement.replica_factor}</td>
                  <td><a href={`#/cluster/vdb/${enc(v.name)}`} aria-label={`Shards of ${v.name}`}>Shards by node</a></td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </Loaded>
    </section>
  );
}

export function DatabasesPage() {
  const [list, reload] = usePoll(fetchDatabases, [], DATABASES_POLL_MS);
  const [selected, setSelected] = useState<DocStore | null>(null);
  return (
    <>
      <CreateDatabase onCreated={reload} />
      <Loaded load={list}>{(dbs) => <DatabaseTable dbs={dbs} selected={selected} onSelect={setSelected} />}</Loaded>
      <VdbTable selected={selected} onSelect={setSelected} />
      {selected !== null && <DatabaseDetail key={storeId(selected)} store={selected} />}
    </>
  );
}
