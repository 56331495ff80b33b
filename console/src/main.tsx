// The console shell: sign-in, navigation by URL hash (#/overview …), one page at a time.
import 'uplot/dist/uPlot.min.css';
import './style.css';
import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { ApiError, api, describeError, storeKey, storeMasterKey, storedKey } from './api.js';
import { ClusterPage } from './pages/cluster.js';
import { CollectionsPage } from './pages/collections.js';
import { DatabasesPage } from './pages/databases.js';
import { GatewayPage } from './pages/gateway.js';
import { OverviewPage } from './pages/overview.js';
import { ReplicationPage } from './pages/replication.js';
import { ErrorBox } from './ui.js';

const PAGES = [
  { id: 'overview', title: 'Overview', view: OverviewPage },
  { id: 'cluster', title: 'Cluster', view: ClusterPage },
  { id: 'collections', title: 'Collections', view: CollectionsPage },
  { id: 'databases', title: 'Databases', view: DatabasesPage },
  { id: 'replication', title: 'Replication', view: ReplicationPage },
  { id: 'gateway', title: 'Gateway', view: GatewayPage },
] as const;
type PageId = (typeof PAGES)[number]['id'];

function pageFromHash(): PageId {
  const id = location.hash.replace(/^#\/?/, '').split('/', 1)[0];
  return PAGES.find((p) => p.id === id)?.id ?? 'overview';
}

function SignIn({ onSignedIn }: { onSignedIn: () => void }) {
  const [key, setKey] = useState('');
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const submit = async (event: Event) => {
    event.preventDefault();
    setBusy(true);
    setError(null);
    storeKey(key.trim());
    try {
      // The cheapest protected read every valid key may make: 401 means refused.
      await api('GET', '/_replications');
      onSignedIn();
    } catch (err) {
      if (err instanceof ApiError && err.status !== 401) onSignedIn();
      else {
        storeKey(null);
        setError(describeError(err));
      }
    } finally {
      setBusy(false);
    }
  };
  return (
    <main class="signin">
      <h1>Firkin console</h1>
      <form onSubmit={submit} aria-label="Sign in">
        <label for="api-key">API key</label>
        <input id="api-key" name="api-key" type="password" autocomplete="off" required value={key} onInput={(e) => setKey(e.currentTarget.value)} placeholder="fk_…" />
        <button type="submit" disabled={busy}>
          Sign in
        </button>
        <p class="muted">The key stays in this tab's sessionStorage and is sent as <code>Authorization: Bearer</code>.</p>
      </form>
      {error !== null && <ErrorBox message={error} />}
    </main>
  );
}

function App() {
  const [signedIn, setSignedIn] = useState(storedKey() !== null);
  const [page, setPage] = useState<PageId>(pageFromHash());
  useEffect(() => {
    const onHash = () => setPage(pageFromHash());
    addEventListener('hashchange', onHash);
    return () => removeEventListener('hashchange', onHash);
  }, []);
  if (!signedIn) return <SignIn onSignedIn={() => setSignedIn(true)} />;
  const current = PAGES.find((p) => p.id === page) ?? PAGES[0];
  const View = current.view;
  return (
    <>
      <header>
        <strong>Firkin</strong>
        <nav aria-label="Pages">
          {PAGES.map((p) => (
            <a href={`#/${p.id}`} aria-current={p.id === page ? 'page' : undefined}>
              {p.title}
            </a>
          ))}
        </nav>
        <button
          type="button"
          onClick={() => {
            storeKey(null);
            storeMasterKey(null);
            setSignedIn(false);
          }}
        >
          Sign out
        </button>
      </header>
      <main aria-label={current.title}>
        <h1>{current.title}</h1>
        <View />
      </main>
    </>
  );
}

render(<App />, document.getElementById('app')!);
