import { useState } from 'preact/hooks';
import { ApiError, api, describeError, enc, storeMasterKey, storedMasterKey } from '../api.js';
import { usePoll } from '../hooks.js';
import { type TenantLimits, type TenantUsage, quotaBars } from '../quota.js';
import { ConfirmButton, ErrorBox, Loaded, Pager, ProgressBar, usePaged } from '../ui.js';

const GATEWAY_POLL_MS = 5_000;

interface Tenant {
  tenant_id: string;
  limits: TenantLimits;
  created_at: number;
}

interface KeyView {
  key_id: string;
  key_prefix: string;
  rpm_limit: number | null;
  created_at: number;
}

type Gw = <T>(method: string, path: string, body?: unknown) => Promise<T>;

function formatTime(ms: number): string {
  return new Date(ms).toISOString().replace('T', ' ').slice(0, 19);
}

/** /health has a `gateway` part exactly when the gateway is on. */
async function gatewayEnabled(): Promise<boolean> {
  const res = await fetch('/health', { headers: { accept: 'application/json' } });
  return (await res.json() as { gateway?: unknown }).gateway !== undefined;
}

function MasterKeyForm({ refusal, onKey }: { refusal: string | null; onKey: (key: string) => void }) {
  const [key, setKey] = useState('');
  return (
    <>
      <form class="row" aria-label="Gateway admin access" onSubmit={(e) => { e.preventDefault(); onKey(key.trim()); }}>
        <label for="master-key">Gateway master key
          <input id="master-key" name="master-key" type="password" autocomplete="off" required value={key} onInput={(e) => setKey(e.currentTarget.value)} />
        </label>
        <button type="submit">Use master key</button>
      </form>
      <p class="muted">The admin routes (<code>/admin/tenants…</code>) take <code>SERVICE_GATEWAY_MASTER_KEY</code> in <code>X-Api-Key</code>. It stays in this tab's sessionStorage, like the API key.</p>
      {refusal !== null && <ErrorBox message={refusal} />}
    </>
  );
}

/** A secret the node shows once (a new tenant's or key's api_key). */
function ShownOnce({ secret, onDone }: { secret: string; onDone: () => void }) {
  return (
    <p class="note" role="status">
      New key, shown only now: <span class="secret">{secret}</span>{' '}
      <button type="button" onClick={onDone}>Done</button>
    </p>
  );
}

function CreateTenant({ gw, onCreated }: { gw: Gw; onCreated: () => void }) {
  const [id, setId] = useState('');
  const [limits, setLimits] = useState<Record<string, string>>({ rpm_limit: '', max_vectors: '', max_collections: '', max_storage_mb: '' });
  const [secret, setSecret] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  const submit = async (event: Event) => {
    event.preventDefault();
    setError(null);
    const body: Record<string, unknown> = { tenant_id: id };
    // Omitted limits take the node's defaults.
    for (const [name, value] of Object.entries(limits)) if (value !== '') body[name] = Number(value);
    try {
      const created = await gw<{ api_key: string }>('POST', '/admin/tenants', body);
      setSecret(created.api_key);
      setId('');
      onCreated();
    } catch (err) {
      setError(describeError(err));
    }
  };
  const field = (name: string, label: string) => (
    <label>{label}<input name={name} type="number" min="0" placeholder="default" value={limits[name]} onInput={(e) => setLimits({ ...limits, [name]: e.currentTarget.value })} /></label>
  );
  return (
    <>
      <form class="row" aria-label="Create a tenant" onSubmit={submit}>
        <label>Tenant id<input name="tenant-id" required value={id} onInput={(e) => setId(e.currentTarget.value)} /></label>
        {field('rpm_limit', 'Requests / min')}
        {field('max_vectors', 'Max vectors')}
        {field('max_collections', 'Max collections')}
        {field('max_storage_mb', 'Max storage (MB)')}
        <button type="submit">Create tenant</button>
      </form>
      {error !== null && <ErrorBox message={error} />}
      {secret !== null && <ShownOnce secret={secret} onDone={() => setSecret(null)} />}
    </>
  );
}

function UsageBars({ gw, tenant }: { gw: Gw; tenant: string }) {
  const [usage] = usePoll(() => gw<{ usage: TenantUsage; limits: TenantLimits }>('GET', `/admin/tenants/${enc(tenant)}/usage`), [tenant], GATEWAY_POLL_MS);
  return (
    <Loaded load={usage}>
      {({ usage: u, limits }) => (
        <div class="bars" aria-label={`Usage of ${tenant}`} role="group">
          {quotaBars(u, limits).map((b) => (
            <div class="row">
              <span class="bar-label">{b.label}</span>
              <ProgressBar label={`${b.label} used by ${tenant}`} fraction={b.fraction} text={b.text} tone={b.tone} />
            </div>
          ))}
          <p class="muted">Rate limit: {limits.rpm_limit} requests per minute per node (token bucket; not a stored counter, so no bar).</p>
        </div>
      )}
    </Loaded>
  );
}

function Keys({ gw, tenant }: { gw: Gw; tenant: string }) {
  const [keys, reload] = usePoll(async () => (await gw<{ keys: KeyView[] }>('GET', `/admin/tenants/${enc(tenant)}/keys`)).keys, [tenant], GATEWAY_POLL_MS);
  const [secret, setSecret] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  const create = async () => {
    setError(null);
    try {
      setSecret((await gw<{ api_key: string }>('POST', `/admin/tenants/${enc(tenant)}/keys`, {})).api_key);
      reload();
    } catch (err) {
      setError(describeError(err));
    }
  };
  return (
    <section aria-label={`Keys of ${tenant}`}>
      <h3>Keys</h3>
      <Loaded load={keys}>{(list) => <KeyTable keys={list} gw={gw} tenant={tenant} reload={reload} />}</Loaded>
      <button type="button" onClick={create}>Create key</button>
      {error !== null && <ErrorBox message={error} />}
      {secret !== null && <ShownOnce secret={secret} onDone={() => setSecret(null)} />}
    </section>
  );
}

function KeyTable({ keys, gw, tenant, reload }: { keys: KeyView[]; gw: Gw; tenant: string; reload: () => void }) {
  const [view, setPage] = usePaged(keys);
  if (keys.length === 0) return <p class="muted">No keys: the tenant cannot call /v1.</p>;
  return (
    <>
      <table aria-label={`Keys of ${tenant}`}>
        <thead><tr><th>key id</th><th>prefix</th><th>own rate limit</th><th>created</th><th></th></tr></thead>
        <tbody>
          {view.rows.map((k) => (
            <tr key={k.key_id} data-key={k.key_id}>
              <td><code>{k.key_id}</code></td>
              <td><code>{k.key_prefix}…</code></td>
              <td>{k.rpm_limit === null ? 'the tenant’s' : `${k.rpm_limit} / min`}</td>
              <td>{formatTime(k.created_at)}</td>
              <td>
                <ConfirmButton label="Revoke" ariaLabel={`Revoke key ${k.key_prefix}`} question={`Revoke ${k.key_prefix}…? It stops working at once.`} confirmLabel="Yes, revoke" danger
                  onConfirm={() => gw('DELETE', `/admin/tenants/${enc(tenant)}/keys/${enc(k.key_id)}`)} onDone={reload} />
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      <Pager view={view} total={keys.length} onPage={setPage} label={`Keys of ${tenant}`} />
    </>
  );
}

function TenantDetail({ gw, tenant, onDeleted }: { gw: Gw; tenant: string; onDeleted: () => void }) {
  return (
    <section aria-label={`Tenant ${tenant}`}>
      <h2>Tenant {tenant}</h2>
      <UsageBars gw={gw} tenant={tenant} />
      <Keys gw={gw} tenant={tenant} />
      <h3>Delete</h3>
      <ConfirmButton label="Delete tenant" ariaLabel={`Delete tenant ${tenant}`} question={`Delete ${tenant}, revoke its keys and delete its collections?`} confirmLabel="Yes, delete" danger
        onConfirm={() => gw('DELETE', `/admin/tenants/${enc(tenant)}`)} onDone={onDeleted} />
    </section>
  );
}

function TenantTable({ tenants, selected, onSelect }: { tenants: Tenant[]; selected: string | null; onSelect: (id: string) => void }) {
  const [view, setPage] = usePaged(tenants);
  if (tenants.length === 0) return <p class="muted">No tenants yet.</p>;
  return (
    <>
      <table aria-label="Tenants">
        <thead><tr><th>tenant</th><th>requests / min</th><th>max vectors</th><th>max collections</th><th>max storage</th><th>created</th></tr></thead>
        <tbody>
          {view.rows.map((t) => (
            <tr key={t.tenant_id} data-tenant={t.tenant_id}>
              <td><button type="button" aria-pressed={selected === t.tenant_id} onClick={() => onSelect(t.tenant_id)}>{t.tenant_id}</button></td>
              <td>{t.limits.rpm_limit}</td>
              <td>{t.limits.max_vectors}</td>
              <td>{t.limits.max_collections}</td>
              <td>{t.limits.max_storage_mb} MB</td>
              <td>{formatTime(t.created_at)}</td>
            </tr>
          ))}
        </tbody>
      </table>
      <Pager view={view} total={tenants.length} onPage={setPage} label="Tenants" />
    </>
  );
}

function GatewayAdmin() {
  const [masterKey, setMasterKey] = useState<string | null>(storedMasterKey());
  const [refusal, setRefusal] = useState<string | null>(null);
  const [selected, setSelected] = useState<string | null>(null);
  const forget = (why: string | null) => {
    storeMasterKey(null);
    setMasterKey(null);
    setRefusal(why);
  };
  const gw: Gw = <T,>(method: string, path: string, body?: unknown) =>
    api<T>(method, path, body, { auth: { kind: 'gateway-master', key: masterKey ?? '' } }).catch((err: unknown) => {
      if (err instanceof ApiError && err.status === 401) forget(err.describe());
      throw err;
    });
  const [tenants, reload] = usePoll(async () => {
    if (masterKey === null) return [];
    try {
      return (await gw<{ tenants: Tenant[] }>('GET', '/admin/tenants')).tenants;
    } catch (err) {
      // The gateway answers /admin only where it listens: its own port when SERVICE_GATEWAY_PORT differs.
      if (err instanceof ApiError && err.status === 404) throw new Error('The gateway is on, but its admin routes are not served on this port: it listens on its own SERVICE_GATEWAY_PORT, which serves this console too.');
      throw err;
    }
  }, [masterKey], GATEWAY_POLL_MS);
  if (masterKey === null) {
    return <MasterKeyForm refusal={refusal} onKey={(key) => { storeMasterKey(key); setRefusal(null); setMasterKey(key); }} />;
  }
  return (
    <>
      <div class="row">
        <span class="muted">Using the master key kept in this tab.</span>
        <button type="button" onClick={() => forget(null)}>Forget master key</button>
      </div>
      <CreateTenant gw={gw} onCreated={reload} />
      <Loaded load={tenants}>
        {(list) => (
          <>
            <TenantTable tenants={list} selected={selected} onSelect={setSelected} />
            {selected !== null && list.some((t) => t.tenant_id === selected) && (
              <TenantDetail key={selected} gw={gw} tenant={selected} onDeleted={() => { setSelected(null); reload(); }} />
            )}
          </>
        )}
      </Loaded>
    </>
  );
}

export function GatewayPage() {
  const [enabled] = usePoll(gatewayEnabled, []);
  return (
    <Loaded load={enabled}>
      {(on) =>
        on ? (
          <GatewayAdmin />
        ) : (
          <p>The gateway is off on this node (<code>SERVICE_GATEWAY_ENABLED=false</code>): there are no tenants, keys or quotas to show.</p>
        )
      }
    </Loaded>
  );
}
