// Which failures of a step retried every round deserve a log line: the first of a run of
// failures, then one per `everyMs` while it goes on (saying how many were not logged), so a
// node cut off for minutes does not write a warning every heartbeat. Pure: the caller passes
// the time and the logger.
import type { Logger } from 'pino';

/** How often a step that fails every round is reported (its other failures go to debug). */
export const REPEATED_FAILURE_LOG_MS = 30_000;

export class RepeatedFailures {
  readonly #runs = new Map<string, { loggedAtMs: number; unlogged: number }>();

  constructor(readonly everyMs: number) {}

  /**
   * A failure of `key` at `nowMs`. Returns undefined when it should not be logged, else how
   * many failures of this run were not logged since the last line.
   */
  failed(key: string, nowMs: number): number | undefined {
    const run = this.#runs.get(key);
    if (run === undefined) {
      this.#runs.set(key, { loggedAtMs: nowMs, unlogged: 0 });
      return 0;
    }
    if (nowMs - run.loggedAtMs < this.everyMs) {
      run.unlogged++;
      return undefined;
    }
    const unlogged = run.unlogged;
    run.loggedAtMs = nowMs;
    run.unlogged = 0;
    return unlogged;
  }

  /** `key` worked: its run of failures (if any) ended. Returns whether there was one. */
  succeeded(key: string): boolean {
    return this.#runs.delete(key);
  }

  /** Log a failure of `key`: at warn when `failed` says so (with the count not logged), else at debug. */
  logFailure(log: Logger, key: string, nowMs: number, fields: Record<string, unknown>, msg: string): void {
    const unlogged = this.failed(key, nowMs);
    if (unlogged === undefined) log.debug(fields, msg);
    else if (unlogged === 0) log.warn(fields, msg);
    else log.warn({ ...fields, unlogged }, `${msg} (${unlogged} more failures of it since the last report)`);
  }

}
