// Command line of `firkin`, parsed without I/O: argv and the environment in, a command to run,
// a help text or a usage error out. The shell (`firkin.ts`) does the talking.
import { HELP, type HelpTopic } from './help.js';

export const CLUSTER_COMMANDS = ['status', 'nodes', 'health', 'join', 'leave', 'remove', 'shards', 'jobs'] as const;
export type ClusterCommand = (typeof CLUSTER_COMMANDS)[number];

export type Command =
  | { readonly kind: 'status' }
  | { readonly kind: 'nodes' }
  | { readonly kind: 'health' }
  | { readonly kind: 'join'; readonly seed: string }
  | { readonly kind: 'leave' }
  | { readonly kind: 'remove'; readonly node: string; readonly force?: true }
  | { readonly kind: 'shards'; readonly collection: string }
  | { readonly kind: 'jobs' }
  | { readonly kind: 'reshard'; readonly collection: string; readonly shards: number; readonly wait: boolean }
  | { readonly kind: 'reshard-cancel'; readonly collection: string }
  | { readonly kind: 'vdb-split'; readonly vdb: string; readonly shard: number }
  | { readonly kind: 'vdb-merge'; readonly vdb: string; readonly shard: number; readonly into: number }
  | { readonly kind: 'vdb-cancel'; readonly vdb: string }
  | { readonly kind: 'vdb-cancel-import'; readonly vdb: string }
  | { readonly kind: 'vdb-shards'; readonly vdb: string }
  | { readonly kind: 'tasks' };

export const VDB_COMMANDS = ['shards', 'split', 'merge', 'cancel', 'cancel-import'] as const;
export type VdbCommand = (typeof VDB_COMMANDS)[number];

/** Which node to talk to and how to print. */
export interface Target {
  /** Base URL without a trailing slash. */
  readonly url: string;
  readonly key: string | undefined;
  readonly json: boolean;
  /**
   * Other nodes of the cluster (`FIRKIN_NODES`, as `scripts/cluster.sh env` prints it, without
   * `url`): a cluster-wide command asks the next when a node cannot be connected to.
   */
  readonly fallbacks?: readonly string[];
}

/** Offline commands: they open a stopped node's data directory, not its HTTP API. */
export type RecoverCommand =
  | { readonly kind: 'recover-list'; readonly dataDir: string }
  | { readonly kind: 'recover-force'; readonly dataDir: string; readonly node: string; readonly groups: readonly string[] | 'all' };

export type Parsed =
  | { readonly kind: 'run'; readonly command: Command; readonly target: Target }
  | { readonly kind: 'offline'; readonly command: RecoverCommand }
  | { readonly kind: 'help'; readonly text: string }
  | { readonly kind: 'usage_error'; readonly message: string };

export const DEFAULT_URL = 'http://127.0.0.1:8080';

/** Commands that call admin routes: without a key the node would only answer 401. */
const NEEDS_KEY: ReadonlySet<ClusterCommand> = new Set(['join', 'remove', 'shards', 'jobs']);

const VALUE_OPTIONS = ['url', 'key', 'seed', 'into'] as const;
type ValueOption = (typeof VALUE_OPTIONS)[number];

function isClusterCommand(word: string | undefined): word is ClusterCommand {
  return (CLUSTER_COMMANDS as readonly (string | undefined)[]).includes(word);
}

function isValueOption(name: string): name is ValueOption {
  return (VALUE_OPTIONS as readonly string[]).includes(name);
}

/** `host:port` or `[v6]:port`, port 1..65535. */
export function isSeed(value: string): boolean {
  const m = /^(\[[0-9A-Fa-f:.]+\]|[^\s:/[\]@]+):(\d{1,5})$/.exec(value);
  if (m === null) return false;
  const port = Number(m[2]);
  return port >= 1 && port <= 65535;
}

/** An http(s) URL, normalised to have no trailing slash; undefined when it is not one. */
export function normaliseUrl(value: string): string | undefined {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return undefined;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return undefined;
  if (url.search !== '' || url.hash !== '' || url.username !== '' || url.password !== '') return undefined;
  return url.origin + url.pathname.replace(/\/+$/, '');
}

const usage = (message: string): Parsed => ({ kind: 'usage_error', message });

function isVdbCommand(word: string | undefined): word is VdbCommand {
  return (VDB_COMMANDS as readonly (string | undefined)[]).includes(word);
}

/** A shard id as the VDB API numbers them. */
const SHARD_ID = /^(0|[1-9][0-9]{0,5})$/;

function helpTopic(words: readonly string[]): HelpTopic {
  if (words[0] === 'collection') return 'reshard';
  if (words[0] === 'vdb') return isVdbCommand(words[1]) ? `vdb-${words[1]}` : 'vdb';
  if (words[0] === 'tasks') return 'tasks';
  if (words[0] === 'recover') return 'recover';
  if (words[0] !== 'cluster') return 'firkin';
  return isClusterCommand(words[1]) ? words[1] : 'cluster';
}

/** Options may come before, between or after the words; a repeated option keeps its last value. */
export function parseArgs(argv: readonly string[], env: Readonly<Record<string, string | undefined>>): Parsed {
  if (argv[0] === 'recover') return parseRecover(argv.slice(1));
  const words: string[] = [];
  const values: Partial<Record<ValueOption, string>> = {};
  let json = false;
  let help = false;
  let wait = false;
  let cancel = false;
  let force = false;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === '--') {
      words.push(...argv.slice(i + 1));
      break;
    }
    if (arg === '-h' || arg === '--help') {
      help = true;
      continue;
    }
    if (arg === '--json') {
      json = true;
      continue;
    }
    if (arg === '--wait') {
      wait = true;
      continue;
    }
    if (arg === '--cancel') {
      cancel = true;
      continue;
    }
    if (arg === '--force') {
      force = true;
      continue;
    }
    if (!arg.startsWith('-') || arg === '-') {
      words.push(arg);
      continue;
    }
    const eq = arg.indexOf('=');
    const name = arg.slice(2, eq === -1 ? undefined : eq);
    if (!arg.startsWith('--') || !isValueOption(name)) return usage(`unknown option ${arg.slice(0, eq === -1 ? undefined : eq)}`);
    if (eq !== -1) values[name] = arg.slice(eq + 1);
    else if (i + 1 < argv.length) values[name] = argv[++i]!;
    else return usage(`--${name} needs a value`);
  }
  if (help) return { kind: 'help', text: HELP[helpTopic(words)] };

  if (words.length === 0) return usage('missing command (try firkin --help)');
  if (force && !(words[0] === 'cluster' && words[1] === 'remove')) return usage('--force only applies to cluster remove');
  if (words[0] === 'collection') return parseCollection(words.slice(1), values, env, json, wait, cancel);
  if (wait) return usage('--wait only applies to collection reshard');
  if (cancel) return usage('--cancel only applies to collection reshard');
  if (words[0] === 'vdb') return parseVdb(words.slice(1), values, env, json);
  if (values.into !== undefined) return usage('--into only applies to vdb merge');
  if (words[0] === 'tasks') {
    if (words.length > 1) return usage(`unexpected argument ${JSON.stringify(words[1])} for tasks`);
    if (values.seed !== undefined) return usage('--seed only applies to cluster join');
    return withTarget({ kind: 'tasks' }, values, env, json, 'tasks');
  }
  if (words[0] !== 'cluster') return usage(`unknown command ${JSON.stringify(words[0])} (try firkin --help)`);
  const name = words[1];
  if (name === undefined) return usage(`missing cluster command: one of ${CLUSTER_COMMANDS.join(', ')}`);
  if (!isClusterCommand(name)) return usage(`unknown cluster command ${JSON.stringify(name)}: one of ${CLUSTER_COMMANDS.join(', ')}`);
  const rest = words.slice(2);

  let command: Command;
  if (name === 'shards') {
    const collection = rest.shift();
    if (collection === undefined || collection === '') return usage('cluster shards needs a COLLECTION name');
    command = { kind: 'shards', collection };
  } else if (name === 'remove') {
    const node = rest.shift();
    if (node === undefined || node === '') return usage('cluster remove needs a NODE name');
    command = { kind: 'remove', node, ...(force ? { force: true as const } : {}) };
  } else if (name === 'join') {
    const seed = values.seed;
    if (seed === undefined) return usage('cluster join needs --seed host:port');
    if (!isSeed(seed)) return usage(`--seed must be host:port with a port from 1 to 65535, got ${JSON.stringify(seed)}`);
    command = { kind: 'join', seed };
  } else {
    command = { kind: name };
  }
  if (rest.length > 0) return usage(`unexpected argument ${JSON.stringify(rest[0])} for cluster ${name}`);
  if (values.seed !== undefined && name !== 'join') return usage('--seed only applies to cluster join');

  return withTarget(command, values, env, json, NEEDS_KEY.has(name) ? `cluster ${name}` : undefined);
}

/** The command with its node and key; `keyFor` names the command when it needs the admin key. */
function withTarget(command: Command, values: Partial<Record<ValueOption, string>>, env: Readonly<Record<string, string | undefined>>, json: boolean, keyFor: string | undefined): Parsed {
  const rawUrl = values.url ?? nonEmpty(env.FIRKIN_URL) ?? DEFAULT_URL;
  const url = normaliseUrl(rawUrl);
  if (url === undefined) return usage(`the node URL must be an http(s) URL like ${DEFAULT_URL}, got ${JSON.stringify(rawUrl)}`);
  const key = nonEmpty(values.key) ?? nonEmpty(env.FIRKIN_KEY);
  if (key === undefined && keyFor !== undefined) return usage(`${keyFor} needs the admin key: --key KEY or FIRKIN_KEY`);
  const fallbacks: string[] = [];
  for (const raw of (nonEmpty(env.FIRKIN_NODES) ?? '').split(',')) {
    if (raw.trim() === '') continue;
    const node = normaliseUrl(raw.trim());
    if (node === undefined) return usage(`FIRKIN_NODES must be http(s) URLs separated by commas, like ${DEFAULT_URL},http://127.0.0.1:8081; got ${JSON.stringify(raw)}`);
    if (node !== url && !fallbacks.includes(node)) fallbacks.push(node);
  }
  return { kind: 'run', command, target: { url, key, json, ...(fallbacks.length === 0 ? {} : { fallbacks }) } };
}

/** `collection reshard COLLECTION N [--wait]`, `collection reshard COLLECTION --cancel` (the vector API is open: no key needed). */
function parseCollection(words: readonly string[], values: Partial<Record<ValueOption, string>>, env: Readonly<Record<string, string | undefined>>, json: boolean, wait: boolean, cancel: boolean): Parsed {
  const [sub, collection, ...more] = words;
  if (sub !== 'reshard') return usage(`unknown collection command ${JSON.stringify(sub ?? '')}: reshard`);
  if (collection === undefined || collection === '') return usage('collection reshard needs a COLLECTION name');
  if (values.seed !== undefined) return usage('--seed only applies to cluster join');
  if (values.into !== undefined) return usage('--into only applies to vdb merge');
  if (cancel) {
    if (wait) return usage('--cancel and --wait do not go together (a cancel answers once the job ended)');
    if (more.length > 0) return usage(`unexpected argument ${JSON.stringify(more[0])} for collection reshard --cancel`);
    return withTarget({ kind: 'reshard-cancel', collection }, values, env, json, undefined);
  }
  const [count, ...rest] = more;
  if (count === undefined || !/^[1-9][0-9]{0,3}$/.test(count)) return usage(`collection reshard needs a shard count from 1 to 9999, got ${JSON.stringify(count ?? '')}`);
  if (rest.length > 0) return usage(`unexpected argument ${JSON.stringify(rest[0])} for collection reshard`);
  return withTarget({ kind: 'reshard', collection, shards: Number(count), wait }, values, env, json, undefined);
}

/** `vdb split VDB SHARD`, `vdb merge VDB SHARD --into TARGET`, `vdb cancel VDB` (admin routes), `vdb cancel-import VDB`, `vdb shards VDB`. */
function parseVdb(words: readonly string[], values: Partial<Record<ValueOption, string>>, env: Readonly<Record<string, string | undefined>>, json: boolean): Parsed {
  const [sub, vdb, ...rest] = words;
  if (!isVdbCommand(sub)) return usage(`unknown vdb command ${JSON.stringify(sub ?? '')}: one of ${VDB_COMMANDS.join(', ')}`);
  if (vdb === undefined || vdb === '') return usage(`vdb ${sub} needs a VDB name`);
  if (values.seed !== undefined) return usage('--seed only applies to cluster join');
  if (values.into !== undefined && sub !== 'merge') return usage('--into only applies to vdb merge');
  let command: Command;
  if (sub === 'cancel') {
    command = { kind: 'vdb-cancel', vdb };
  } else if (sub === 'cancel-import') {
    command = { kind: 'vdb-cancel-import', vdb };
  } else if (sub === 'shards') {
    command = { kind: 'vdb-shards', vdb };
  } else {
    const shard = rest.shift();
    if (shard === undefined || !SHARD_ID.test(shard)) return usage(`vdb ${sub} needs a SHARD id (0, 1, ...), got ${JSON.stringify(shard ?? '')}`);
    if (sub === 'split') {
      command = { kind: 'vdb-split', vdb, shard: Number(shard) };
    } else {
      const into = values.into;
      if (into === undefined || !SHARD_ID.test(into)) return usage(`vdb merge needs --into TARGET, the adjacent shard id to merge into, got ${JSON.stringify(into ?? '')}`);
      command = { kind: 'vdb-merge', vdb, shard: Number(shard), into: Number(into) };
    }
  }
  if (rest.length > 0) return usage(`unexpected argument ${JSON.stringify(rest[0])} for vdb ${sub}`);
  // An import's cancel needs a key that may write the VDB, the shards a key that may read it,
  // not the admin key; a node with auth off needs none.
  return withTarget(command, values, env, json, sub === 'cancel-import' || sub === 'shards' ? undefined : `vdb ${sub}`);
}

/**
 * `recover list --data-dir DIR`, `recover force --data-dir DIR --node NAME (--group G ... | --all)`.
 * Its own options (`--group` repeats), and none of the HTTP ones: it talks to no node.
 */
export function parseRecover(argv: readonly string[]): Parsed {
  const words: string[] = [];
  const groups: string[] = [];
  let dataDir: string | undefined;
  let node: string | undefined;
  let all = false;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === '-h' || arg === '--help') return { kind: 'help', text: HELP.recover };
    if (arg === '--all') {
      all = true;
      continue;
    }
    if (!arg.startsWith('-')) {
      words.push(arg);
      continue;
    }
    const eq = arg.indexOf('=');
    const name = arg.slice(0, eq === -1 ? undefined : eq);
    if (name !== '--data-dir' && name !== '--node' && name !== '--group') return usage(`unknown option ${name} for recover (it takes --data-dir, --node, --group, --all)`);
    const value = eq !== -1 ? arg.slice(eq + 1) : argv[++i];
    if (value === undefined || value === '') return usage(`${name} needs a value`);
    if (name === '--data-dir') dataDir = value;
    else if (name === '--node') node = value;
    else groups.push(value);
  }
  const [sub, ...rest] = words;
  if (sub !== 'list' && sub !== 'force') return usage(`unknown recover command ${JSON.stringify(sub ?? '')}: list or force`);
  if (rest.length > 0) return usage(`unexpected argument ${JSON.stringify(rest[0])} for recover ${sub}`);
  if (dataDir === undefined) return usage(`recover ${sub} needs --data-dir DIR, the stopped node's data directory`);
  if (sub === 'list') {
    if (node !== undefined || groups.length > 0 || all) return usage('recover list takes only --data-dir');
    return { kind: 'offline', command: { kind: 'recover-list', dataDir } };
  }
  if (node === undefined) return usage("recover force needs --node NAME, the stopped node's name (SERVICE_NODE_NAME)");
  if (all === (groups.length > 0)) return usage('recover force needs either --group GROUP (repeatable) or --all');
  return { kind: 'offline', command: { kind: 'recover-force', dataDir, node, groups: all ? 'all' : groups } };
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value === '' ? undefined : value;
}
