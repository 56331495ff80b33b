// Builds the gateway for node.ts: its store over the node's RocksDB, the engine, the fastify
// feature and its part of /health. node.ts decides where it listens (same server or its own).
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import type { Config } from '../config.js';
import { type Backoff, jitteredDelayMs } from '../core/backoff.js';
import { mathRand } from '../core/rand.js';
import type { Clock } from '../core/hlc.js';
import type { HealthCheck, HealthReport } from '../core/health.js';
import type { Store } from '../storage/db.js';
import { Gateway, type RecountNotice } from './gateway.js';
import { type GatewayMetrics, gatewayMetrics } from './metrics.js';
import { RocksGatewayStore } from './rocks-store.js';
import type { GatewayStore } from './store.js';
import type { GatewayVectors, V1Bounds } from './vectors.js';

export interface OpenedGateway {
  gateway: Gateway;
  /** What the routes (`http/routes/gateway.ts`) need besides the gateway. */
  bounds: V1Bounds | undefined;
  metrics: GatewayMetrics;
  check: HealthCheck;
  /** Stops the background recount of a cluster node. */
  close(): Promise<void>;
}

export async function openGateway(deps: {
  config: Config['gateway'];
  store: Store;
  clock: Clock;
  log: Logger;
  /** The node's metrics registry: the gateway adds its own metrics to it. */
  registry: Registry;
  /** The vector engine with its bounds; undefined: admin routes only, no /v1. */
  vectors: { engine: GatewayVectors; bounds: V1Bounds } | undefined;
  /** Cluster mode: tenants, keys and tenant collections through the metadata group. */
  clusterStore?(): GatewayStore;
  rpmShare?: () => number;
}): Promise<OpenedGateway> {
  const { config, log } = deps;
  if (config.masterKey === undefined) throw new Error('the gateway needs a master key (config validation lets none through)');
  if (config.systemDbPath !== undefined) {
    log.warn({ systemDbPath: config.systemDbPath }, 'SERVICE_GATEWAY_SYSTEM_DB_PATH is ignored: gateway state lives in the node RocksDB (system column family)');
  }
  const local = await RocksGatewayStore.load(deps.store);
  const store: GatewayStore = deps.clusterStore?.() ?? local;
  // A cluster's tenants are the metadata group's: those this node made while standalone stay
  // in its own store, unseen, and their keys are refused. Said at every start and in /health
  // until the cluster has a tenant of each id (recreated by an operator, with new keys).
  const standaloneTenants = deps.clusterStore === undefined ? [] : local.tenants().map((t) => t.tenant_id);
  const notServed = () => {
    const served = new Set(store.tenants().map((t) => t.tenant_id));
    return standaloneTenants.filter((id) => !served.has(id));
  };
  if (standaloneTenants.length > 0) {
    log.warn(
      { tenants: standaloneTenants.slice(0, 20), count: standaloneTenants.length },
      `gateway: ${standaloneTenants.length} tenant(s) made while this node was standalone are not served in cluster mode (a cluster's tenants live in its metadata): create them again through /admin/tenants, with new keys, and move their collections`,
    );
  }
  const gateway = new Gateway({
    store,
    vectors: deps.vectors?.engine,
    clock: deps.clock,
    masterKey: config.masterKey,
    embedderUrls: config.embedderUrls,
    rpmShare: deps.rpmShare,
    defaults: {
      rpm_limit: config.defaultRpm,
      max_vectors: config.maxVectors,
      max_collections: config.maxCollections,
      max_storage_mb: config.maxStorageMb,
    },
  });
  // On a cluster the records and the collections are both in the metadata log, and a pass
  // needs a quorum to write: it runs in the background once the node is a member (`recountInCluster`).
  const countingBytes = (c: RecountNotice) =>
    log.info(c, "gateway: a collection's count is off (a write's usage was lost, as by a crash): taking it from the engine and counting its stored bytes again from its documents");
  const fixed = deps.clusterStore === undefined ? await gateway.reconcile(countingBytes) : { dropped: 0, recounted: 0, unclaimed: [] };
  if (fixed.dropped + fixed.recounted > 0) log.warn({ dropped: fixed.dropped, recounted: fixed.recounted }, 'gateway registry reconciled with the vector engine');
  if (fixed.unclaimed.length > 0) log.warn({ collections: fixed.unclaimed }, 'vector collections named like tenant collections have no gateway record');
  if (deps.vectors === undefined) log.warn('gateway: no vector engine on this node, so only /admin routes are served (no /v1)');
  const stop = new AbortController();
  const recounting = deps.clusterStore === undefined || deps.vectors === undefined ? Promise.resolve() : recountInCluster(gateway, log, stop.signal);
  return {
    gateway,
    bounds: deps.vectors?.bounds,
    metrics: gatewayMetrics(deps.registry, gateway),
    check: (viewer) => {
      const report: HealthReport = { status: 'ok', tenants: store.tenants().length, v1: deps.vectors !== undefined };
      if (standaloneTenants.length === 0) return report;
      const ids = notServed();
      return { ...report, standalone_tenants_not_served: viewer.admin ? ids : ids.length };
    },
    close: async () => {
      stop.abort();
      await recounting;
    },
  };
}

/** Between two passes of a cluster's recount: from a second, doubling, up to half a minute. */
const RECOUNT_RETRY: Backoff = { baseMs: 1_000, capMs: 30_000 };
/** Passes before the recount gives up until the next start (about half an hour). */
const RECOUNT_PASSES_MAX = 64;

/**
 * A cluster node's start-up recount (`Gateway.recountUsage`), pass after pass until every
 * tenant collection was counted: the first passes usually find the node still joining, or a
 * shard without a leader yet.
 */
async function recountInCluster(gateway: Gateway, log: Logger, signal: AbortSignal): Promise<void> {
  let recounted = 0;
  for (let pass = 1; pass <= RECOUNT_PASSES_MAX && !signal.aborted; pass++) {
    let unsettled: number | string;
    try {
      const r = await gateway.recountUsage(signal);
      recounted += r.recounted;
      unsettled = r.unsettled;
    } catch (err) {
      unsettled = err instanceof Error ? err.message : String(err);
    }
    if (unsettled === 0) {
      if (recounted > 0) log.warn({ recounted }, 'gateway usage recounted from the vector engine (a write\'s usage was lost, as by a crash)');
      return;
    }
    if (pass % 8 === 0) log.info({ pass, unsettled }, 'gateway usage recount: not every tenant collection could be counted yet; trying again');
    try {
      await sleep(jitteredDelayMs(pass, RECOUNT_RETRY, mathRand), undefined, { signal });
    } catch {
      return; // closing
    }
  }
  if (!signal.aborted) log.warn({ recounted }, 'gateway usage recount gave up until the next start: some tenant collections could not be counted');
}

