// `_import` of a VDB, whichever serves it (node-local shards or the cluster's): the live
// documents of a local database, filtered, in batches handed to `writeBatch`, with counts and
// progress logs. How a batch is written (and what a conflict means) is the caller's. While it
// runs it is listed in `spec.tasks` (`_active_tasks`), its counts updated after every document
// read and every batch written.
import type { Logger } from 'pino';
import type { Clock } from '../../core/hlc.js';
import type { DocEngine } from '../engine.js';
import { matches } from '../query/match.js';
import type { ImportSpec } from './service.js';

export interface ImportCounts {
  docs_read: number;
  docs_written: number;
  docs_skipped: number;
  errors: number;
}

/** `cancelled`: stopped by `DELETE /vdb/:vdb/_import` (what was written stays). */
export type ImportStatus = 'completed' | 'failed' | 'cancelled';

export async function runImport(
  o: { docs: Pick<DocEngine, 'allDocs' | 'dbInfo'>; log: Logger; clock: Clock; vdb: string; spec: ImportSpec },
  writeBatch: (docs: Record<string, unknown>[], counts: ImportCounts) => Promise<void>,
): Promise<ImportCounts & { started_at: number; finished_at: number; status: ImportStatus }> {
  const { docs, log, clock, vdb, spec } = o;
  const docsTotal = docs.dbInfo(spec.sourceDb).doc_count; // not_found when there is no source
  const startedAt = clock.nowMs();
  const counts: ImportCounts = { docs_read: 0, docs_written: 0, docs_skipped: 0, errors: 0 };
  const task = spec.tasks.start({ vdb, sourceDb: spec.sourceDb, onConflict: spec.onConflict, batchSize: spec.batchSize, docsTotal });
  let batch: Record<string, unknown>[] = [];
  const flush = async () => {
    if (batch.length === 0) return;
    const next = batch;
    batch = [];
    await writeBatch(next, counts);
    spec.tasks.update(task.id, counts);
    log.info({ vdb, source: spec.sourceDb, ...counts }, 'import progress');
  };
  let status: ImportStatus = 'completed';
  const stop = spec.tasks.signal(task.id);
  try {
    for await (const row of docs.allDocs(spec.sourceDb, { inclusiveEnd: true, skip: 0, descending: false, includeDocs: true })) {
      // Cancelled: stop before the next document; the batch being gathered is not written.
      if (stop.aborted) {
        status = 'cancelled';
        break;
      }
      counts.docs_read++;
      const doc = row.doc as Record<string, unknown> | undefined;
      if (doc !== undefined && doc !== null) {
        if (spec.filter !== undefined && !matches({ ...doc, _id: row.key } as never, spec.filter.where)) counts.docs_skipped++;
        else {
          batch.push(doc);
          if (batch.length >= spec.batchSize) await flush();
        }
      }
      // Per document, not per batch: a filter that skips most of them still shows progress.
      spec.tasks.update(task.id, counts);
    }
    if (status === 'cancelled') {
      log.info({ vdb, source: spec.sourceDb, ...counts }, 'import cancelled');
    } else {
      await flush();
    }
  } catch (err) {
    status = 'failed';
    log.error({ err, vdb }, 'import failed');
  } finally {
    spec.tasks.end(task.id);
  }
  return { ...counts, started_at: startedAt, finished_at: clock.nowMs(), status };
}
