// What a find read, for CouchDB's `execution_stats` (counted by the executor, summed over
// shards, shown only when asked) and its `warning` (a selector no index could narrow). Pure.
export interface FindStats {
  /** Index entries read (path postings, or documents in id order for a full scan). */
  keysExamined: number;
  /** Documents read to answer (their records, and bodies where the selector needs them). */
  docsExamined: number;
  /** Why every document was read, when a selector with conditions could use no index. */
  fullScan?: string;
}

/** Several shards' or members' stats as one (a missing one counts nothing). */
export function sumStats(parts: readonly (FindStats | undefined)[]): FindStats {
  const out: FindStats = { keysExamined: 0, docsExamined: 0 };
  for (const p of parts) {
    out.keysExamined += p?.keysExamined ?? 0;
    out.docsExamined += p?.docsExamined ?? 0;
    if (out.fullScan === undefined && p?.fullScan !== undefined) out.fullScan = p.fullScan;
  }
  return out;
}

/**
 * A find's answer as HTTP returns it: the stats only under CouchDB's `execution_stats`, with
 * the time the caller measured around the whole request.
 */
export function findAnswer<T extends { docs: readonly unknown[]; stats: FindStats }>(
  result: T,
  wanted: boolean,
  elapsedMs: number,
): Omit<T, 'stats'> & { warning?: string; execution_stats?: Record<string, number> } {
  const { stats, ...rest } = result;
  const answer = stats.fullScan === undefined ? rest : { ...rest, warning: fullScanWarning(`(${stats.fullScan}): every document was read`) };
  return wanted ? { ...answer, execution_stats: executionStats(stats, result.docs.length, elapsedMs) } : answer;
}

/**
 * CouchDB's `warning` (PouchDB shows it) for a selector no index could narrow: here every
 * field is indexed, so it says why none helped (`what`: where, and what was read).
 */
export function fullScanWarning(what: string): string {
  return `no index could narrow this selector ${what}; a condition on a field (equality, range, $in, $exists, $prefix, $regex) lets one`;
}

/** CouchDB's `execution_stats`, with the time the caller measured around the whole request. */
export function executionStats(stats: FindStats, returned: number, elapsedMs: number): Record<string, number> {
  return {
    total_keys_examined: stats.keysExamined,
    total_docs_examined: stats.docsExamined,
    total_quorum_docs_examined: 0,
    results_returned: returned,
    execution_time_ms: Math.round(elapsedMs * 1000) / 1000,
  };
}

/** Stats from another node's reply, when it sent them (an older node does not). */
export function statsOf(value: unknown): FindStats | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const { keysExamined, docsExamined, fullScan } = value as Record<string, unknown>;
  if (typeof keysExamined !== 'number' || typeof docsExamined !== 'number') return undefined;
  return typeof fullScan === 'string' ? { keysExamined, docsExamined, fullScan } : { keysExamined, docsExamined };
}
