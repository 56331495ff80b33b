// What a find read, for CouchDB's `execution_stats`: counted by the executor, summed over
// shards, shown only when asked. Pure.
export interface FindStats {
  /** Index entries read (path postings, or documents in id order for a full scan). */
  keysExamined: number;
  /** Documents read to answer (their records, and bodies where the selector needs them). */
  docsExamined: number;
}

/** Several shards' or members' stats as one (a missing one counts nothing). */
export function sumStats(parts: readonly (FindStats | undefined)[]): FindStats {
  const out: FindStats = { keysExamined: 0, docsExamined: 0 };
  for (const p of parts) {
    out.keysExamined += p?.keysExamined ?? 0;
    out.docsExamined += p?.docsExamined ?? 0;
  }
  return out;
}

/**
 * A find's answer as HTTP returns it: the stats only under CouchDB's `execution_stats`, with
 * the time the caller measured around the whole request.
 */
export function findAnswer<T extends { docs: readonly unknown[]; stats: FindStats }>(result: T, wanted: boolean, elapsedMs: number): Omit<T, 'stats'> & { execution_stats?: Record<string, number> } {
  const { stats, ...answer } = result;
  if (!wanted) return answer;
  return {
    ...answer,
    execution_stats: {
      total_keys_examined: stats.keysExamined,
      total_docs_examined: stats.docsExamined,
      total_quorum_docs_examined: 0,
      results_returned: result.docs.length,
      execution_time_ms: Math.round(elapsedMs * 1000) / 1000,
    },
  };
}

/** Stats from another node's reply, when it sent them (an older node does not). */
export function statsOf(value: unknown): FindStats | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const { keysExamined, docsExamined } = value as Record<string, unknown>;
  return typeof keysExamined === 'number' && typeof docsExamined === 'number' ? { keysExamined, docsExamined } : undefined;
}
