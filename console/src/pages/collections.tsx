import { useEffect, useState } from 'preact/hooks';
import { api, describeError, enc, timedApi } from '../api.js';
import { usePoll } from '../hooks.js';
import { ErrorBox, Json, Loaded, Pager, VirtualTable, usePaged } from '../ui.js';

// The standard vector API lives under /vectordb (SERVICE_VECTORDB_PREFIX).
const BASE = '/vectordb/collections';

type CollectionList = Record<string, { dimension?: number; dimensions?: number; shards?: number; replication_factor?: number }>;

function OpenApiNote() {
  return (
    <p class="note" role="note">
      The standard vector API is open by its spec: these calls need no API key, and anyone who can reach the node can read and write collections
      (switch it off with <code>SERVICE_VECTORDB_ENABLED=false</code>).
    </p>
  );
}

function CreateCollection({ onCreated }: { onCreated: () => void }) {
  const [name, setName] = useState('');
  const [dimensions, setDimensions] = useState('3');
  const [shards, setShards] = useState('1');
  const [replication, setReplication] = useState('1');
  const [bm25, setBm25] = useState('memory');
  const [error, setError] = useState<string | null>(null);
  const submit = async (event: Event) => {
    event.preventDefault();
    setError(null);
    try {
      await api('PUT', `${BASE}/${enc(name)}`, {
        dimensions: Number(dimensions),
        num_shards: Number(shards),
        replication_factor: Number(replication),
        bm25_backend: bm25,
      });
      setName('');
      onCreated();
    } catch (err) {
      setError(describeError(err));
    }
  };
  return (
    <form class="row" onSubmit={submit} aria-label="Create a collection">
      <label>Name<input name="collection-name" required value={name} onInput={(e) => setName(e.currentTarget.value)} /></label>
      <label>Dimensions<input name="dimensions" type="number" min="1" max="4096" value={dimensions} onInput={(e) => setDimensions(e.currentTarget.value)} /></label>
      <label>Shards<input name="shards" type="number" min="1" max="1024" value={shards} onInput={(e) => setShards(e.currentTarget.value)} /></label>
      <label>Replication factor<input name="replication" type="number" min="1" max="9" value={replication} onInput={(e) => setReplication(e.currentTarget.value)} /></label>
      <label>BM25 backend
        <select name="bm25" value={bm25} onChange={(e) => setBm25(e.currentTarget.value)}>
          <option value="none">none</option><option value="memory">memory</option><option value="disk">disk</option>
        </select>
      </label>
      <button type="submit">Create collection</button>
      {error !== null && <ErrorBox message={error} />}
    </form>
  );
}

function DeleteButton({ name, onDeleted }: { name: string; onDeleted: () => void }) {
  const [confirming, setConfirming] = useState(false);
  const [error, setError] = useState<string | null>(null);
  if (!confirming) return <button type="button" onClick={() => setConfirming(true)} aria-label={`Delete collection ${name}`}>Delete</button>;
  return (
    <span>
      Delete {name} and all its documents?{' '}
      <button
        type="button"
        class="danger"
        onClick={() => api('DELETE', `${BASE}/${enc(name)}`).then(onDeleted, (err: unknown) => setError(describeError(err)))}
      >
        Yes, delete
      </button>{' '}
      <button type="button" onClick={() => setConfirming(false)}>Cancel</button>
      {error !== null && <ErrorBox message={error} />}
    </span>
  );
}

// The collection's documents a page at a time (the scroll route: id order, keyset pages).
const DOCS_PAGE = 20;

interface ScrollAnswer {
  documents: { id: string }[];
  next_offset: string | null;
}

/** A page of ids, and the offsets of the pages before it (to go back). */
interface DocPage {
  ids: string[];
  next: string | null;
  offset: string | undefined;
  before: (string | undefined)[];
}

function DocumentBrowser({ collection }: { collection: string }) {
  const [id, setId] = useState('');
  const [doc, setDoc] = useState<unknown>(undefined);
  const [error, setError] = useState<string | null>(null);
  const [page, setPage] = useState<DocPage | null>(null);
  const loadPage = async (offset: string | undefined, before: (string | undefined)[]) => {
    try {
      const r = await api<ScrollAnswer>('POST', `${BASE}/${enc(collection)}/docs/scroll`, { limit: DOCS_PAGE, ...(offset === undefined ? {} : { offset }) });
      setPage({ ids: r.documents.map((d) => d.id), next: r.next_offset, offset, before });
    } catch (err) {
      setError(describeError(err));
    }
  };
  useEffect(() => {
    setPage(null);
    void loadPage(undefined, []);
  }, [collection]);
  const open = async (docId: string) => {
    setError(null);
    setDoc(undefined);
    try {
      setDoc(await api('GET', `${BASE}/${enc(collection)}/docs/${enc(docId)}`));
    } catch (err) {
      setError(describeError(err));
    }
  };
  return (
    <section aria-label="Document browser">
      <h2>Documents</h2>
      <form class="row" onSubmit={(e) => { e.preventDefault(); void open(id); }} aria-label="Get a document">
        <label>Document id<input name="doc-id" required value={id} onInput={(e) => setId(e.currentTarget.value)} /></label>
        <button type="submit">Get document</button>
      </form>
      <div class="row" aria-label="Documents by id" role="group">
        {page === null ? <span class="muted">loading…</span> : page.ids.length === 0 ? <span class="muted">no documents</span> : page.ids.map((d) => <button type="button" class="doc-link" onClick={() => void open(d)}>{d}</button>)}
      </div>
      {page !== null && (page.before.length > 0 || page.next !== null) && (
        <div class="row">
          <button type="button" disabled={page.before.length === 0} onClick={() => void loadPage(page.before.at(-1), page.before.slice(0, -1))}>Previous {DOCS_PAGE}</button>
          <button type="button" disabled={page.next === null} onClick={() => void loadPage(page.next!, [...page.before, page.offset])}>Next {DOCS_PAGE}</button>
        </div>
      )}
      {error !== null && <ErrorBox message={error} />}
      {doc !== undefined && <Json value={doc} />}
    </section>
  );
}

// k may be up to 1,000: the results are a virtual table of one-line rows.
const RESULT_ROW_PX = 30;
const RESULTS_HEIGHT_PX = 420;

const MODES = ['vector', 'similar', 'bm25', 'hybrid'] as const;
type Mode = (typeof MODES)[number];
const MODE_LABELS: Record<Mode, string> = { vector: 'Vector (JSON)', similar: 'Similar to document id', bm25: 'Keyword (BM25)', hybrid: 'Hybrid' };

interface Hit {
  id: string;
  score: number;
  text?: string;
  metadata?: unknown;
  bm25_score?: number | null;
  vector_score?: number | null;
}

/** Hybrid answers carry each list's raw score, null when the document was not among its candidates. */
function formatScore(score: number | null): string {
  return score === null ? '–' : score.toFixed(4);
}

function parseJson(label: string, text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    throw new Error(`${label} is not valid JSON`);
  }
}

function SearchPlayground({ collection }: { collection: string }) {
  const [mode, setMode] = useState<Mode>('vector');
  const [vector, setVector] = useState('[1, 0, 0]');
  const [similarId, setSimilarId] = useState('');
  const [query, setQuery] = useState('');
  const [fusion, setFusion] = useState<'rrf' | 'linear'>('rrf');
  const [bm25Weight, setBm25Weight] = useState('0.5');
  const [vectorWeight, setVectorWeight] = useState('0.5');
  const [filter, setFilter] = useState('');
  const [k, setK] = useState('10');
  const [ef, setEf] = useState('');
  const [result, setResult] = useState<{ hits: Hit[]; latencyMs: number; mode: Mode } | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  const search = async (event: Event) => {
    event.preventDefault();
    setError(null);
    setBusy(true);
    try {
      const common: Record<string, unknown> = { k: Number(k) };
      if (ef !== '') common.ef = Number(ef);
      let path = `${BASE}/${enc(collection)}/search`;
      let body: Record<string, unknown>;
      if (mode === 'bm25') {
        path += '/bm25';
        body = { query, k: Number(k) };
      } else if (mode === 'hybrid') {
        path += '/hybrid';
        body = { ...common, query, fusion, bm25_weight: Number(bm25Weight), vector_weight: Number(vectorWeight) };
        if (vector.trim() !== '') body.vector = parseJson('Vector', vector);
      } else {
        // "Similar to": the document's own vector becomes the query.
        const v = mode === 'similar'
          ? (await api<{ vector: number[] }>('GET', `${BASE}/${enc(collection)}/docs/${enc(similarId)}?include_vector=true`)).vector
          : parseJson('Vector', vector);
        body = { ...common, vector: v };
        if (filter.trim() !== '') body.filter = parseJson('Filter', filter);
      }
      const { body: answer, latencyMs } = await timedApi<{ results: Hit[] }>('POST', path, body);
      setResult({ hits: answer.results, latencyMs, mode });
    } catch (err) {
      setError(describeError(err));
    } finally {
      setBusy(false);
    }
  };

  return (
    <section aria-label="Search playground">
      <h2>Search playground</h2>
      <form onSubmit={search}>
        <fieldset class="row">
          <legend>Mode</legend>
          {MODES.map((m) => (
            <label class="inline">
              <input type="radio" name="mode" value={m} checked={mode === m} onChange={() => setMode(m)} /> {MODE_LABELS[m]}
            </label>
          ))}
        </fieldset>
        {(mode === 'vector' || mode === 'hybrid') && (
          <label>Vector (JSON array{mode === 'hybrid' ? ', optional with an embedder' : ''})<textarea name="vector" value={vector} onInput={(e) => setVector(e.currentTarget.value)} /></label>
        )}
        {mode === 'similar' && <label>Similar to document id<input name="similar-id" value={similarId} onInput={(e) => setSimilarId(e.currentTarget.value)} /></label>}
        {(mode === 'bm25' || mode === 'hybrid') && <label>Keywords<input name="query" value={query} onInput={(e) => setQuery(e.currentTarget.value)} /></label>}
        <div class="row">
          {mode === 'hybrid' && (
            <>
              <label>Fusion
                <select name="fusion" value={fusion} onChange={(e) => setFusion(e.currentTarget.value as 'rrf' | 'linear')}>
                  <option value="rrf">rrf</option><option value="linear">linear</option>
                </select>
              </label>
              <label>BM25 weight<input name="bm25-weight" type="number" min="0" max="1" step="0.05" value={bm25Weight} onInput={(e) => setBm25Weight(e.currentTarget.value)} /></label>
              <label>Vector weight<input name="vector-weight" type="number" min="0" max="1" step="0.05" value={vectorWeight} onInput={(e) => setVectorWeight(e.currentTarget.value)} /></label>
            </>
          )}
          {(mode === 'vector' || mode === 'similar') && (
            <label>Metadata filter (JSON)<input name="filter" placeholder='{"lang": "en"}' value={filter} onInput={(e) => setFilter(e.currentTarget.value)} /></label>
          )}
          <label>k<input name="k" type="number" min="1" max="1000" value={k} onInput={(e) => setK(e.currentTarget.value)} /></label>
          {mode !== 'bm25' && <label>ef<input name="ef" type="number" min="1" max="4096" placeholder="default" value={ef} onInput={(e) => setEf(e.currentTarget.value)} /></label>}
          <button type="submit" disabled={busy}>Search</button>
        </div>
      </form>
      {error !== null && <ErrorBox message={error} />}
      {result !== null && (
        <>
          <p class="muted" aria-label="Search latency">
            {result.hits.length} results in {result.latencyMs.toFixed(1)} ms
            {(result.mode === 'bm25' || result.mode === 'hybrid') && ' (keyword and hybrid answers carry ids and scores only, by the API spec: no text or metadata)'}
          </p>
          <VirtualTable
            label="Search results"
            items={result.hits}
            rowPx={RESULT_ROW_PX}
            heightPx={RESULTS_HEIGHT_PX}
            head={['id', 'score', 'text', 'metadata', 'bm25 / vector score']}
            row={(h, i) => ({
              key: `${i}:${h.id}`,
              cells: [
                <span class="hit-id">{h.id}</span>,
                h.score.toFixed(4),
                <span title={h.text ?? ''}>{h.text ?? ''}</span>,
                <code>{h.metadata === undefined ? '' : JSON.stringify(h.metadata)}</code>,
                h.bm25_score === undefined ? '' : `${formatScore(h.bm25_score)} / ${formatScore(h.vector_score ?? null)}`,
              ],
            })}
          />
        </>
      )}
    </section>
  );
}

function CollectionDetail({ name }: { name: string }) {
  const [info] = usePoll(() => api<Record<string, unknown>>('GET', `${BASE}/${enc(name)}`), [name]);
  return (
    <>
      <h2>Collection {name}</h2>
      <Loaded load={info}>
        {(i) => <p class="muted">{String(i.count)} documents, {String(i.dimensions)} dimensions, metric {String(i.metric)}, BM25 {String(i.bm25_backend)}</p>}
      </Loaded>
      <DocumentBrowser collection={name} />
      <SearchPlayground collection={name} />
    </>
  );
}

function CollectionTable({ collections, selected, onSelect, reload }: { collections: CollectionList; selected: string | null; onSelect: (name: string | null) => void; reload: () => void }) {
  const entries = Object.entries(collections);
  const [view, setPage] = usePaged(entries);
  if (entries.length === 0) return <p class="muted">No collections yet.</p>;
  return (
    <>
      <table aria-label="Collections">
        <thead><tr><th>name</th><th>dimensions</th><th>shards</th><th>replication</th><th></th></tr></thead>
        <tbody>
          {view.rows.map(([name, c]) => (
            <tr key={name}>
              <td><button type="button" onClick={() => onSelect(name)} aria-pressed={selected === name}>{name}</button></td>
              <td>{c.dimension ?? c.dimensions}</td>
              <td>{c.shards}</td>
              <td>{c.replication_factor}</td>
              <td><DeleteButton name={name} onDeleted={() => { if (selected === name) onSelect(null); reload(); }} /></td>
            </tr>
          ))}
        </tbody>
      </table>
      <Pager view={view} total={entries.length} onPage={setPage} label="Collections" />
    </>
  );
}

export function CollectionsPage() {
  const [list, reload] = usePoll(() => api<CollectionList>('GET', BASE), []);
  const [selected, setSelected] = useState<string | null>(null);
  return (
    <>
      <OpenApiNote />
      <CreateCollection onCreated={reload} />
      <Loaded load={list}>
        {(collections) => <CollectionTable collections={collections} selected={selected} onSelect={setSelected} reload={reload} />}
      </Loaded>
      {selected !== null && <CollectionDetail key={selected} name={selected} />}
    </>
  );
}
