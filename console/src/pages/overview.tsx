import { useEffect, useState } from 'preact/hooks';
import { api, describeError, headers } from '../api.js';
import { usePoll } from '../hooks.js';
import { type HttpTotals, type RatePoint, parseHttpTotals, ratePoint } from '../metrics.js';
import { Sparkline } from '../sparkline.js';
import { ErrorBox, Loaded, StatusDot } from '../ui.js';

const HEALTH_POLL_MS = 5_000;
const METRICS_POLL_MS = 3_000;
const SPARK_POINTS_MAX = 60;

interface HealthBody {
  status: string;
  node: string;
  version: string;
  uptime_s: number;
  problems: string[];
  [part: string]: unknown;
}

function formatBytes(bytes: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return `${value.toFixed(unit === 0 ? 0 : 1)} ${units[unit]}`;
}

function StorageCard({ storage }: { storage: unknown }) {
  const s = storage as { table_files?: number; table_bytes?: number; wal_bytes?: number; open_files_limit?: number | null } | undefined;
  if (s === undefined || s.table_files === undefined) return null;
  return (
    <div class="card" aria-label="Storage sizes">
      Storage: {s.table_files} table files, {formatBytes(s.table_bytes ?? 0)}; WAL {formatBytes(s.wal_bytes ?? 0)}
      {typeof s.open_files_limit === 'number' ? `; open-files limit ${s.open_files_limit}` : ''}
    </div>
  );
}

function formatUptime(seconds: number): string {
  const h = Math.floor(seconds / 3600);
  const m = Math.floor((seconds % 3600) / 60);
  return `${h} h ${m} min ${seconds % 60} s`;
}

/** /health answers 503 with the same body when failing; read it either way. */
async function fetchHealth(): Promise<HealthBody> {
  const res = await fetch('/health', { headers: headers({ accept: 'application/json' }) });
  return (await res.json()) as HealthBody;
}

function useHttpRates(): [RatePoint[], string | null] {
  const [points, setPoints] = useState<RatePoint[]>([]);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    let prev: HttpTotals | undefined;
    const sample = async () => {
      try {
        const totals = parseHttpTotals(await api<string>('GET', '/metrics'), Date.now());
        if (prev !== undefined) {
          const point = ratePoint(prev, totals);
          setPoints((ps) => [...ps, point].slice(-SPARK_POINTS_MAX));
        }
        prev = totals;
        setError(null);
      } catch (err) {
        setError(describeError(err));
      }
    };
    void sample();
    const timer = setInterval(sample, METRICS_POLL_MS);
    return () => clearInterval(timer);
  }, []);
  return [points, error];
}

export function OverviewPage() {
  const [health] = usePoll(fetchHealth, [], HEALTH_POLL_MS);
  const [points, metricsError] = useHttpRates();
  const xs = points.map((p) => p.atS);
  return (
    <>
      <Loaded load={health}>
        {(h) => (
          <>
            <div class="cards">
              <div class="card">
                <StatusDot status={h.status} label={`node ${h.status}`} /> Node <strong>{h.node}</strong>: {h.status}
              </div>
              <div class="card">Version {h.version}</div>
              <div class="card">Uptime {formatUptime(h.uptime_s)}</div>
              <StorageCard storage={h.storage} />
            </div>
            <h2>Health checks</h2>
            <ul aria-label="Health checks">
              {Object.entries(h)
                .filter(([, v]) => typeof v === 'object' && v !== null && 'status' in v)
                .map(([name, v]) => {
                  const part = v as { status: string; problems?: string[] };
                  return (
                    <li>
                      <StatusDot status={part.status} label={`${name} ${part.status}`} /> {name}: {part.status}
                      {(part.problems ?? []).length > 0 && <span class="muted"> — {part.problems!.join('; ')}</span>}
                    </li>
                  );
                })}
            </ul>
          </>
        )}
      </Loaded>
      <h2>HTTP traffic</h2>
      {metricsError !== null && <ErrorBox message={metricsError} />}
      <div class="cards">
        <Sparkline label="Requests" unit="req/s" xs={xs} ys={points.map((p) => p.requestsPerS)} />
        <Sparkline label="Mean latency" unit="ms" xs={xs} ys={points.map((p) => p.meanLatencyMs)} />
      </div>
    </>
  );
}
