// Composition root: the only module that builds engines and wires them together.
import { randomBytes } from 'node:crypto';
import { chmod, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import pino, { type Logger } from 'pino';
import { ApiKeys } from './auth/api-keys.js';
import { ClusterMember, clusterDataOf } from './cluster/member.js';
import { FirkinError } from './core/errors.js';
import { MetaGatewayStore } from './cluster/gateway-store.js';
import { mathRand } from './core/rand.js';
import { clusterAdminRoutes } from './http/routes/cluster.js';
import { type Config, advertisedHttpUrl } from './config.js';
import { type Clock, HybridClock, systemClock } from './core/hlc.js';
import { DocEngine } from './docdb/engine.js';
import { ValueCounts } from './docdb/query/counts.js';
import { registerReplicationMetrics } from './docdb/replication/metrics.js';
import { ReplicationManager } from './docdb/replication/manager.js';
import { PolicyManager } from './docdb/replication/policies.js';
import { REPLICATION_DEFAULTS } from './docdb/replication/replicator.js';
import { VdbEngine } from './docdb/vdb/engine.js';
import { localFirstVdbs } from './docdb/vdb/local-first.js';
import type { VdbService } from './docdb/vdb/service.js';
import { ImportTasks } from './docdb/vdb/import-tasks.js';
import { Federations } from './docdb/federation/federation.js';
import { Tiers, creationIndexer } from './docdb/tier/tiers.js';
import { type OpenedGateway, openGateway } from './gateway/open.js';
import { gatewayFeature } from './http/routes/gateway.js';
import { EngineGatewayVectors, engineBounds } from './gateway/vector-adapter.js';
import { type Listener, listen } from './http/listener.js';
import type { RouteInfo } from './http/not-found.js';
import { docdbRoutes } from './http/routes/docdb.js';
import { docdbQueryRoutes } from './http/routes/docdb-query.js';
import { vdbRoutes } from './http/routes/vdb.js';
import { vdbAttachmentRoutes } from './http/routes/vdb-attachments.js';
import { federationRoutes } from './http/routes/federation.js';
import { tierRoutes } from './http/routes/tier.js';
import { docdbAttachmentRoutes } from './http/routes/docdb-attachments.js';
import { docdbChangesRoutes } from './http/routes/docdb-changes.js';
import { replicationRoutes } from './http/routes/replication.js';
import { activeTasksRoutes, nodeTasks } from './http/routes/active-tasks.js';
import { PeerTasks } from './cluster/peer-tasks.js';
import { replicationPolicyRoutes } from './http/routes/replication-policies.js';
import { replicationProtocolRoutes } from './http/routes/replication-protocol.js';
import { type HealthCheck, mergeHealth } from './core/health.js';
import { vectorRoutes } from './http/routes/vector.js';
import { buildHttp } from './http/server.js';
import { createMetrics, registerCacheMetrics } from './metrics.js';
import { Store, type StoreFiles, type WriteFailure } from './storage/db.js';
import { descriptorsProblem } from './storage/descriptors.js';
import { VERSION } from './version.js';
import { usearchEngine } from './vector/ann/usearch.js';
import { type VectorCluster, standaloneCluster } from './vector/cluster.js';
import { VectorEngine } from './vector/engine.js';
import { newShardCaches } from './vector/shard.js';
import type { ClusterCatalogue } from './vector/shard-handle.js';
import { VectorShards } from './cluster/vector-shards.js';
import { DocShards } from './cluster/doc-shards.js';

export interface FirkinNode {
  readonly config: Config;
  /** Base URL of the HTTP listener (undefined when SERVICE_HTTP_ENABLED=false). */
  readonly url: string | undefined;
  readonly port: number | undefined;
  /** Base URL of the gateway (the HTTP listener's when it shares its port; undefined when off). */
  readonly gatewayUrl: string | undefined;
  readonly adminKeyFile: string | undefined;
  /** Every HTTP route (method + pattern): the route fuzzer walks this list. */
  readonly routes: readonly RouteInfo[];
  close(): Promise<void>;
}

export interface NodeOptions {
  clock?: Clock;
  log?: Logger;
  /** The node cannot go on (it could not join its cluster). Default: log and exit(1). */
  onFatal?(message: string): void;
  /** The version this node records in its cluster (default: the package's): tests of a mixed cluster. */
  version?: string;
  /** The cluster protocol it records (default: this build's PROTOCOL): tests of a mixed cluster. */
  protocol?: number;
}

export function createLogger(config: Config): Logger {
  return pino({ level: config.logLevel, base: { node: config.nodeName } });
}

/** First start: make sure an admin key exists; say where it is without repeating it later. */
async function bootstrapAdminKey(keys: ApiKeys, config: Config, clock: Clock, log: Logger): Promise<string | undefined> {
  const file = path.join(config.dataDir, 'admin.key');
  if (config.auth.adminKey !== undefined) {
    if ((await keys.verify(config.auth.adminKey)) === undefined) {
      await keys.create({ key: config.auth.adminKey, permissions: ['admin'], databases: 'all', label: 'SERVICE_ADMIN_KEY', nowMs: clock.nowMs() });
    }
    return undefined;
  }
  if (keys.hasAdmin()) return file;
  const { key } = await keys.create({ permissions: ['admin'], databases: 'all', label: 'bootstrap admin', nowMs: clock.nowMs() });
  await writeFile(file, `${key}\n`, { mode: 0o600 });
  await chmod(file, 0o600);
  log.info({ adminKeyFile: file }, `generated admin API key (shown once): ${key}`);
  return file;
}

/** `host:port` of each URL (unparseable entries are skipped: config validated them). */
/** A collection change in cluster mode before the node has joined its cluster. */
/** FIRKIN_TEST_RESHARD_SWITCH_DELAY_MS: a test widens the reshard's switch to kill its coordinator inside it. */
function testReshardSwitchDelay(): number | undefined {
  const raw = process.env.FIRKIN_TEST_RESHARD_SWITCH_DELAY_MS;
  return raw === undefined ? undefined : Number(raw);
}

/** FIRKIN_TEST_RESHARD_SWITCH_STALLS: a test makes the first switch attempts run out of time, to see them rolled back. */
function testReshardSwitchStalls(): number | undefined {
  const raw = process.env.FIRKIN_TEST_RESHARD_SWITCH_STALLS;
  return raw === undefined ? undefined : Number(raw);
}

function notClusteredYet(): FirkinError {
  return new FirkinError('unavailable', 'this node has not joined its cluster yet: collections are placed through the cluster; retry shortly');
}

function hostsOf(urls: readonly string[]): string[] {
  return urls.flatMap((u) => {
    try {
      return [new URL(u).host];
    } catch {
      return [];
    }
  });
}

/**
 * The gateway over the metadata group: tenants and keys cluster-wide, rpm shared by the nodes
 * that may be serving: all but `down` ones (a `suspect` node missing a few heartbeats under
 * load, or a `leaving` one, still admits requests; leaving it out would let the others admit
 * more than the limit).
 */
function clusterGateway(member: ClusterMember) {
  return {
    clusterStore: () => new MetaGatewayStore(member),
    rpmShare: () => Math.max(1, member.liveNodes().filter((n) => n.status !== 'down').length),
  };
}

/**
 * A cluster node's data started standalone would show its shard replicas as plain databases,
 * and a write there is in no group's log: the replica would disagree with its group for good.
 */
async function refuseClusterData(store: Store): Promise<void> {
  const owner = await clusterDataOf(store);
  if (owner === undefined) return;
  const node = owner === '' ? 'a cluster node' : `node ${JSON.stringify(owner)}`;
  throw new FirkinError(
    'conflict',
    `the data directory holds the cluster data of ${node}: start it with SERVICE_ENABLE_CLUSTER=true and the cluster's RELEASE_COOKIE (a node that left its cluster starts so too, and serves its own databases), or start a standalone node on an empty data directory`,
  );
}

export async function startNode(config: Config, options: NodeOptions = {}): Promise<FirkinNode> {
  const clock = options.clock ?? systemClock;
  const log = options.log ?? createLogger(config);
  const startedAtMs = clock.nowMs();
  const store = await Store.open(config.dataDir, { writeWorker: config.storage.writeWorker, cacheMb: config.storage.cacheMb });
  const closers: (() => Promise<void>)[] = [() => store.close()];
  try {
    if (!config.cluster.enabled) await refuseClusterData(store);
    /** Ids for documents written without one. */
    const newId = () => randomBytes(16).toString('hex');
    const hlc = new HybridClock(clock, { maxOffsetMs: config.docdb.hlcMaxOffsetMs });
    const metrics = createMetrics(store);
    // One memory bound per cache for all of the node's vector shards, standalone and replicated.
    const shardCaches = newShardCaches();
    const keys = await ApiKeys.load(store);
    const adminKeyFile = await bootstrapAdminKey(keys, config, clock, log);
    if (config.auth.disabled) log.warn('authentication is DISABLED (SERVICE_AUTH_DISABLED=true): every route is open');
    // Not awaited: the listing also primes /health's, and start need not wait for it.
    void storeFiles(store).then(({ descriptors }) => {
      if (descriptors !== undefined) log.warn(descriptors);
    });
    const docs = await DocEngine.open({ store, hlc, log: log.child({ mod: 'docdb' }), clock, revsLimit: config.docdb.revsLimit, compactAfterWrites: config.docdb.compactAfterWrites });
    registerCacheMetrics(metrics.registry, { payloads: shardCaches.payloads, bm25_postings: shardCaches.postings, doc_records: docs.caches.records, doc_bodies: docs.caches.bodies });
    // Before storage closes: refuse new writes and let queued groups commit.
    closers.unshift(() => docs.close());
    // The automatic path index commits in the same batch as every winner change; exact
    // per-value counts follow the committed batches.
    const counts = new ValueCounts(store, docs);
    docs.addIndexer(counts.indexer);
    docs.onCommitted(counts.committed);
    docs.onDrop(counts.dropped);
    const finder = { docs, store, counts };
    // Replication tasks and policies load here but run only once the node listens.
    const replication = await ReplicationManager.open({
      store,
      docs,
      hlc,
      log: log.child({ mod: 'replication' }),
      clock,
      rand: mathRand,
      settings: { ...config.replication, waitMs: REPLICATION_DEFAULTS.waitMs },
    });
    registerReplicationMetrics(metrics.registry, replication);
    const policies = await PolicyManager.open(store, replication, config.replication);
    const vdbs = await VdbEngine.open({
      store,
      counts,
      docs,
      hlc,
      log: log.child({ mod: 'vdb' }),
      nodeName: config.nodeName,
      clock,
      newId,
    });
    // Either VDB service's imports (node-local or the cluster's) run here, inside their request.
    const imports = new ImportTasks(clock);
    const taskSources = { nodeName: config.nodeName, docs, replication, imports };
    docs.addIndexer(creationIndexer);
    const tiers = await Tiers.open({
      store,
      docs,
      clock,
      log: log.child({ mod: 'tier' }),
      newId,
      sweepIntervalMs: config.docdb.tierSweepMs,
    });
    closers.unshift(() => tiers.close());
    const federations = await Federations.open({
      store,
      counts,
      docs,
      hlc,
      log: log.child({ mod: 'federation' }),
      outbound: { allow: config.replication.allow, allowLoopback: config.replication.allowLoopback },
      timeoutMs: config.replication.timeoutMs,
      clock,
    });

    let vectors: VectorEngine | undefined;
    // What a collection created without them takes (the standard API and the gateway alike).
    const collectionDefaults = { replicationFactor: config.cluster.replicationFactor };
    // Cluster mode: collections are the cluster's (replicated shards). The host starts with the
    // member, after HTTP listens; until then the catalogue has nothing and creates are 503.
    let vectorShards: VectorShards | undefined;
    // Cluster mode: VDBs are the cluster's (each shard a Raft group); plain databases stay local.
    let docShards: DocShards | undefined;
    const clusterCatalogue: ClusterCatalogue = {
      get: (name) => vectorShards?.get(name),
      names: () => vectorShards?.names() ?? [],
      catchUp: () => (vectorShards === undefined ? Promise.reject(notClusteredYet()) : vectorShards.catchUp()),
      create: (name, c) => (vectorShards === undefined ? Promise.reject(notClusteredYet()) : vectorShards.create(name, c)),
      delete: (name) => (vectorShards === undefined ? Promise.reject(notClusteredYet()) : vectorShards.delete(name)),
    };
    // The gateway's /v1 needs the engine even when the standard API is off (SERVICE_VECTORDB_ENABLED=false).
    if (config.vectordb.enabled || config.gateway.enabled) {
      vectors = await VectorEngine.open({
        store,
        ann: usearchEngine,
        dataDir: config.dataDir,
        log: log.child({ mod: 'vector' }),
        saveIntervalMs: config.vectordb.indexSaveMs,
        embedderDeps: {
          fetch,
          sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
          openaiApiKey: config.vectordb.openaiApiKey,
          openaiKeyOrigin: config.vectordb.openaiUrl,
          // The gateway's embedder URLs are the operator's choice too: allowed here as well.
          outbound: { allow: [...config.vectordb.embedderAllow, ...hostsOf(config.gateway.embedderUrls)], allowLoopback: config.vectordb.embedderAllowLoopback },
        },
        ...(config.cluster.enabled ? { cluster: clusterCatalogue } : {}),
        caches: shardCaches,
      });
      // Before storage closes: finish writes and save the indexes.
      closers.unshift(() => vectors!.close());
    }

    // Cluster mode: the member starts once HTTP listens (it advertises its URL); until then the
    // vector API's cluster view says `joining`.
    let member: ClusterMember | undefined;
    /** The other members' tasks (`GET /_active_tasks`, import cancels): set once the member starts. */
    let peerTasks: PeerTasks | undefined;
    const standalone = standaloneCluster({ nodeName: config.nodeName, clusterEnabled: config.cluster.enabled });
    const vectorCluster: VectorCluster = !config.cluster.enabled
      ? standalone
      : {
          status: () => member?.status() ?? { ...standalone.status(), state: 'joining', healthy_nodes: [] },
          nodes: () => member?.nodes() ?? [],
          leave: () => (member === undefined ? standalone.leave() : member.leave()),
          reshard: (collection, n) => (member === undefined || vectorShards === undefined ? standalone.reshard(collection, n) : vectorShards.startReshard(collection, n)),
          reshardStatus: async (collection) => (vectorShards === undefined ? standalone.reshardStatus(collection) : vectorShards.reshardStatus(collection)),
          cancelReshard: (collection) => (vectorShards === undefined ? standalone.cancelReshard(collection) : vectorShards.cancelReshard(collection)),
        };

    if (config.cluster.enabled) {
      const cluster = config.cluster;
      const onFatal =
        options.onFatal ??
        ((message: string) => {
          log.fatal(message);
          process.stderr.write(`firkin: ${message}\n`);
          process.exit(1);
        });
      member = await ClusterMember.start({
        store,
        log: log.child({ mod: 'cluster' }),
        clock,
        rand: mathRand,
        registry: metrics.registry,
        nodeName: config.nodeName,
        httpUrl: advertisedHttpUrl(config.http, config.http.port, cluster.grpcAdvertise),
        grpcListen: `${cluster.grpcIp}:${cluster.grpcPort}`,
        grpcAdvertise: cluster.grpcAdvertise,
        zone: cluster.zone,
        version: options.version ?? VERSION,
        ...(options.protocol === undefined ? {} : { protocol: options.protocol }),
        dialMap: cluster.dialMap,
        seeds: cluster.seedNodes,
        bootstrap: cluster.bootstrap,
        cookie: cluster.cookie!,
        maxVoters: cluster.maxVoters,
        timings: cluster,
        onFatal,
      });
      const m = member;
      // The chaos suite's deliberately broken builds (FIRKIN_UNSAFE_FIXTURE), which its checkers
      // must catch, each logged loudly. Never set outside those tests.
      const unsafeFixture = (name: string, what: string): boolean => {
        const on = process.env.FIRKIN_UNSAFE_FIXTURE === name;
        if (on) log.warn(`FIRKIN_UNSAFE_FIXTURE=${name}: ${what} (chaos checker fixture)`);
        return on;
      };
      // Keys made through the API are the cluster's from now on; node-local ones stay valid here.
      // stale-keys: keys checked against a possibly stale copy, revokes acknowledged at commit.
      const staleKeys = unsafeFixture('stale-keys', 'key revocation is deliberately unsafe');
      keys.attachCluster({
        put: (record) => m.propose({ type: 'apikey.put', record }),
        revoke: (id) => (staleKeys ? m.propose({ type: 'apikey.revoke', id }) : m.proposeRevocation({ type: 'apikey.revoke', id })),
        confirmFresh: () => (staleKeys ? Promise.resolve() : m.confirmFresh()),
      });
      keys.clusterChanged(Object.values(m.state.apiKeys));
      m.fsm.listen((state, cmd) => {
        if (cmd === undefined || cmd.type.startsWith('apikey.')) keys.clusterChanged(Object.values(state.apiKeys));
      });
      // stale-reads: vector shard reads and VDB document reads without ReadIndex, from any replica.
      const unsafeStaleReads = unsafeFixture('stale-reads', 'shard reads are deliberately not linearizable');
      // lost-checkpoints: a VDB split or merge leaves `_local` documents behind.
      const unsafeNoLocalCarry = unsafeFixture('lost-checkpoints', 'VDB splits and merges deliberately lose replication checkpoints');
      // feed-skips: a clustered VDB's `_changes` pages leave their last change out.
      const unsafeFeedSkips = unsafeFixture('feed-skips', 'VDB change feeds deliberately skip changes');
      // bm25-kept-deletes: a replica's keyword index keeps deleted documents.
      const unsafeBm25KeepsDeletes = unsafeFixture('bm25-kept-deletes', 'replicated keyword indexes deliberately keep deleted documents');
      if (vectors !== undefined) {
        vectorShards = await VectorShards.start({ member: m, store, ann: usearchEngine, indexDir: vectors.indexDir, log: log.child({ mod: 'vshards' }), rand: mathRand, registry: metrics.registry, unsafeStaleReads, unsafeBm25KeepsDeletes, caches: shardCaches, reshardDocsPerSecond: cluster.reshardDocsPerSec, reshardSwitchTimeoutMs: cluster.reshardSwitchTimeoutMs, reshardSwitchDelayMs: testReshardSwitchDelay(), reshardSwitchStalls: testReshardSwitchStalls(), exitInSnapshotLoad: process.env.FIRKIN_UNSAFE_FIXTURE === 'exit-in-snapshot-load' });
      }
      docShards = await DocShards.start({ member: m, store, docs, counts, hlc, clock, newId, compactAfterWrites: config.docdb.compactAfterWrites, log: log.child({ mod: 'dshards' }), rand: mathRand, registry: metrics.registry, unsafeStaleReads, unsafeNoLocalCarry, unsafeFeedSkips, rebalanceDocsPerSecond: cluster.vdbRebalanceDocsPerSec, switchTimeoutMs: cluster.reshardSwitchTimeoutMs, switchStalls: testReshardSwitchStalls() });
      peerTasks = new PeerTasks(m, { list: () => nodeTasks(taskSources), cancelImports: (vdb) => imports.cancel(vdb) }, log.child({ mod: 'tasks' }));
      const hosted = vectorShards;
      const hostedDocs = docShards;
      // After HTTP stops taking requests (closers run front to back), before storage closes:
      // the shard groups first (they send through the member's transport), then the member.
      closers.splice(closers.length - 1, 0, async () => {
        await hosted?.close();
        await hostedDocs.close();
        await m.close();
      });
      log.info({ grpc: cluster.grpcAdvertise, seeds: cluster.seedNodes, zone: cluster.zone }, `cluster mode: node ${config.nodeName} on gRPC ${cluster.grpcAdvertise}`);
    }
    const checks: Record<string, HealthCheck> = {
      // The data directory is a path on the host: for an admin's eyes only.
      storage: async (viewer) => {
        if (store.state !== 'open') return { status: 'failing', state: store.state, problems: [`RocksDB is ${store.state}`] };
        const failure = store.writeFailure;
        const refused = failure === undefined || viewer.admin ? failure : { ...failure, message: store.withoutDir(failure.message) };
        const { files, descriptors } = await storeFiles(store);
        const problems = [...(refused === undefined ? [] : [writeFailureProblem(refused)]), ...(descriptors === undefined ? [] : [descriptors])];
        return {
          status: refused !== undefined ? 'failing' : descriptors !== undefined ? 'degraded' : 'ok',
          state: store.state,
          ...(viewer.admin ? { dir: store.dir } : {}),
          ...store.stats(),
          ...(files === undefined ? {} : { table_files: files.tableFiles, table_bytes: files.tableBytes, wal_bytes: files.walBytes, open_files_limit: files.openFilesLimit ?? null }),
          ...(refused === undefined ? {} : { write_failure: refused }),
          ...(problems.length === 0 ? {} : { problems }),
        };
      },
      cluster: (viewer) =>
        !config.cluster.enabled
          ? { status: 'ok', state: 'standalone' }
          : (member?.health(viewer) ?? { status: 'degraded', state: 'starting', problems: ['cluster side not started yet'] }),
      ...(docShards === undefined ? {} : { shards: () => ({ ...mergeHealth([vectorShards?.health(), docShards?.health()]), vector: vectorShards?.hosted() ?? 0, vdb: docShards?.hosted() ?? 0 }) }),
      // `collections`/`documents`: this node's standalone ones; `cluster`: the replicated ones.
      ...(vectors === undefined ? {} : { vector: () => ({ status: 'ok', ...vectors!.stats(), ...(vectorShards === undefined ? {} : { cluster: vectorShards.healthStats() }) }) }),
      // Every database's figures for a caller whose key may read it; the count for anyone. The
      // databases users made: shard replicas are their VDBs' (`shards.vdb` counts them).
      docdb: (viewer) => ({
        status: docs.stopping ? 'degraded' : 'ok',
        database_count: docs.userDbs().length,
        databases: docs.userDbs().filter((db) => viewer.mayRead(db)).map((db) => {
          const info = docs.dbInfo(db);
          return { name: db, status: 'ok', doc_count: info.doc_count, doc_del_count: info.doc_del_count, update_seq: info.update_seq, disk_size: info.disk_size, open_feeds: docs.openFeeds(db) };
        }),
      }),
    };

    let gateway: OpenedGateway | undefined;
    if (config.gateway.enabled) {
      gateway = await openGateway({
        config: config.gateway,
        store,
        clock,
        log: log.child({ mod: 'gateway' }),
        registry: metrics.registry,
        vectors: vectors === undefined ? undefined : { engine: new EngineGatewayVectors(vectors, collectionDefaults), bounds: engineBounds },
        ...(member === undefined ? {} : clusterGateway(member)),
      });
      checks.gateway = gateway.check;
      closers.unshift(() => gateway!.close());
    }
    // SERVICE_GATEWAY_PORT equal to the HTTP port: the gateway routes join the main server.
    const gatewayShared = gateway !== undefined && config.http.enabled && config.gateway.port === config.http.port;

    const httpDeps = {
      log,
      clock,
      hlc,
      metrics,
      keys,
      authDisabled: config.auth.disabled,
      bodyLimitBytes: config.http.bodyLimitBytes,
      nodeName: config.nodeName,
      version: VERSION,
      startedAtMs,
      checks,
    };
    checks.replication = (viewer) => replication.health(viewer);
    const replicationFeature = async (app: FastifyInstance) => {
      await app.register(replicationProtocolRoutes, { docs, localDocs: replication.localDocs });
      await app.register(replicationRoutes, { docs, replication });
      await app.register(replicationPolicyRoutes, { policies });
    };
    const docdbFeature = async (app: FastifyInstance) => {
      const locate = (db: string, docId: string) => tiers.locate(db, docId);
      await app.register(docdbRoutes, { docs, hlc, newId, locate });
      await app.register(docdbChangesRoutes, { docs, hlc, heartbeatMs: config.docdb.streamHeartbeatMs });
      await app.register(docdbAttachmentRoutes, { docs, attachmentMaxBytes: config.docdb.attachmentMaxBytes, locate });
      await app.register(docdbQueryRoutes, { finder });
      await app.register(federationRoutes, { federations });
      await app.register(tierRoutes, { tiers, keepAliveMs: config.replication.keepAliveMs });
      let clusterVdbs: VdbService | undefined;
      const vdbService = () => {
        if (!config.cluster.enabled) return vdbs;
        if (docShards === undefined) throw new FirkinError('unavailable', 'this node has not joined its cluster yet: virtual databases are the cluster\'s; retry shortly');
        clusterVdbs ??= localFirstVdbs(vdbs, docShards);
        return clusterVdbs;
      };
      await app.register(vdbRoutes, {
        vdbs: vdbService,
        defaults: { shardCount: config.docdb.vdbShardCount, replicaFactor: config.docdb.vdbReplicaFactor, batchSize: config.docdb.importBatchSize },
        heartbeatMs: config.docdb.streamHeartbeatMs,
        keepAliveMs: config.replication.keepAliveMs,
        imports,
        peers: () => peerTasks,
      });
      await app.register(vdbAttachmentRoutes, { vdbs: vdbService, attachmentMaxBytes: config.docdb.attachmentMaxBytes });
    };
    const vectorFeatures =
      vectors === undefined || !config.vectordb.enabled
        ? []
        : [
            (app: FastifyInstance) =>
              vectorRoutes(app, {
                prefix: config.vectordb.prefix,
                engine: vectors!,
                cluster: vectorCluster,
                collectionDefaults,
              }),
          ];
    const clusterFeature = async (app: FastifyInstance) => {
      await app.register(clusterAdminRoutes, { member: () => member, shards: () => vectorShards, docShards: () => docShards });
      await app.register(activeTasksRoutes, { ...taskSources, jobs: () => member?.jobs(), peers: () => peerTasks });
    };
    const { app, handler, routes } = await buildHttp({
      ...httpDeps,
      features: [docdbFeature, replicationFeature, clusterFeature, ...vectorFeatures, ...(gatewayShared ? [gatewayFeature(gateway!)] : [])],
    });
    closers.unshift(() => app.close());

    let listener: Listener | undefined;
    if (config.http.enabled) {
      listener = await listen(handler as Parameters<typeof listen>[0], {
        host: config.http.ip,
        port: config.http.port,
        maxConnections: config.http.maxConnections,
        tls: config.http.tls,
        log,
      });
      closers.unshift(() => listener!.close());
    }
    if (member !== undefined && listener !== undefined) member.setHttpUrl(advertisedHttpUrl(config.http, listener.port, config.cluster.grpcAdvertise));
    // First: end long polls and SSE streams, or the listener would wait for them to hang up.
    closers.unshift(async () => docs.stopStreams());
    // Tasks stop first (their state is persisted, they resume at the next start).
    closers.unshift(() => replication.close());
    replication.start();
    tiers.startSweeper();

    // Another port: a second fastify app (platform routes + gateway only) on its own listener.
    let gatewayListener: Listener | undefined;
    if (gateway !== undefined && !gatewayShared) {
      const second = await buildHttp({ ...httpDeps, features: [gatewayFeature(gateway)] });
      closers.unshift(() => second.app.close());
      gatewayListener = await listen(second.handler as Parameters<typeof listen>[0], {
        host: config.http.ip,
        port: config.gateway.port,
        maxConnections: config.http.maxConnections,
        tls: config.http.tls,
        log,
      });
      closers.unshift(() => gatewayListener!.close());
    }

    let closing: Promise<void> | undefined;
    return {
      config,
      url: listener?.url,
      port: listener?.port,
      gatewayUrl: gatewayShared ? listener?.url : gatewayListener?.url,
      adminKeyFile,
      routes,
      close() {
        // Order matters: stop taking requests, drain, stop engines, then close storage last.
        closing ??= (async () => {
          for (const close of closers) {
            try {
              await close();
            } catch (err) {
              log.error({ err }, 'error during shutdown');
            }
          }
        })();
        return closing;
      },
    };
  } catch (err) {
    for (const close of closers) await close().catch(() => undefined);
    throw err;
  }
}

/** The data directory's files (none when it cannot be listed), and the problem when they near the open-files limit. */
async function storeFiles(store: Store): Promise<{ files?: StoreFiles; descriptors?: string }> {
  const files = await store.files().catch(() => undefined);
  if (files === undefined) return {};
  const descriptors = descriptorsProblem(files.tableFiles, files.openFilesLimit);
  return descriptors === undefined ? { files } : { files, descriptors };
}

/** What /health says of writes RocksDB refuses, with what to do where that is known. */
function writeFailureProblem(refused: WriteFailure): string {
  const said = `writes fail (${refused.count} since ${refused.since}): ${refused.message}`;
  // RocksDB stops taking writes after one failed for lack of space, until it is opened again.
  if (/No space left on device/.test(refused.message)) return `${said}; free space on the data directory's disk, then restart the node (no acknowledged write is lost: RocksDB replays its log)`;
  return said;
}
