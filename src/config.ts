// Every setting of the node: environment SERVICE_* (plus RELEASE_COOKIE), overridden by CLI
// flags of the same name (`--http-port 8081` or `--http-port=8081` for SERVICE_HTTP_PORT).
// Validation happens here, once, at start-up: a bad value is a ConfigError whose one-line
// message names the setting, the expectation and the value received.
import { existsSync } from 'node:fs';
import { hostname } from 'node:os';
import path from 'node:path';

export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}

export const VERIFY_MODES = ['verify_none', 'verify_peer'] as const;
export type VerifyMode = (typeof VERIFY_MODES)[number];
export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

type Parser<T> = (raw: string, name: string) => T;

function fail(name: string, expected: string, raw: string): never {
  throw new ConfigError(`${name} must be ${expected}, got ${JSON.stringify(raw)}`);
}

const int =
  (min: number, max: number): Parser<number> =>
  (raw, name) => {
    if (!/^-?\d+$/.test(raw.trim())) fail(name, `an integer from ${min} to ${max}`, raw);
    const n = Number(raw);
    if (!Number.isSafeInteger(n) || n < min || n > max) fail(name, `an integer from ${min} to ${max}`, raw);
    return n;
  };

const intOrInfinity =
  (min: number): Parser<number> =>
  (raw, name) => {
    if (raw.trim().toLowerCase() === 'infinity') return Number.POSITIVE_INFINITY;
    if (!/^\d+$/.test(raw.trim()) || Number(raw) < min) fail(name, `an integer >= ${min} or "infinity"`, raw);
    return Number(raw);
  };

const bool: Parser<boolean> = (raw, name) => {
  const v = raw.trim().toLowerCase();
  if (['true', '1', 'yes', 'on'].includes(v)) return true;
  if (['false', '0', 'no', 'off'].includes(v)) return false;
  return fail(name, 'true or false', raw);
};

const str: Parser<string> = (raw) => raw;

const nonEmpty: Parser<string> = (raw, name) => (raw.trim() === '' ? fail(name, 'a non-empty string', raw) : raw);
// A node's name keys the cluster metadata's maps, and the CBOR codec reads a map key
// `__proto__` back as `__proto_` (src/core/codec.ts): a node so named would be renamed in
// every metadata snapshot.
const nodeName: Parser<string> = (raw, name) => (raw === '__proto__' ? fail(name, 'a non-empty name other than "__proto__"', raw) : nonEmpty(raw, name));

const oneOf =
  <T extends string>(values: readonly T[]): Parser<T> =>
  (raw, name) =>
    (values as readonly string[]).includes(raw) ? (raw as T) : fail(name, `one of ${values.join(', ')}`, raw);

const list: Parser<string[]> = (raw) =>
  raw
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');

const hostPort: Parser<string> = (raw, name) => (/^[A-Za-z0-9_.\-:\[\]]+:\d{1,5}$/.test(raw.trim()) ? raw.trim() : fail(name, 'host:port', raw));

const hostPortList: Parser<string[]> = (raw, name) => list(raw, name).map((item) => hostPort(item, name));

/** `n2=host:port,n3=host:port`: dial these peers there instead of their advertised address. */
const dialMap: Parser<Record<string, string>> = (raw, name) =>
  Object.fromEntries(
    list(raw, name).map((item) => {
      const eq = item.indexOf('=');
      if (eq < 1) fail(name, 'a list like n2=127.0.0.1:31002,n3=127.0.0.1:31003', raw);
      return [item.slice(0, eq), hostPort(item.slice(eq + 1), name)];
    }),
  );

const prefix: Parser<string> = (raw, name) =>
  /^(\/[A-Za-z0-9_.-]+)+$/.test(raw) ? raw : fail(name, 'a path prefix like /vectordb', raw);

/** The settings table: one row per setting, the env name is the key. */
const SETTINGS = {
  SERVICE_HTTP_IP: { parse: nonEmpty, default: '127.0.0.1' },
  SERVICE_HTTP_PORT: { parse: int(0, 65535), default: 8080 },
  SERVICE_HTTP_ADVERTISE: { parse: hostPort, default: undefined as string | undefined },
  SERVICE_HTTP_ENABLED: { parse: bool, default: true },
  SERVICE_HTTP_ACCEPTORS: { parse: int(1, 65535), default: 100 },
  SERVICE_HTTP_MAX_CONNECTIONS: { parse: intOrInfinity(1), default: Number.POSITIVE_INFINITY },
  SERVICE_HTTP_TLS_ENABLED: { parse: bool, default: false },
  SERVICE_HTTP_CERTFILE: { parse: nonEmpty, default: undefined as string | undefined },
  SERVICE_HTTP_KEYFILE: { parse: nonEmpty, default: undefined as string | undefined },
  SERVICE_HTTP_CACERTFILE: { parse: nonEmpty, default: undefined as string | undefined },
  SERVICE_HTTP_VERIFY: { parse: oneOf(VERIFY_MODES), default: 'verify_none' as VerifyMode },
  SERVICE_HTTP_BODY_LIMIT_BYTES: { parse: int(1024, 1024 ** 3), default: 16 * 1024 * 1024 },
  SERVICE_DATA_DIR: { parse: nonEmpty, default: 'data' },
  SERVICE_STORAGE_WRITE_WORKER: { parse: bool, default: true },
  SERVICE_STORAGE_CACHE_MB: { parse: int(0, 4095), default: 128 },
  SERVICE_NODE_NAME: { parse: nodeName, default: `firkin@${hostname()}` },
  SERVICE_SEED_NODES: { parse: hostPortList, default: [] as string[] },
  SERVICE_ENABLE_CLUSTER: { parse: bool, default: false },
  SERVICE_CLUSTER_NAME: { parse: nonEmpty, default: 'firkin' },
  SERVICE_GRPC_PORT: { parse: int(0, 65535), default: 9080 },
  SERVICE_GRPC_IP: { parse: nonEmpty, default: '127.0.0.1' },
  SERVICE_GRPC_ADVERTISE: { parse: hostPort, default: undefined as string | undefined },
  SERVICE_ZONE: { parse: nonEmpty, default: 'default' },
  SERVICE_CLUSTER_DIAL_MAP: { parse: dialMap, default: {} as Record<string, string> },
  SERVICE_CLUSTER_BOOTSTRAP: { parse: bool, default: true },
  SERVICE_CLUSTER_MAX_VOTERS: { parse: int(1, 7), default: 5 },
  SERVICE_RAFT_TICK_MS: { parse: int(5, 10_000), default: 50 },
  SERVICE_RAFT_ELECTION_TICKS: { parse: int(2, 1_000), default: 10 },
  SERVICE_RAFT_HEARTBEAT_TICKS: { parse: int(1, 1_000), default: 1 },
  SERVICE_RAFT_QUIESCE_TICKS: { parse: int(0, 100_000), default: 20 },
  SERVICE_RAFT_SNAPSHOT_ENTRIES: { parse: int(2, 10_000_000), default: 1_000 },
  SERVICE_RAFT_RETAIN_ENTRIES: { parse: int(0, 10_000_000), default: 200 },
  SERVICE_CLUSTER_HEARTBEAT_MS: { parse: int(10, 60_000), default: 250 },
  SERVICE_FD_SUSPECT_MS: { parse: int(50, 600_000), default: 1_500 },
  SERVICE_FD_DOWN_MS: { parse: int(100, 3_600_000), default: 4_000 },
  SERVICE_FD_RECOVER_MS: { parse: int(0, 600_000), default: 1_000 },
  SERVICE_FD_MIN_DWELL_MS: { parse: int(0, 600_000), default: 3_000 },
  SERVICE_DEAD_VOTER_GRACE_MS: { parse: int(0, 86_400_000), default: 10_000 },
  SERVICE_REPLICA_REPAIR_GRACE_MS: { parse: int(0, 86_400_000), default: 60_000 },
  SERVICE_SHARD_LEADER_BALANCE: { parse: bool, default: true },
  SERVICE_RESHARD_DOCS_PER_SEC: { parse: int(1, 10_000_000), default: 20_000 },
  SERVICE_RESHARD_SWITCH_TIMEOUT_MS: { parse: int(100, 3_600_000), default: 10_000 },
  SERVICE_VDB_REBALANCE_DOCS_PER_SEC: { parse: int(1, 10_000_000), default: 20_000 },
  SERVICE_JOIN_TIMEOUT_MS: { parse: int(100, 3_600_000), default: 30_000 },
  SERVICE_CLUSTER_PROPOSAL_TIMEOUT_MS: { parse: int(100, 600_000), default: 5_000 },
  SERVICE_CLUSTER_KEY_FRESHNESS_MS: { parse: int(50, 600_000), default: 2_000 },
  SERVICE_REPLICATION_FACTOR: { parse: int(1, 9), default: 2 },
  RELEASE_COOKIE: { parse: str, default: undefined as string | undefined },
  SERVICE_ADMIN_KEY: { parse: nonEmpty, default: undefined as string | undefined },
  SERVICE_AUTH_DISABLED: { parse: bool, default: false },
  SERVICE_LOG_LEVEL: { parse: oneOf(LOG_LEVELS), default: 'info' as LogLevel },
  SERVICE_STREAM_HEARTBEAT_MS: { parse: int(10, 3_600_000), default: 30_000 },
  SERVICE_REVS_LIMIT: { parse: int(1, 1_000_000), default: 1000 },
  SERVICE_COMPACT_AFTER_WRITES: { parse: int(0, 1_000_000_000), default: 10_000 },
  SERVICE_ATTACHMENT_MAX_BYTES: { parse: int(1, 1024 ** 3), default: 64 * 1024 * 1024 },
  SERVICE_TIER_SWEEP_MS: { parse: int(10, 3_600_000), default: 10_000 },
  SERVICE_HLC_MAX_OFFSET_MS: { parse: int(0, 365 * 86_400_000), default: 0 },
  SERVICE_VDB_SHARD_COUNT: { parse: int(1, 1024), default: 4 },
  SERVICE_VDB_REPLICA_FACTOR: { parse: int(1, 9), default: 1 },
  SERVICE_IMPORT_BATCH_SIZE: { parse: int(1, 100_000), default: 100 },
  SERVICE_REPLICATION_ALLOW: { parse: list, default: [] as string[] },
  SERVICE_REPLICATION_ALLOW_LOOPBACK: { parse: bool, default: true },
  SERVICE_REPLICATION_TIMEOUT_MS: { parse: int(100, 600_000), default: 30_000 },
  SERVICE_REPLICATION_BATCH_SIZE: { parse: int(1, 10_000), default: 500 },
  SERVICE_REPLICATION_RETRY_BASE_MS: { parse: int(1, 3_600_000), default: 1_000 },
  SERVICE_REPLICATION_RETRY_MAX_MS: { parse: int(1, 86_400_000), default: 60_000 },
  SERVICE_REPLICATION_KEEPALIVE_MS: { parse: int(10, 600_000), default: 10_000 },
  SERVICE_VECTORDB_ENABLED: { parse: bool, default: true },
  SERVICE_VECTORDB_PREFIX: { parse: prefix, default: '/vectordb' },
  SERVICE_VECTORDB_INDEX_SAVE_MS: { parse: int(100, 86_400_000), default: 30_000 },
  SERVICE_EMBEDDER_OPENAI_API_KEY: { parse: nonEmpty, default: undefined as string | undefined },
  SERVICE_EMBEDDER_OPENAI_URL: { parse: nonEmpty, default: 'https://api.openai.com' },
  SERVICE_EMBEDDER_ALLOW: { parse: list, default: ['api.openai.com'] as string[] },
  SERVICE_EMBEDDER_ALLOW_LOOPBACK: { parse: bool, default: true },
  SERVICE_GATEWAY_ENABLED: { parse: bool, default: false },
  SERVICE_GATEWAY_PORT: { parse: int(0, 65535), default: 8080 },
  SERVICE_GATEWAY_MASTER_KEY: { parse: nonEmpty, default: undefined as string | undefined },
  SERVICE_GATEWAY_SYSTEM_DB_PATH: { parse: nonEmpty, default: undefined as string | undefined },
  SERVICE_GATEWAY_DEFAULT_RPM: { parse: int(1, 10_000_000), default: 100 },
  SERVICE_GATEWAY_MAX_VECTORS: { parse: int(0, Number.MAX_SAFE_INTEGER), default: 100_000 },
  SERVICE_GATEWAY_MAX_COLLECTIONS: { parse: int(0, 1_000_000), default: 10 },
  SERVICE_GATEWAY_MAX_STORAGE_MB: { parse: int(0, 100_000_000), default: 1024 },
  SERVICE_GATEWAY_EMBEDDER_URLS: { parse: list, default: [] as string[] },
} as const;

type Settings = typeof SETTINGS;
export type SettingName = keyof Settings;
type Values = { -readonly [K in SettingName]: Settings[K]['default'] | ReturnType<Settings[K]['parse']> };

export interface Config {
  http: {
    ip: string;
    port: number;
    /** host:port other nodes, the CLI and the console reach this node's HTTP at (cluster mode). */
    advertise?: string;
    enabled: boolean;
    acceptors: number;
    maxConnections: number;
    bodyLimitBytes: number;
    tls: { enabled: false } | { enabled: true; certFile: string; keyFile: string; caCertFile?: string; verify: VerifyMode };
  };
  dataDir: string;
  /** Synced writes on a worker thread, so fsync never stalls the event loop. */
  storage: { writeWorker: boolean; cacheMb: number };
  nodeName: string;
  logLevel: LogLevel;
  auth: { disabled: boolean; adminKey?: string };
  cluster: {
    enabled: boolean;
    name: string;
    seedNodes: string[];
    grpcPort: number;
    grpcIp: string;
    /** host:port the other nodes dial. */
    grpcAdvertise: string;
    cookie?: string;
    replicationFactor: number;
    zone: string;
    /** Test and chaos hook: peers dialled at these addresses (fault proxies) instead of their own. */
    dialMap: Record<string, string>;
    /** With no seeds and no cluster data: start a new cluster (false: wait for POST /_cluster/join). */
    bootstrap: boolean;
    maxVoters: number;
    tickMs: number;
    electionTicks: number;
    heartbeatTicks: number;
    /** Idle ticks before a shard group goes silent (0: never); the metadata group never does. */
    quiesceTicks: number;
    /** Snapshot the metadata and compact the log every this many applied entries… */
    snapshotEntries: number;
    /** …keeping this many entries behind the snapshot for followers slightly behind. */
    retainEntries: number;
    /** Node heartbeats on every link (the failure detector's input). */
    nodeHeartbeatMs: number;
    detector: { suspectAfterMs: number; downAfterMs: number; recoverAfterMs: number; minDwellMs: number };
    /** A voter down this long is replaced by a learner (when one is ready). */
    deadVoterGraceMs: number;
    /** A shard replica on a node `down` this long is replaced on a healthy node. */
    replicaRepairGraceMs: number;
    /** Hand shard leaderships to voters leading fewer groups (SERVICE_SHARD_LEADER_BALANCE). */
    leaderBalance: boolean;
    /** A reshard copies at most this many documents per second (foreground traffic keeps its latency). */
    reshardDocsPerSec: number;
    /** A reshard's switch not done this long after its fences is rolled back (the old shards serve again). */
    reshardSwitchTimeoutMs: number;
    /** A clustered VDB split or merge copies at most this many documents a second. */
    vdbRebalanceDocsPerSec: number;
    /** Give up joining (exit 1) when no seed accepted us within this time. */
    joinTimeoutMs: number;
    /** Bound on a metadata write, forwarding included; past it: 503 no_quorum. */
    proposalTimeoutMs: number;
    /**
     * Cluster keys are checked against the local copy only while it is this fresh (a ReadIndex
     * barrier STARTED within this time completed); a revoke is acknowledged this long after it
     * committed, so no node accepts a revoked key once the revoke was acknowledged (the lease
     * assumption: clocks run at nearly the same rate; offsets do not matter).
     */
    keyFreshnessMs: number;
  };
  docdb: {
    streamHeartbeatMs: number;
    revsLimit: number;
    /** A database is compacted automatically after this many document writes to it (0 = never). */
    compactAfterWrites: number;
    attachmentMaxBytes: number;
    hlcMaxOffsetMs: number;
    /** How often expired TTL documents are deleted. */
    tierSweepMs: number;
    vdbShardCount: number;
    vdbReplicaFactor: number;
    importBatchSize: number;
  };
  replication: {
    /** Remote hosts (`host` or `host:port`) outbound replication may reach. */
    allow: string[];
    allowLoopback: boolean;
    timeoutMs: number;
    batchSize: number;
    retryBaseMs: number;
    retryMaxMs: number;
    /** A one-shot `_replicate` still running after this long answers with a keep-alive stream. */
    keepAliveMs: number;
  };
  vectordb: {
    enabled: boolean;
    prefix: string;
    /** How often changed vector indexes are saved to their files. */
    indexSaveMs: number;
    /** Sent only to embedders whose URL has the origin of openaiUrl. */
    openaiApiKey?: string;
    openaiUrl: string;
    /** Hosts HTTP embedders may call (collection configs carry URLs from requests: SSRF). */
    embedderAllow: string[];
    embedderAllowLoopback: boolean;
  };
  gateway: {
    enabled: boolean;
    port: number;
    masterKey?: string;
    systemDbPath?: string;
    defaultRpm: number;
    maxVectors: number;
    maxCollections: number;
    maxStorageMb: number;
    /** URL prefixes a tenant may name as its embedder `url` (none: only the node's defaults). */
    embedderUrls: string[];
  };
}

function flagToEnv(flag: string): string {
  const name = flag.replace(/^--/, '').toUpperCase().replace(/-/g, '_');
  return name === 'RELEASE_COOKIE' || name.startsWith('SERVICE_') ? name : `SERVICE_${name}`;
}

/** CLI flags as env-style overrides. Unknown flags are an error: a typo must not be ignored. */
export function parseFlags(argv: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (!arg.startsWith('--')) throw new ConfigError(`unexpected argument ${JSON.stringify(arg)} (flags look like --http-port 8081)`);
    const eq = arg.indexOf('=');
    const flag = eq === -1 ? arg : arg.slice(0, eq);
    const env = flagToEnv(flag);
    if (!(env in SETTINGS)) throw new ConfigError(`unknown flag ${flag}`);
    let value: string;
    if (eq !== -1) value = arg.slice(eq + 1);
    else if (argv[i + 1] !== undefined && !argv[i + 1]!.startsWith('--')) value = argv[++i]!;
    else value = 'true'; // a bare flag turns a boolean on
    out[env] = value;
  }
  return out;
}

export function loadConfig(env: Record<string, string | undefined>, argv: readonly string[] = []): Config {
  const raw: Record<string, string | undefined> = { ...env, ...parseFlags(argv) };
  const v = {} as Record<string, unknown>;
  for (const [name, setting] of Object.entries(SETTINGS)) {
    const given = raw[name];
    v[name] = given === undefined || given === '' ? setting.default : (setting.parse as Parser<unknown>)(given, name);
  }
  return assemble(v as Values);
}

function requireFile(name: string, file: string | undefined, why: string): string {
  if (file === undefined) throw new ConfigError(`${name} is required ${why}`);
  if (!existsSync(file)) throw new ConfigError(`${name} points to a missing file: ${JSON.stringify(file)}`);
  return file;
}

function assemble(v: Values): Config {
  let tls: Config['http']['tls'] = { enabled: false };
  if (v.SERVICE_HTTP_TLS_ENABLED) {
    const why = 'when SERVICE_HTTP_TLS_ENABLED=true';
    const certFile = requireFile('SERVICE_HTTP_CERTFILE', v.SERVICE_HTTP_CERTFILE, why);
    const keyFile = requireFile('SERVICE_HTTP_KEYFILE', v.SERVICE_HTTP_KEYFILE, why);
    const caCertFile =
      v.SERVICE_HTTP_CACERTFILE === undefined
        ? undefined
        : requireFile('SERVICE_HTTP_CACERTFILE', v.SERVICE_HTTP_CACERTFILE, why);
    if (v.SERVICE_HTTP_VERIFY === 'verify_peer' && caCertFile === undefined) {
      throw new ConfigError('SERVICE_HTTP_CACERTFILE is required when SERVICE_HTTP_VERIFY=verify_peer');
    }
    tls = { enabled: true, certFile, keyFile, caCertFile, verify: v.SERVICE_HTTP_VERIFY };
  }
  if (v.SERVICE_GATEWAY_ENABLED && v.SERVICE_GATEWAY_MASTER_KEY === undefined) {
    throw new ConfigError('SERVICE_GATEWAY_MASTER_KEY is required when SERVICE_GATEWAY_ENABLED=true');
  }
  if (v.SERVICE_ENABLE_CLUSTER && (v.RELEASE_COOKIE === undefined || v.RELEASE_COOKIE === '')) {
    throw new ConfigError('RELEASE_COOKIE is required when SERVICE_ENABLE_CLUSTER=true');
  }
  if (v.SERVICE_FD_DOWN_MS <= v.SERVICE_FD_SUSPECT_MS) {
    throw new ConfigError(`SERVICE_FD_DOWN_MS must be greater than SERVICE_FD_SUSPECT_MS (${v.SERVICE_FD_SUSPECT_MS}), got ${v.SERVICE_FD_DOWN_MS}`);
  }
  if (v.SERVICE_RAFT_ELECTION_TICKS <= v.SERVICE_RAFT_HEARTBEAT_TICKS) {
    throw new ConfigError(`SERVICE_RAFT_ELECTION_TICKS must be greater than SERVICE_RAFT_HEARTBEAT_TICKS (${v.SERVICE_RAFT_HEARTBEAT_TICKS}), got ${v.SERVICE_RAFT_ELECTION_TICKS}`);
  }
  if (v.SERVICE_ENABLE_CLUSTER && v.SERVICE_GRPC_PORT === 0 && v.SERVICE_GRPC_ADVERTISE === undefined) {
    throw new ConfigError('SERVICE_GRPC_PORT must be a fixed port in cluster mode (other nodes dial it), got "0"');
  }
  const dataDir = path.resolve(v.SERVICE_DATA_DIR);
  return {
    http: {
      ip: v.SERVICE_HTTP_IP,
      port: v.SERVICE_HTTP_PORT,
      ...(v.SERVICE_HTTP_ADVERTISE === undefined ? {} : { advertise: v.SERVICE_HTTP_ADVERTISE }),
      enabled: v.SERVICE_HTTP_ENABLED,
      acceptors: v.SERVICE_HTTP_ACCEPTORS,
      maxConnections: v.SERVICE_HTTP_MAX_CONNECTIONS,
      bodyLimitBytes: v.SERVICE_HTTP_BODY_LIMIT_BYTES,
      tls,
    },
    dataDir,
    storage: { writeWorker: v.SERVICE_STORAGE_WRITE_WORKER, cacheMb: v.SERVICE_STORAGE_CACHE_MB },
    nodeName: v.SERVICE_NODE_NAME,
    logLevel: v.SERVICE_LOG_LEVEL,
    auth: { disabled: v.SERVICE_AUTH_DISABLED, adminKey: v.SERVICE_ADMIN_KEY },
    cluster: {
      enabled: v.SERVICE_ENABLE_CLUSTER,
      name: v.SERVICE_CLUSTER_NAME,
      seedNodes: v.SERVICE_SEED_NODES,
      grpcPort: v.SERVICE_GRPC_PORT,
      grpcIp: v.SERVICE_GRPC_IP,
      grpcAdvertise: v.SERVICE_GRPC_ADVERTISE ?? `127.0.0.1:${v.SERVICE_GRPC_PORT}`,
      cookie: v.RELEASE_COOKIE,
      replicationFactor: v.SERVICE_REPLICATION_FACTOR,
      zone: v.SERVICE_ZONE,
      dialMap: v.SERVICE_CLUSTER_DIAL_MAP,
      bootstrap: v.SERVICE_CLUSTER_BOOTSTRAP,
      maxVoters: v.SERVICE_CLUSTER_MAX_VOTERS,
      tickMs: v.SERVICE_RAFT_TICK_MS,
      electionTicks: v.SERVICE_RAFT_ELECTION_TICKS,
      heartbeatTicks: v.SERVICE_RAFT_HEARTBEAT_TICKS,
      quiesceTicks: v.SERVICE_RAFT_QUIESCE_TICKS,
      snapshotEntries: v.SERVICE_RAFT_SNAPSHOT_ENTRIES,
      retainEntries: v.SERVICE_RAFT_RETAIN_ENTRIES,
      nodeHeartbeatMs: v.SERVICE_CLUSTER_HEARTBEAT_MS,
      detector: { suspectAfterMs: v.SERVICE_FD_SUSPECT_MS, downAfterMs: v.SERVICE_FD_DOWN_MS, recoverAfterMs: v.SERVICE_FD_RECOVER_MS, minDwellMs: v.SERVICE_FD_MIN_DWELL_MS },
      deadVoterGraceMs: v.SERVICE_DEAD_VOTER_GRACE_MS,
      replicaRepairGraceMs: v.SERVICE_REPLICA_REPAIR_GRACE_MS,
      leaderBalance: v.SERVICE_SHARD_LEADER_BALANCE,
      reshardDocsPerSec: v.SERVICE_RESHARD_DOCS_PER_SEC,
      reshardSwitchTimeoutMs: v.SERVICE_RESHARD_SWITCH_TIMEOUT_MS,
      vdbRebalanceDocsPerSec: v.SERVICE_VDB_REBALANCE_DOCS_PER_SEC,
      joinTimeoutMs: v.SERVICE_JOIN_TIMEOUT_MS,
      proposalTimeoutMs: v.SERVICE_CLUSTER_PROPOSAL_TIMEOUT_MS,
      keyFreshnessMs: v.SERVICE_CLUSTER_KEY_FRESHNESS_MS,
    },
    docdb: {
      streamHeartbeatMs: v.SERVICE_STREAM_HEARTBEAT_MS,
      revsLimit: v.SERVICE_REVS_LIMIT,
      compactAfterWrites: v.SERVICE_COMPACT_AFTER_WRITES,
      attachmentMaxBytes: v.SERVICE_ATTACHMENT_MAX_BYTES,
      hlcMaxOffsetMs: v.SERVICE_HLC_MAX_OFFSET_MS,
      tierSweepMs: v.SERVICE_TIER_SWEEP_MS,
      vdbShardCount: v.SERVICE_VDB_SHARD_COUNT,
      vdbReplicaFactor: v.SERVICE_VDB_REPLICA_FACTOR,
      importBatchSize: v.SERVICE_IMPORT_BATCH_SIZE,
    },
    replication: {
      allow: v.SERVICE_REPLICATION_ALLOW,
      allowLoopback: v.SERVICE_REPLICATION_ALLOW_LOOPBACK,
      timeoutMs: v.SERVICE_REPLICATION_TIMEOUT_MS,
      batchSize: v.SERVICE_REPLICATION_BATCH_SIZE,
      retryBaseMs: v.SERVICE_REPLICATION_RETRY_BASE_MS,
      retryMaxMs: v.SERVICE_REPLICATION_RETRY_MAX_MS,
      keepAliveMs: v.SERVICE_REPLICATION_KEEPALIVE_MS,
    },
    vectordb: {
      enabled: v.SERVICE_VECTORDB_ENABLED,
      prefix: v.SERVICE_VECTORDB_PREFIX,
      indexSaveMs: v.SERVICE_VECTORDB_INDEX_SAVE_MS,
      openaiApiKey: v.SERVICE_EMBEDDER_OPENAI_API_KEY,
      openaiUrl: v.SERVICE_EMBEDDER_OPENAI_URL,
      embedderAllow: v.SERVICE_EMBEDDER_ALLOW,
      embedderAllowLoopback: v.SERVICE_EMBEDDER_ALLOW_LOOPBACK,
    },
    gateway: {
      enabled: v.SERVICE_GATEWAY_ENABLED,
      port: v.SERVICE_GATEWAY_PORT,
      masterKey: v.SERVICE_GATEWAY_MASTER_KEY,
      systemDbPath: v.SERVICE_GATEWAY_SYSTEM_DB_PATH,
      defaultRpm: v.SERVICE_GATEWAY_DEFAULT_RPM,
      maxVectors: v.SERVICE_GATEWAY_MAX_VECTORS,
      maxCollections: v.SERVICE_GATEWAY_MAX_COLLECTIONS,
      maxStorageMb: v.SERVICE_GATEWAY_MAX_STORAGE_MB,
      embedderUrls: v.SERVICE_GATEWAY_EMBEDDER_URLS,
    },
  };
}

/**
 * The HTTP URL a cluster node advertises: SERVICE_HTTP_ADVERTISE when set; else the address
 * it listens on, unless that is a wildcard (0.0.0.0, ::), which no other node can dial: then
 * the host of its gRPC advertise address (the operator already said where others reach it).
 */
export function advertisedHttpUrl(http: Pick<Config['http'], 'ip' | 'advertise' | 'tls'>, port: number, grpcAdvertise: string): string {
  const scheme = http.tls.enabled ? 'https' : 'http';
  if (http.advertise !== undefined) return `${scheme}://${http.advertise}`;
  const wildcard = http.ip === '0.0.0.0' || http.ip === '::' || http.ip === '[::]';
  const host = wildcard ? grpcAdvertise.slice(0, grpcAdvertise.lastIndexOf(':')) : http.ip.includes(':') && !http.ip.startsWith('[') ? `[${http.ip}]` : http.ip;
  return `${scheme}://${host}:${port}`;
}
