// Online reshard of a replicated vector collection, driven by the metadata log. The job lives
// in the metadata group (`reshard.*` commands); the metadata leader runs it, and a new leader
// resumes it from the recorded state.
//
//   copying      new shard groups exist (pending: hosted, not routed). Each old shard is read
//                from its leader through a snapshot transfer; the index its state covers (`from`)
//                is recorded BEFORE any document is written, then every document goes to its
//                new shard by the shared hash ranges, in bounded, rate-limited batches.
//   catching_up  each old group's committed log after `from` is replayed into the new groups,
//                each document's writes in log order (other documents' overlap), with the
//                original request ids (a retried write applies once), until every source is
//                within a few entries.
//   switching    a fence entry in each old group (writes after it are refused, on every replica
//                alike); the tail is drained up to the fence; one `reshard.switch` entry flips the
//                collection to the new groups and bumps its epoch. Routers that hit a fenced shard
//                get `stale_epoch`, wait for the new map and route again.
//                A switch not done `switchTimeoutMs` after its fences (a new group lost its
//                majority, a link crawls) is rolled back rather than left refusing writes: a
//                `reshard.rollback` entry takes the job back to catching_up (no switch of that
//                attempt can apply after it), then a lift entry in each old group ends its fence
//                (`vector/fence.ts`). The next attempt comes after a backoff that doubles with
//                each rollback; after SWITCH_ATTEMPTS_MAX the job fails, the old groups serving.
//   cleaning     the old groups are no longer placed: every node drops its replicas of them.
//   done | failed | cancelled
//
// Copy and replay are idempotent (upserts of whole documents, deletes), so a step interrupted
// by a crash is simply run again. Only one coordinator may write into the new groups: a new
// metadata leader waits `takeoverMs` (longer than an old leader can go on believing it leads
// and finish a write) before it runs a job. That is the usual lease assumption: clocks that run
// at nearly the same rate.
import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import { FirkinError } from '../core/errors.js';
import { hashId, shardFor } from '../core/shard-hash.js';
import { runInKeyOrder, settleAll } from '../core/serial.js';
import { type ShardCommand, FENCE_ENTRY, REPLAY_RUN, commandRuns, decodeShardCommand, decodeShardEntry, encodeShardCommand, fenceEntry, liftEntry, splitCommands } from '../vector/commands.js';
import type { FenceOutcome, LiftOutcome } from '../vector/fence.js';
import type { CollectionPlacement, Job, ReshardSource, ShardPlacement } from './meta-state.js';
import { isReshardEnded } from './meta-state.js';
import { FatalJobError, MetadataJobRunner } from './job-runner.js';
import type { ClusterMember } from './member.js';
import { SwitchDeadlines, SwitchTimeout, awaitNextAttempt, newSwitchAttempt, raceDeadline, undoSwitchBeforeFailing } from './switch-bound.js';
import { REPLAY_RUN_PROTOCOL, protocolShortfall } from './versions.js';

/** What the coordinator needs of the vector shard host. */
export interface ReshardShards {
  leaderCall(shard: ShardPlacement, method: string, payload: Record<string, unknown>): Promise<Record<string, unknown>>;
  /** A call to one given node (a snapshot transfer stays on the node that opened it). */
  callOn(node: string, method: string, payload: Record<string, unknown>): Promise<Record<string, unknown>>;
}

export interface ReshardOptions {
  member: ClusterMember;
  shards: ReshardShards;
  log: Logger;
  /** Documents copied per second at most (foreground traffic keeps its latency). */
  docsPerSecond: number;
  /**
   * A switch not finished this long after its first fence is rolled back, the old groups
   * serving again (SERVICE_RESHARD_SWITCH_TIMEOUT_MS): about the longest writes wait on a switch.
   */
  switchTimeoutMs: number;
  /**
   * Tests only (FIRKIN_TEST_RESHARD_SWITCH_DELAY_MS): wait this long between fencing and the
   * switch entry, so a test can kill the coordinator in the middle of a switch.
   */
  switchDelayMs?: number;
  /** Tests only (FIRKIN_TEST_RESHARD_SWITCH_STALLS): the first this many switch attempts stall past their timeout. */
  switchStalls?: number;
}

/** Replay is done when every source is within this many entries of its leader. */
const CAUGHT_UP_ENTRIES = 20;
/** Entries per tail call. */
const TAIL_BATCH = 256;
/** Replayed entries forwarded at once (entries of one document one after another). */
const FORWARDS_IN_FLIGHT = 16;

/** A request id for a replayed command that had none (its parts share it). */
const newRequestId = () => randomBytes(12).toString('base64url');

/** The documents a replayed entry writes. */
const commandIds = (c: ShardCommand): string[] => (c.kind === 'upsert' ? c.docs.map((d) => d.id) : [...c.ids]);
/** Progress is logged (and recorded) at most this often. */
const PROGRESS_EVERY_MS = 3_000;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export class ReshardCoordinator {
  readonly #o: ReshardOptions;
  readonly #runner: MetadataJobRunner;
  readonly #deadlines: SwitchDeadlines;

  constructor(o: ReshardOptions) {
    this.#o = o;
    this.#deadlines = new SwitchDeadlines(o.switchTimeoutMs);
    this.#runner = new MetadataJobRunner({ member: o.member, log: o.log, kind: 'reshard', what: 'reshard' });
    this.#runner.drive({
      step: (jobId) => this.#step(jobId),
      fail: async (jobId, error) => {
        // A failed job leaves no old group fenced: nobody would lift it after.
        const job = o.member.state.jobs[jobId];
        const undo = { switchingAttempt: job?.step === 'switching' ? job.reshard?.attempt : undefined, lifting: job?.reshard?.lifting === true };
        await undoSwitchBeforeFailing(undo, (attempt) => this.#rollback(job!, attempt, `failed: ${error}`), () => this.#lift(jobId));
        await o.member.propose({ type: 'reshard.abort', jobId, atMs: Date.now(), step: 'failed', error });
      },
      noteError: (jobId, error) => this.#progress(jobId, { error }),
    });
  }

  /** Called periodically: on the metadata leader, run the reshard jobs nobody runs here yet. */
  tick(): void {
    this.#runner.tick();
  }

  close(): void {
    this.#runner.close();
  }

  #job(id: string): Job {
    const job = this.#o.member.state.jobs[id];
    if (job?.reshard === undefined) throw new FatalJobError(`reshard job ${id} is gone`);
    return job;
  }

  #collection(job: Job): CollectionPlacement {
    const c = this.#o.member.state.collections[job.target];
    if (c === undefined) throw new FatalJobError(`collection ${job.target} was deleted`);
    return c;
  }

  /** Still the one to run jobs: the metadata leader, not closing. */
  #check(): void {
    this.#runner.check();
  }

  /** The job's current step; `ended` when it is done. */
  async #step(jobId: string): Promise<'next' | 'ended'> {
    const { log } = this.#o;
    const job = this.#job(jobId);
    if (isReshardEnded(job.step)) return 'ended';
    log.info({ job: jobId, collection: job.target, step: job.step }, `reshard of ${job.target}: ${job.step}`);
    switch (job.step) {
      case 'copying':
        await this.#copyAll(job);
        await this.#progress(jobId, { step: 'catching_up' });
        return 'next';
      case 'catching_up':
        if (job.reshard!.lifting === true) await this.#lift(jobId);
        await this.#catchUp(job);
        await awaitNextAttempt(() => this.#job(jobId).reshard!, this.#o.switchTimeoutMs, { serving: 'the old shards serve the collection', again: 'the reshard' }, async () => {
          await this.#catchUp(this.#job(jobId));
          return true;
        });
        await this.#targetsLed(job);
        // A fence of a later attempt always carries a larger number (switch-bound.ts).
        const attempt = newSwitchAttempt(this.#o.member, this.#o.log, "a reshard's");
        await this.#progress(jobId, { step: 'switching', ...(attempt === undefined ? {} : { attempt }) });
        return 'next';
      case 'switching':
        await this.#switch(job);
        return 'next';
      case 'cleaning':
        await this.#progress(jobId, { step: 'done' });
        log.info({ job: jobId, collection: job.target, migrated: job.reshard!.migrated }, `reshard of ${job.target} done: ${job.reshard!.oldShards} -> ${job.reshard!.newShards} shards`);
        return 'ended';
    }
    return 'next';
  }

  async #progress(jobId: string, p: { step?: 'catching_up' | 'switching' | 'done'; group?: string; source?: Partial<ReshardSource>; error?: string; attempt?: number; lifted?: number }): Promise<void> {
    this.#check();
    await this.#o.member.propose({ type: 'reshard.progress', jobId, atMs: Date.now(), ...p });
  }

  // ---- copy --------------------------------------------------------------------------------

  async #copyAll(job: Job): Promise<void> {
    const c = this.#collection(job);
    // Every source's copy settles before the step ends, failed or not: a retry must never run
    // beside a copy still writing an older state of a source into the new shards.
    await settleAll(
      c.shards.map(async (old) => {
        if (this.#job(job.id).reshard!.sources[old.group]?.copied === true) return;
        await this.#copy(job.id, old);
      }),
    );
  }

  /** Copy one old shard into the new ones, from a snapshot transfer on its leader. */
  async #copy(jobId: string, old: ShardPlacement): Promise<void> {
    const { shards, log } = this.#o;
    const status = await shards.leaderCall(old, 'vshard.status', {});
    const leader = String(status.leader);
    const call = (s?: string) => shards.callOn(leader, 'vshard.export', { g: old.group, ...(s === undefined ? {} : { s }) });
    let reply = await call();
    // A shard with no document answers its tail at once; an older node's tail has no `a0`, and
    // its `applied` is where that (empty) state stood.
    const a0 = reply.a0 ?? reply.applied;
    const recorded = this.#job(jobId).reshard!.sources[old.group]!.from;
    if (recorded === null) {
      // Recorded before any document is written: a later attempt must replay from here.
      if (typeof a0 !== 'number') throw new FirkinError('error', 'snapshot transfer without its start index');
      await this.#progress(jobId, { group: old.group, source: { from: a0 } });
    } else if (typeof a0 === 'number' && a0 < recorded) {
      throw new FirkinError('unavailable', `${leader}'s copy of ${old.group} is at ${a0}, behind the recorded start ${recorded}`);
    }
    let docs = 0;
    let lastReport = Date.now();
    const started = Date.now();
    for (;;) {
      this.#check();
      if (reply.c instanceof Uint8Array) {
        const command = decodeShardCommand(reply.c);
        if (command.kind !== 'upsert') throw new FirkinError('error', 'snapshot transfer: a chunk holds a delete');
        await this.#forwardOne(jobId, { kind: 'upsert', docs: command.docs, rid: newRequestId() });
        docs += command.docs.length;
        // Rate limit: never ahead of docsPerSecond on average.
        const ahead = (docs / this.#o.docsPerSecond) * 1000 - (Date.now() - started);
        if (ahead > 0) await sleep(ahead);
        if (Date.now() - lastReport > PROGRESS_EVERY_MS) {
          lastReport = Date.now();
          log.info({ job: jobId, source: old.group, docs }, `reshard: copied ${docs} documents of ${old.group}`);
          await this.#progress(jobId, { group: old.group, source: { docs } });
        }
      } else if (typeof reply.applied === 'number') {
        break; // the transfer's tail: done
      } else {
        throw new FirkinError('error', 'snapshot transfer: bad reply');
      }
      reply = await call(String(reply.s));
    }
    const from = this.#job(jobId).reshard!.sources[old.group]!.from!;
    await this.#progress(jobId, { group: old.group, source: { copied: true, docs, tailed: from } });
    log.info({ job: jobId, source: old.group, docs, from }, `reshard: copied ${old.group} (${docs} documents, state at index ${from})`);
  }

  /** The new groups, and the one each document routes to. */
  #targets(jobId: string): { pending: readonly ShardPlacement[]; shardOf: (id: string) => number } {
    const c = this.#collection(this.#job(jobId));
    const pending = c.pending;
    if (pending === undefined) throw new FatalJobError(`collection ${c.name} has no pending shards`);
    const ranges = pending.map((s, i) => ({ shardId: i, start: s.range[0], end: s.range[1] }));
    return { pending, shardOf: (id) => shardFor(ranges, hashId(id, 'xxhash')) };
  }

  /**
   * Send replayed commands to the new shards that own their documents, each document's in log
   * order. Each new group takes its part of the batch in runs (`vshard.proposeMany`, cluster
   * protocol 8): a round trip per run, where a hot document's writes took one each and the
   * replay could fall behind its writers. While an older member is live, one command a call.
   */
  async #forwardAll(jobId: string, commands: readonly ShardCommand[]): Promise<void> {
    if (protocolShortfall(this.#o.member.liveNodes(), REPLAY_RUN_PROTOCOL, 'replaying in runs') !== undefined) {
      await runInKeyOrder(commands, commandIds, (command) => this.#forwardOne(jobId, command), FORWARDS_IN_FLIGHT);
      return;
    }
    const { pending, shardOf } = this.#targets(jobId);
    const parts = splitCommands(commands, shardOf, newRequestId);
    await settleAll(
      [...parts].map(async ([t, list]) => {
        for (const run of commandRuns(list.map(encodeShardCommand), REPLAY_RUN.count, REPLAY_RUN.bytes)) {
          await this.#o.shards.leaderCall(pending[t]!, 'vshard.proposeMany', { cs: run });
        }
      }),
    );
  }

  /** Send a command's documents (or ids) to the new shards that own them now, each part in parallel. */
  async #forwardOne(jobId: string, command: ShardCommand): Promise<void> {
    const { pending, shardOf } = this.#targets(jobId);
    const parts = splitCommands([command], shardOf, newRequestId);
    await Promise.all([...parts].map(([t, subs]) => this.#o.shards.leaderCall(pending[t]!, 'vshard.propose', { c: encodeShardCommand(subs[0]!) })));
  }

  // ---- replay ------------------------------------------------------------------------------

  /**
   * Replay one old shard's log after where it stands: up to `until` (the fence, when
   * switching), or until it is within CAUGHT_UP_ENTRIES of the leader. Returns the lag left.
   */
  async #tail(jobId: string, old: ShardPlacement, until?: number, deadline?: number): Promise<number> {
    const start = this.#job(jobId).reshard!.sources[old.group]!.tailed;
    let tailed = start;
    let reported = start;
    let lastReport = Date.now();
    const report = async () => {
      if (tailed === reported) return;
      reported = tailed;
      lastReport = Date.now();
      await this.#progress(jobId, { group: old.group, source: { tailed } });
    };
    for (;;) {
      this.#check();
      if (deadline !== undefined && Date.now() > deadline) throw new SwitchTimeout(`${old.group} was replayed to ${tailed} of its fence at ${until}`);
      const max = until === undefined ? TAIL_BATCH : Math.min(TAIL_BATCH, until - tailed);
      if (max <= 0) {
        await report();
        return 0;
      }
      const reply = await this.#o.shards.leaderCall(old, 'vshard.tail', { after: tailed, max });
      if (reply.compacted === true) {
        throw new FatalJobError(`the log of ${old.group} was compacted past index ${tailed} before the reshard replayed it (first kept entry ${String(reply.first)}); start the reshard again`);
      }
      // A document's writes in log order, the batch in a few round trips (`#forwardAll`), so the
      // replay keeps up with writers on slow links (one proposal a round trip was slower than a
      // stream of client writes under a 100 ms delay: chaos seed 101).
      const commands = (reply.e as { i: number; d: Uint8Array }[]).map((e) => decodeShardEntry(e.d)).filter((c): c is ShardCommand => c.kind !== 'fence');
      await this.#forwardAll(jobId, commands);
      const before = tailed;
      if (typeof reply.to === 'number' && reply.to > tailed) tailed = reply.to;
      if (Date.now() - lastReport > PROGRESS_EVERY_MS) await report();
      const lag = (until ?? (reply.applied as number)) - tailed;
      if (lag <= 0 || (until === undefined && lag <= CAUGHT_UP_ENTRIES)) {
        await report();
        return Math.max(0, lag);
      }
      // Nothing new on this leader yet (a new leader still applying): wait a moment.
      if (tailed === before) await sleep(20);
    }
  }

  async #catchUp(job: Job): Promise<void> {
    const c = this.#collection(job);
    for (let round = 1; ; round++) {
      const lags: number[] = [];
      // As for the copy: no replay of a source outlives its step.
      await settleAll(c.shards.map(async (old, i) => void (lags[i] = await this.#tail(job.id, old))));
      const worst = Math.max(...lags);
      if (worst <= CAUGHT_UP_ENTRIES) return;
      if (round % 5 === 0) this.#o.log.info({ job: job.id, lags }, `reshard of ${job.target}: catching up (${worst} entries behind)`);
    }
  }

  // ---- switch ------------------------------------------------------------------------------

  async #switch(job: Job): Promise<void> {
    const attempt = job.reshard!.attempt;
    if (attempt === undefined) {
      // Entered switching while an older member could not decode a numbered fence or a lift:
      // the switch of the builds before them, which waits for as long as it takes.
      await this.#fenceAndSwitch(job, undefined, undefined);
      return;
    }
    await this.#deadlines.run(
      job.id,
      attempt,
      (deadline) => this.#fenceAndSwitch(job, attempt, deadline),
      (timeout) => this.#rollback(job, attempt, `switch attempt ${(job.reshard!.rollbacks ?? 0) + 1} did not finish within ${this.#o.switchTimeoutMs} ms of its fences (${timeout.message}); the old shards serve writes again`),
    );
  }

  /**
   * Fence every old group (idempotent: a second fence answers the first's index), drain each up
   * to its fence, then the switch entry. With a deadline, SwitchTimeout once it passes before
   * the switch entry is proposed; from there the metadata log decides (a rollback proposed
   * after it is refused).
   */
  async #fenceAndSwitch(job: Job, attempt: number | undefined, deadline: number | undefined): Promise<void> {
    const c = this.#collection(job);
    const started = Date.now();
    const fence = attempt === undefined ? FENCE_ENTRY : fenceEntry(attempt);
    // Settled only once every source's replay has (no replay of a source may outlive its step).
    const drained = settleAll(
      c.shards.map(async (old) => {
        const reply = await this.#o.shards.leaderCall(old, 'vshard.propose', { c: fence });
        const o = reply.o as FenceOutcome | null;
        if (o?.kind === 'fence_stale') throw new FirkinError('conflict', `${old.group} refused fence ${o.attempt}: a later lift named it`);
        if (o?.kind !== 'fenced' || typeof o.at !== 'number') throw new FirkinError('error', `${old.group} did not take the fence`);
        await this.#tail(job.id, old, o.at, deadline);
      }),
    );
    const stall = attempt !== undefined && (job.reshard!.rollbacks ?? 0) < (this.#o.switchStalls ?? 0) && deadline !== undefined ? deadline - Date.now() + 1_000 : undefined;
    if (deadline === undefined) await drained;
    else await raceDeadline(drained.then(() => (stall === undefined ? undefined : sleep(stall))), deadline, () => `the old groups were still draining`);
    if (this.#o.switchDelayMs !== undefined) await sleep(this.#o.switchDelayMs);
    this.#check();
    if (deadline !== undefined && Date.now() > deadline) throw new SwitchTimeout('the old groups drained too late');
    await this.#o.member.propose({ type: 'reshard.switch', jobId: job.id, atMs: Date.now(), ...(attempt === undefined ? {} : { attempt }) });
    this.#o.log.info({ job: job.id, collection: job.target, fenceToSwitchMs: Date.now() - started, attempt }, `reshard of ${job.target}: switched to ${job.reshard!.newShards} shards (writes waited at most ${Date.now() - started} ms)`);
  }

  /** Record the rollback (only then can no switch of `attempt` apply), then lift the fences. */
  async #rollback(job: Job, attempt: number, why: string): Promise<void> {
    this.#o.log.warn({ job: job.id, collection: job.target, attempt }, `reshard of ${job.target}: ${why}`);
    this.#check();
    await this.#o.member.propose({ type: 'reshard.rollback', jobId: job.id, atMs: Date.now(), attempt, error: why });
    await this.#lift(job.id);
  }

  /** Lift the rolled-back attempt's fence in every old group, then record that it is lifted. */
  async #lift(jobId: string): Promise<void> {
    const job = this.#job(jobId);
    const attempt = job.reshard!.attempt;
    if (job.reshard!.lifting !== true || attempt === undefined) return;
    const c = this.#collection(job);
    await Promise.all(
      c.shards.map(async (old) => {
        const reply = await this.#o.shards.leaderCall(old, 'vshard.propose', { c: liftEntry(attempt) });
        if ((reply.o as LiftOutcome | null)?.kind !== 'unfenced') throw new FirkinError('error', `${old.group} did not take the lift of fence ${attempt}`);
      }),
    );
    await this.#progress(jobId, { lifted: attempt });
    this.#o.log.info({ job: jobId, collection: job.target, attempt }, `reshard of ${job.target}: fence ${attempt} is lifted from every old shard; writes go to them until the next attempt`);
  }

  /** Every new group has a leader before the old ones are fenced (a switch into a leaderless group could only roll back). */
  async #targetsLed(job: Job): Promise<void> {
    const pending = this.#collection(job).pending;
    if (pending === undefined) throw new FatalJobError(`collection ${job.target} has no pending shards`);
    await Promise.all(pending.map((s) => this.#o.shards.leaderCall(s, 'vshard.status', {})));
  }
}

/** The job as `GET /vectordb/collections/:c/reshard` shows it. */
export function reshardView(job: Job, pending?: readonly ShardPlacement[]): Record<string, unknown> {
  const r = job.reshard!;
  const ended = r.endedAtMs ?? (isReshardEnded(job.step) ? job.updatedAtMs : undefined);
  const seconds = ((ended ?? Date.now()) - job.createdAtMs) / 1000;
  return {
    id: job.id,
    collection: job.target,
    state: job.step,
    old_shards: r.oldShards,
    new_shards: r.newShards,
    documents_migrated: r.migrated,
    documents_expected: r.expected ?? null,
    started_at: job.createdAtMs,
    ended_at: ended ?? null,
    rate_docs_per_sec: seconds > 0 ? Math.round(r.migrated / seconds) : 0,
    last_error: r.error ?? null,
    switch_rollbacks: r.rollbacks ?? 0,
    sources: Object.entries(r.sources).map(([group, s]) => ({ group, from: s.from, copied: s.copied, docs: s.docs, tailed: s.tailed })),
    // Where the new shards live while the job runs (repair moves them off a node that leaves or is lost).
    ...(pending === undefined || isReshardEnded(job.step) ? {} : { new_groups: pending.map((p) => ({ group: p.group, range: p.range, replicas: p.replicas })) }),
  };
}

