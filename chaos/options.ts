// Command-line options of the chaos runner, parsed and checked here (pure): one line naming
// the option on a bad value.
import { NEMESIS_KINDS, type NemesisKind, isNemesisKind } from './nemesis/schedule.js';

/**
 * keys: API keys through the metadata group. register: a few documents of a replicated vector
 * collection written and read as registers (linearizability). set: documents added and
 * deleted, then every node's view of the whole set after healing. cas: a few documents of a
 * clustered VDB and as many `_local` documents (replication checkpoints), read and updated by
 * compare-and-set on their revision (linearizability). `--rebalance true` splits and merges the
 * VDB's shards (cas), or reshards the collection (register, set), all along.
 */
export const WORKLOADS = ['keys', 'register', 'set', 'cas'] as const;
export type Workload = (typeof WORKLOADS)[number];

export interface ChaosOptions {
  seed: number;
  minutes: number;
  nodes: number;
  workload: Workload;
  nemeses: NemesisKind[];
  clients: number;
  /** Keep a majority alive and connected at every instant (default true). */
  keepQuorum: boolean;
  /** Where the JSON report goes. */
  out: string;
  /** Bound on waiting for convergence after healing. */
  convergeSeconds: number;
  /** Run nodes with a deliberately broken guarantee (a test fixture) to show the checker can fail. */
  broken?: BrokenFixture;
  /** Each phase's hard bound times this (default 1; a test shrinks it to see a bound fire). */
  boundScale: number;
  /** Split and merge the cas VDB's shards, or reshard the register and set workloads' collection, all along, one job at a time (default false). */
  rebalance: boolean;
  /**
   * The set workload's keyword index (its documents have text, checked by chaos/checker/bm25.ts):
   * `seed` (default) picks the memory backend for an even seed and the disk backend for an odd one.
   */
  bm25: Bm25Choice;
}

export const BM25_CHOICES = ['seed', 'memory', 'disk', 'none'] as const;
export type Bm25Choice = (typeof BM25_CHOICES)[number];

/** The set workload's collection's `bm25_backend`. */
export function bm25Backend(o: Pick<ChaosOptions, 'bm25' | 'seed'>): 'memory' | 'disk' | 'none' {
  if (o.bm25 !== 'seed') return o.bm25;
  return o.seed % 2 === 0 ? 'memory' : 'disk';
}

/**
 * stale-keys: nodes accept cluster keys from a stale copy and acknowledge revokes at commit.
 * stale-reads: vector shard reads and VDB document reads are served by any replica without a
 * ReadIndex round. lost-checkpoints: a VDB split or merge leaves the moving range's `_local`
 * documents behind (with `--workload cas --rebalance true`). bm25-kept-deletes: a replica's
 * keyword index keeps a deleted document's postings (with `--workload set`). feed-skips: a
 * clustered VDB's `_changes` page leaves out its last change, its cursor past it (with
 * `--workload cas`).
 */
export const BROKEN_FIXTURES = ['stale-keys', 'stale-reads', 'lost-checkpoints', 'bm25-kept-deletes', 'feed-skips'] as const;
export type BrokenFixture = (typeof BROKEN_FIXTURES)[number];

export const DEFAULT_CHAOS: ChaosOptions = {
  seed: 1,
  minutes: 2,
  nodes: 3,
  workload: 'keys',
  nemeses: ['kill', 'partition'],
  clients: 4,
  keepQuorum: true,
  out: 'data/chaos',
  convergeSeconds: 60,
  boundScale: 1,
  rebalance: false,
  bm25: 'seed',
};

export class OptionError extends Error {}

export function parseChaosArgs(argv: readonly string[]): ChaosOptions {
  const o: ChaosOptions = { ...DEFAULT_CHAOS, nemeses: [...DEFAULT_CHAOS.nemeses] };
  const num = (name: string, raw: string | undefined, min: number, max: number, integer = true): number => {
    const n = Number(raw);
    if (raw === undefined || raw.trim() === '' || !Number.isFinite(n) || n < min || n > max || (integer && !Number.isInteger(n))) {
      throw new OptionError(`--${name} must be ${integer ? 'an integer' : 'a number'} from ${min} to ${max}, got ${JSON.stringify(raw ?? '')}`);
    }
    return n;
  };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    const eq = arg.indexOf('=');
    const name = (eq === -1 ? arg : arg.slice(0, eq)).replace(/^--/, '');
    const value = eq === -1 ? argv[++i] : arg.slice(eq + 1);
    switch (name) {
      case 'seed':
        o.seed = num(name, value, 0, 2 ** 31 - 1);
        break;
      case 'minutes':
        o.minutes = num(name, value, 0.1, 24 * 60, false);
        break;
      case 'nodes':
        o.nodes = num(name, value, 3, 9);
        break;
      case 'clients':
        o.clients = num(name, value, 1, 64);
        break;
      case 'converge-seconds':
        o.convergeSeconds = num(name, value, 5, 3600);
        break;
      case 'workload':
        if (!(WORKLOADS as readonly string[]).includes(value ?? '')) throw new OptionError(`--workload must be one of ${WORKLOADS.join(', ')}, got ${JSON.stringify(value ?? '')}`);
        o.workload = value as Workload;
        break;
      case 'nemesis': {
        const kinds = (value ?? '').split(',').map((k) => k.trim()).filter((k) => k !== '');
        const bad = kinds.filter((k) => !isNemesisKind(k));
        if (kinds.length === 0 || bad.length > 0) throw new OptionError(`--nemesis takes a comma list of ${NEMESIS_KINDS.join(', ')}; bad: ${JSON.stringify(bad.join(',') || value || '')}`);
        o.nemeses = kinds as NemesisKind[];
        break;
      }
      case 'keep-quorum':
        if (value !== 'true' && value !== 'false') throw new OptionError(`--keep-quorum must be true or false, got ${JSON.stringify(value ?? '')}`);
        o.keepQuorum = value === 'true';
        break;
      case 'rebalance':
        if (value !== 'true' && value !== 'false') throw new OptionError(`--rebalance must be true or false, got ${JSON.stringify(value ?? '')}`);
        o.rebalance = value === 'true';
        break;
      case 'broken':
        if (!(BROKEN_FIXTURES as readonly string[]).includes(value ?? '')) throw new OptionError(`--broken must be one of ${BROKEN_FIXTURES.join(', ')}, got ${JSON.stringify(value ?? '')}`);
        o.broken = value as BrokenFixture;
        break;
      case 'bm25':
        if (!(BM25_CHOICES as readonly string[]).includes(value ?? '')) throw new OptionError(`--bm25 must be one of ${BM25_CHOICES.join(', ')}, got ${JSON.stringify(value ?? '')}`);
        o.bm25 = value as Bm25Choice;
        break;
      case 'bound-scale':
        o.boundScale = num(name, value, 0.0001, 1, false);
        break;
      case 'out':
        if (value === undefined || value === '') throw new OptionError('--out needs a directory');
        o.out = value;
        break;
      default:
        throw new OptionError(`unknown option ${arg} (options: --seed --minutes --nodes --workload --nemesis --clients --keep-quorum --rebalance --out --converge-seconds --broken --bound-scale --bm25)`);
    }
  }
  if (o.rebalance && o.workload === 'keys') throw new OptionError('--rebalance splits and merges the cas workload\'s VDB or reshards the register and set workloads\' collection: the keys workload has neither');
  if (o.bm25 !== 'seed' && o.workload !== 'set') throw new OptionError('--bm25 chooses the keyword index of the set workload\'s documents: only that workload has text');
  return o;
}
