// The VDB imports running on this node, as `GET /_active_tasks` lists them (CouchDB's
// `vdb_import` entry). No I/O and no clock of its own: `runImport` reports to it, the route
// reads it. An import runs inside its request, so this node is the only one that knows of it.
import type { Clock } from '../../core/hlc.js';
import type { ImportCounts } from './import.js';
import type { ImportSpec } from './service.js';

/** What an import is when it starts. */
export interface ImportTaskStart {
  readonly vdb: string;
  readonly sourceDb: string;
  readonly onConflict: ImportSpec['onConflict'];
  readonly batchSize: number;
  /** The source database's documents when the import started (its record's count: no scan). */
  readonly docsTotal: number;
}

/** A running import, as it was at `updatedMs`. */
export interface ImportTask extends ImportTaskStart {
  readonly id: number;
  readonly counts: Readonly<ImportCounts>;
  /** `docs_read` of `docsTotal` in percent, 0-99: never back, and 100 only as the answer. */
  readonly progress: number;
  readonly startedMs: number;
  readonly updatedMs: number;
}

/**
 * Documents written to the source meanwhile may take `docs_read` past the count it started
 * with: the percentage stops at 99 until the import answers.
 */
function progressOf(docsRead: number, docsTotal: number): number {
  return docsTotal === 0 ? 0 : Math.min(99, Math.floor((100 * docsRead) / docsTotal));
}

export class ImportTasks {
  readonly #clock: Clock;
  /** By id, in the order they started: the last snapshot, and what `cancel` aborts (the import stops before its next document). */
  readonly #running = new Map<number, { task: ImportTask; readonly stop: AbortController }>();
  #lastId = 0;

  constructor(clock: Clock) {
    this.#clock = clock;
  }

  start(start: ImportTaskStart): ImportTask {
    const nowMs = this.#clock.nowMs();
    const counts = { docs_read: 0, docs_written: 0, docs_skipped: 0, errors: 0 };
    const task: ImportTask = { ...start, id: ++this.#lastId, counts, progress: 0, startedMs: nowMs, updatedMs: nowMs };
    this.#running.set(task.id, { task, stop: new AbortController() });
    return task;
  }

  /** Aborted once the import is cancelled. */
  signal(id: number): AbortSignal {
    return this.#get(id).stop.signal;
  }

  /** Cancels the imports of `vdb` running here; how many. */
  cancel(vdb: string): number {
    let cancelled = 0;
    for (const { task, stop } of this.#running.values()) {
      if (task.vdb !== vdb || stop.signal.aborted) continue;
      stop.abort();
      cancelled++;
    }
    return cancelled;
  }

  /** The counts so far; they only grow, as `runImport` counts. */
  update(id: number, counts: Readonly<ImportCounts>): ImportTask {
    const entry = this.#get(id);
    const { task } = entry;
    // Progress never goes back, whatever a caller reports.
    const progress = Math.max(task.progress, progressOf(counts.docs_read, task.docsTotal));
    entry.task = { ...task, counts: { ...counts }, progress, updatedMs: Math.max(task.updatedMs, this.#clock.nowMs()) };
    return entry.task;
  }

  /** The import answered (or failed): off the list; its last snapshot. */
  end(id: number): ImportTask {
    const { task } = this.#get(id);
    this.#running.delete(id);
    return task;
  }

  /** The imports running now, oldest first. */
  list(): ImportTask[] {
    return [...this.#running.values()].map((e) => e.task);
  }

  #get(id: number): { task: ImportTask; readonly stop: AbortController } {
    const entry = this.#running.get(id);
    if (entry === undefined) throw new Error(`import task ${id} is not running (ended twice, or never started)`);
    return entry;
  }
}
