// The time bound on a reshard's or a VDB split's or merge's switch, shared by both
// coordinators (cluster/reshard.ts, cluster/vdb-rebalance.ts). A switch fences the old shards,
// drains what they took, then flips the map in one metadata entry; writes to what moves wait
// meanwhile. One that is not done `timeoutMs` after its first fence is rolled back: the
// metadata takes the job back to catching_up (only while that attempt is the one switching),
// then the fences are lifted, and the next attempt waits a backoff that doubles with each
// rollback. Each attempt has a number that only grows across the cluster's jobs (the
// metadata applied index when the job entered switching), carried by its fence, lift and
// switch entries, so a proposal that commits long after its proposer gave up on it cannot
// undo a later attempt's.

import type { Logger } from 'pino';
import { FatalJobError } from './job-runner.js';
import type { ClusterMember } from './member.js';
import { type Job, isReshardEnded } from './meta-state.js';
import { protocolShortfall } from './versions.js';

/** Numbered fences, lifts and rollbacks: an older member could not decode them. */
export const SWITCH_ROLLBACK_PROTOCOL = 7;
/** Switch attempts before the job fails (the old shards serving). */
export const SWITCH_ATTEMPTS_MAX = 20;
/** The wait before a switch's next attempt is at most this. */
const SWITCH_BACKOFF_CAP_MS = 5 * 60_000;

/**
 * The switch ran out of time (its fences are to be lifted). `abandoned`: the drain it gave up
 * on, still running; wait for it to settle after the lift, before the job goes on, so no two
 * replays of one source ever run at once.
 */
export class SwitchTimeout extends Error {
  constructor(
    message: string,
    readonly abandoned?: Promise<unknown>,
  ) {
    super(message);
  }
}

/**
 * The number of a switch attempt about to start: the metadata applied index now, past every
 * earlier attempt's rollback or end. Undefined (and logged) while a member is older than
 * protocol 7: a switch of the builds before it, with no time bound. `what`: "a reshard's".
 */
export function newSwitchAttempt(member: ClusterMember, log: Logger, what: string): number | undefined {
  const shortfall = protocolShortfall(member.liveNodes(), SWITCH_ROLLBACK_PROTOCOL, `rolling back ${what} switch that runs out of time`);
  if (shortfall === undefined) return member.groupStatus().applied;
  log.warn(`${shortfall}; ${what} switch has no time bound`);
  return undefined;
}

/** What a failing job's switch state needs undone before the job may end. */
export interface SwitchUndo {
  /** The job is switching in this attempt: its fences may be up. */
  readonly switchingAttempt: number | undefined;
  /** A rollback's fences are still being lifted. */
  readonly lifting: boolean;
}

/**
 * Before a job ends `failed`, no fence of it may stay up: nobody would lift it after, and what
 * moves would refuse writes for good. Rolls back the attempt switching, or finishes a lift.
 * A failure to reach a group is thrown (the job must not end yet; the runner asks again); a
 * FatalJobError means the collection, VDB or shards are gone, and with them every fence.
 */
export async function undoSwitchBeforeFailing(undo: SwitchUndo, rollBack: (attempt: number) => Promise<void>, lift: () => Promise<void>): Promise<void> {
  try {
    if (undo.switchingAttempt !== undefined) await rollBack(undo.switchingAttempt);
    else if (undo.lifting) await lift();
  } catch (err) {
    if (!(err instanceof FatalJobError)) throw err;
  }
}

/** A job's record of its rollbacks (a reshard's or a VDB split's or merge's detail). */
export interface RollbackRecord {
  readonly rollbacks?: number;
  readonly rolledBackAtMs?: number;
  readonly error?: string;
}

/**
 * After a rollback, the next attempt waits its backoff, catching up meanwhile (`catchUp`
 * answers false to stop waiting: a cancel came). A FatalJobError once SWITCH_ATTEMPTS_MAX
 * switches were rolled back; `serving` and `again` complete its message. False when stopped.
 */
export async function awaitNextAttempt(record: () => RollbackRecord, timeoutMs: number, words: { serving: string; again: string }, catchUp: () => Promise<boolean>): Promise<boolean> {
  const r = record();
  const rollbacks = r.rollbacks ?? 0;
  if (rollbacks === 0) return true;
  if (rollbacks >= SWITCH_ATTEMPTS_MAX) throw new FatalJobError(`the switch was rolled back ${rollbacks} times (last: ${r.error ?? 'no reason recorded'}); ${words.serving}. Start ${words.again} again once the cluster is healthy`);
  const readyAt = nextAttemptAt(r.rolledBackAtMs ?? 0, rollbacks, timeoutMs);
  while (Date.now() < readyAt) {
    await new Promise((resolve) => setTimeout(resolve, Math.min(1_000, readyAt - Date.now())));
    if (!(await catchUp())) return false;
  }
  return true;
}

/** When the attempt after `rollbacks` rollbacks may start: the timeout doubled per rollback, capped. */
export function nextAttemptAt(rolledBackAtMs: number, rollbacks: number, timeoutMs: number): number {
  return rolledBackAtMs + Math.min(SWITCH_BACKOFF_CAP_MS, timeoutMs * 2 ** Math.max(0, rollbacks - 1));
}

/** When each switch attempt (job and number) fenced first on this node: its deadline holds across retries of the step. */
export class SwitchDeadlines {
  readonly #since = new Map<string, number>();

  constructor(private readonly timeoutMs: number) {}

  /** The attempt's deadline, counted from the first time it was asked for. */
  deadline(jobId: string, attempt: number, nowMs: number): number {
    const key = `${jobId}/${attempt}`;
    const since = this.#since.get(key) ?? nowMs;
    this.#since.set(key, since);
    return since + this.timeoutMs;
  }

  /** The attempt switched or was rolled back. */
  forget(jobId: string, attempt: number): void {
    this.#since.delete(`${jobId}/${attempt}`);
  }

  /**
   * Runs an attempt's fence-and-switch by its deadline. Past it (SwitchTimeout): `rollBack`,
   * then wait for the drain given up on (it stops at its next step, past its deadline), so the
   * job's next step never runs beside it. Any other failure is the step's (retried by the
   * runner, the deadline standing).
   */
  async run(jobId: string, attempt: number, switchBy: (deadline: number) => Promise<void>, rollBack: (timeout: SwitchTimeout) => Promise<void>): Promise<void> {
    try {
      await switchBy(this.deadline(jobId, attempt, Date.now()));
      this.forget(jobId, attempt);
    } catch (err) {
      if (!(err instanceof SwitchTimeout)) throw err;
      this.forget(jobId, attempt);
      await rollBack(err);
      await err.abandoned?.catch(() => undefined);
    }
  }
}

/** `work`, or SwitchTimeout when the deadline comes first (the work itself goes on, unawaited). */
export async function raceDeadline(work: Promise<unknown>, deadline: number, what: () => string): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new SwitchTimeout(what(), work)), Math.max(0, deadline - Date.now()));
  });
  work.catch(() => undefined); // an abandoned drain's failure is nobody's
  try {
    await Promise.race([work, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Rolled-back switches of the running or last job of this kind on `target` whose fences are
 * lifted: a router waiting on a fence runs again on the old map once this grows.
 */
export function liftedRollbacks(jobs: Readonly<Record<string, Job>>, kind: 'reshard' | 'vdb-rebalance', target: string): number {
  let n = 0;
  for (const j of Object.values(jobs)) {
    const d = kind === 'reshard' ? j.reshard : j.vdb;
    if (j.kind === kind && j.target === target && d !== undefined && d.lifting !== true) n = Math.max(n, d.rollbacks ?? 0);
  }
  return n;
}

/**
 * For /health: each running reshard, split or merge whose switch was rolled back (the cluster
 * could not finish one in time: a new group without a majority, a crawling link). VDB jobs
 * only where `mayReadVdb` allows.
 */
export function switchRollbackProblems(jobs: Readonly<Record<string, Job>>, mayReadVdb: (name: string) => boolean): string[] {
  const out: string[] = [];
  for (const j of Object.values(jobs)) {
    const d = j.kind === 'reshard' ? j.reshard : j.kind === 'vdb-rebalance' ? j.vdb : undefined;
    if (d === undefined || isReshardEnded(j.step) || (d.rollbacks ?? 0) === 0) continue;
    if (j.kind === 'vdb-rebalance' && !mayReadVdb(j.target)) continue;
    const what = j.kind === 'reshard' ? `the reshard of collection ${JSON.stringify(j.target)}` : `the ${j.vdb!.op} of VDB ${JSON.stringify(j.target)} shard ${j.vdb!.source}`;
    out.push(`${what} could not switch in time ${d.rollbacks === 1 ? 'once' : `${d.rollbacks} times`} and was rolled back (last: ${d.error ?? 'no reason recorded'}); it tries again after a backoff, the old shards serving meanwhile`);
  }
  return out;
}
