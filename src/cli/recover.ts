// `firkin recover`: the offline half of the CLI. It opens a stopped node's data directory,
// reads its Raft groups (raft/rocks-log.ts) and writes what raft/recover.ts plans. Loaded only
// for these commands, so the HTTP commands never load RocksDB.
import { existsSync } from 'node:fs';
import path from 'node:path';
import type { RecoverCommand } from './args.js';
import { CliFailure, EXIT_FAILED } from './failure.js';
import { formatTable } from './table.js';
import { RocksLog } from '../raft/rocks-log.js';
import { type StoredLog, planSoleVoter, summarizeLog } from '../raft/recover.js';
import { Store } from '../storage/db.js';

export async function runRecover(command: RecoverCommand): Promise<{ out: string; exitCode: number }> {
  const dir = command.dataDir;
  // RocksDB would create a database in a mistyped path: refuse one that holds none.
  if (!existsSync(path.join(dir, 'CURRENT'))) throw new CliFailure('not_found', `${dir} holds no Firkin data directory (no RocksDB CURRENT file)`, EXIT_FAILED);
  let store: Store;
  try {
    store = await Store.open(dir);
  } catch (err) {
    // RocksDB's own words sit at the end of the cause chain ("IO error: While lock file: …").
    let cause: unknown = err;
    while (cause instanceof Error && cause.cause instanceof Error) cause = cause.cause;
    const message = (cause as Error).message;
    if (/\block\b/i.test(message)) throw new CliFailure('unavailable', `${dir} is in use: stop the node first (${message})`, EXIT_FAILED);
    throw new CliFailure('unavailable', (err as Error).message, EXIT_FAILED);
  }
  try {
    const groups = await RocksLog.groups(store);
    const logs = new Map<string, RocksLog>();
    for (const g of groups) logs.set(g, await RocksLog.open(store, g));
    return command.kind === 'recover-list' ? { out: listGroups(logs), exitCode: 0 } : await force(logs, command.node, command.groups);
  } finally {
    await store.close();
  }
}

function stored(log: RocksLog): StoredLog {
  const { snap, entryList, hardState } = log.mem;
  return { snapshotConf: snap.meta.conf, snapshotIndex: snap.meta.index, snapshotTerm: snap.meta.term, entries: entryList.filter((e) => e.index > snap.meta.index), hardState, fresh: log.fresh !== undefined };
}

function listGroups(logs: ReadonlyMap<string, RocksLog>): string {
  if (logs.size === 0) return 'no Raft group is stored here\n';
  const rows = [['GROUP', 'VOTERS', 'LEARNERS', 'TERM', 'COMMIT', 'LAST', 'STATE']];
  for (const [group, log] of logs) {
    const s = summarizeLog(stored(log));
    rows.push([group, s.conf.voters.join(',') || '-', s.conf.learners.join(',') || '-', String(s.term), String(s.commit), `${s.lastIndex}@${s.lastTerm}`, s.fresh ? 'catching up (empty)' : 'ok']);
  }
  return `${formatTable(rows).join('\n')}\n`;
}

async function force(logs: ReadonlyMap<string, RocksLog>, node: string, wanted: readonly string[] | 'all'): Promise<{ out: string; exitCode: number }> {
  const lines: string[] = [];
  let refused = 0;
  const names = wanted === 'all' ? [...logs.keys()] : wanted;
  for (const group of names) {
    const log = logs.get(group);
    if (log === undefined) {
      refused++;
      lines.push(`${group}: refused: no such group in this data directory (firkin recover list shows them)`);
      continue;
    }
    const plan = planSoleVoter(node, stored(log));
    if (plan.kind === 'refused') {
      // With --all, a group this node holds no vote in is not its to recover: said, not an error.
      if (wanted !== 'all') refused++;
      lines.push(`${group}: ${wanted === 'all' ? 'skipped' : 'refused'}: ${plan.why}`);
      continue;
    }
    if (plan.kind === 'nothing') {
      lines.push(`${group}: nothing to do: ${plan.why}`);
      continue;
    }
    await log.appendRecovered(plan.entries, plan.hardState);
    lines.push(`${group}: ${node} is now its only voter (removed ${plan.removed.join(', ')} at term ${plan.hardState.term}; everything up to index ${plan.hardState.commit} committed)`);
  }
  return { out: `${lines.join('\n')}\n`, exitCode: refused > 0 ? EXIT_FAILED : 0 };
}
