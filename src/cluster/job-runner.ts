// What every job of the metadata group (online reshard, VDB split and merge) needs around its
// steps: run only on the metadata leader, and only after a takeover delay, so a deposed leader
// that still believes it leads has finished its last write before a new one starts; run each
// job once per node; retry a failed step with backoff; end the job on a fatal error; stop
// when leadership or the node goes.
import type { Logger } from 'pino';
import { type Backoff, nominalDelayMs } from '../core/backoff.js';
import { FirkinError, isFirkinError } from '../core/errors.js';
import type { Job } from './meta-state.js';
import { isReshardEnded } from './meta-state.js';
import type { ClusterMember } from './member.js';

/** An error that ends the job (`failed`), as opposed to one a retry can get past. */
export class FatalJobError extends Error {}

/** Retries of a failed step: 200 ms doubling to 5 s. */
const STEP_BACKOFF: Backoff = { baseMs: 200, capMs: 5_000 };

export interface JobSteps {
  /** Runs the job's current step; `ended` once the job reached an end state. */
  step(jobId: string): Promise<'next' | 'ended'>;
  /** Records the job as failed with this message. */
  fail(jobId: string, message: string): Promise<void>;
  /** Records the last error of a step that will be retried. */
  noteError(jobId: string, message: string): Promise<void>;
}

export interface JobRunnerOptions {
  member: ClusterMember;
  log: Logger;
  kind: Job['kind'];
  /** For the logs: "reshard", "VDB rebalance". */
  what: string;
}

export class MetadataJobRunner {
  readonly #o: JobRunnerOptions;
  readonly #running = new Set<string>();
  #steps: JobSteps | undefined;
  #leaderSinceMs: number | undefined;
  #closed = false;

  constructor(o: JobRunnerOptions) {
    this.#o = o;
  }

  /** The coordinator whose steps this runs (set once, after both are built). */
  drive(steps: JobSteps): void {
    this.#steps = steps;
  }

  get closed(): boolean {
    return this.#closed;
  }

  /** Longer than a deposed leader can go on believing it leads and finish a write. */
  get #takeoverMs(): number {
    const t = this.#o.member.timings;
    return 2 * t.electionTicks * t.tickMs + t.proposalTimeoutMs;
  }

  /** Called periodically: on the metadata leader, run the jobs of this kind nobody runs here yet. */
  tick(): void {
    const { member } = this.#o;
    if (this.#closed || !member.isLeader()) {
      this.#leaderSinceMs = undefined;
      return;
    }
    this.#leaderSinceMs ??= Date.now();
    if (Date.now() - this.#leaderSinceMs < this.#takeoverMs) return;
    for (const job of Object.values(member.state.jobs)) {
      if (job.kind !== this.#o.kind || isReshardEnded(job.step) || this.#running.has(job.id)) continue;
      this.#running.add(job.id);
      void this.#run(job.id).finally(() => this.#running.delete(job.id));
    }
  }

  close(): void {
    this.#closed = true;
  }

  /** Still the one to run jobs: the metadata leader, not closing. */
  check(): void {
    if (this.#closed) throw new FirkinError('unavailable', 'the node is closing');
    if (!this.#o.member.isLeader()) throw new FirkinError('not_leader', 'this node no longer leads the metadata group');
  }

  /**
   * Ends the job `failed`. Until that sticks (a group it must undo a fence on, or the metadata,
   * cannot be reached yet), it is asked again with backoff: a job that ended with a fence up
   * would leave what it moves refusing writes for good. Stops when leadership or the node goes
   * (the next leader runs the job, whose step fails it again).
   */
  async #fail(jobId: string, message: string): Promise<void> {
    const { log, member, what } = this.#o;
    for (let attempt = 1; ; attempt++) {
      try {
        this.check();
        if (isReshardEnded(member.state.jobs[jobId]?.step ?? 'done')) return;
        await this.#steps!.fail(jobId, message);
        return;
      } catch (err) {
        if (this.#closed || !member.isLeader()) return;
        const delay = nominalDelayMs(attempt, STEP_BACKOFF);
        log.warn({ job: jobId, attempt, delayMs: delay, err: (err as Error).message }, `${what} could not be ended as failed yet; retrying`);
        await this.#steps!.noteError(jobId, (err as Error).message).catch(() => undefined);
        await new Promise((r) => setTimeout(r, delay));
      }
    }
  }

  async #run(jobId: string): Promise<void> {
    const { log, member, what } = this.#o;
    const steps = this.#steps;
    if (steps === undefined) throw new Error(`${what} runner has no steps to drive`);
    for (let attempt = 1; ; attempt++) {
      try {
        this.check();
        if ((await steps.step(jobId)) === 'ended') return;
        attempt = 0;
      } catch (err) {
        if (err instanceof FatalJobError) {
          log.error({ job: jobId, err: err.message }, `${what} failed`);
          await this.#fail(jobId, err.message);
          return;
        }
        if (isFirkinError(err) && err.code === 'not_leader' && !member.isLeader()) return; // the new leader resumes it
        if (this.#closed) return;
        const delay = nominalDelayMs(attempt, STEP_BACKOFF);
        log.warn({ job: jobId, attempt, delayMs: delay, err: (err as Error).message }, `${what} step failed; retrying`);
        await steps.noteError(jobId, (err as Error).message).catch(() => undefined);
        await new Promise((r) => setTimeout(r, delay));
      }
    }
  }
}
