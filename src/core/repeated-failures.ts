// Which failures of a step retried every round deserve a log line: at most one per key per
// `everyMs`, saying how many were not logged since the last line, so a node cut off for
// minutes does not write a warning every heartbeat. A success does not reset it: a probe that
// rotates over peers, one of them down, fails every other round. Pure: the caller passes the
// time and the logger.
import type { Logger } from 'pino';

/** How often a step that fails every round is reported (its other failures go to debug). */
export const REPEATED_FAILURE_LOG_MS = 30_000;

export class RepeatedFailures {
  readonly #lines = new Map<string, { loggedAtMs: number; unlogged: number }>();

  constructor(readonly everyMs: number) {}

  /**
   * A failure of `key` at `nowMs`. Returns undefined when it should not be logged, else how
   * many failures of `key` were not logged since its last line.
   */
  failed(key: string, nowMs: number): number | undefined {
    const line = this.#lines.get(key);
    if (line !== undefined && nowMs - line.loggedAtMs < this.everyMs) {
      line.unlogged++;
      return undefined;
    }
    this.#lines.set(key, { loggedAtMs: nowMs, unlogged: 0 });
    return line?.unlogged ?? 0;
  }

  /** Log a failure of `key`: at warn when `failed` says so (with the count not logged), else at debug. */
  logFailure(log: Logger, key: string, nowMs: number, fields: Record<string, unknown>, msg: string): void {
    const unlogged = this.failed(key, nowMs);
    if (unlogged === undefined) log.debug(fields, msg);
    else if (unlogged === 0) log.warn(fields, msg);
    else log.warn({ ...fields, unlogged }, `${msg} (${unlogged} more failures of it since the last report)`);
  }
}
