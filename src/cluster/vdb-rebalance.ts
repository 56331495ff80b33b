// Split and merge of a clustered VDB shard, as a job of the metadata group (`vdb.rebalance.*`
// commands, `Job.kind` `vdb-rebalance`), run by the metadata leader and resumed by a new one
// from the recorded step, like a vector reshard (`reshard.ts`).
//
//   copying      a split's new shard group is placed (pending: hosted, not routed). The source's
//                feed position is recorded first (`from`); then every document of the moving
//                range (tombstones included) is copied into the target group, in the source's
//                sequence order, with every leaf revision, its history and its attachment bytes
//                (`copy` edits of foreign revisions: `new_edits: false`). Writes to the source go on.
//   catching_up  the documents the source changed after `from` are copied again (their whole
//                state: a merge of revision trees converges whatever the target held), until a
//                pass finds nothing new.
//   switching    an `own` entry in the source's log fences the moving range (every later write
//                of it is refused with no effect, on every replica alike: routers get
//                `stale_epoch`, wait for the new map and route again); the changes up to the
//                fence are copied, then the range's `_local` documents as they are (a
//                `locals` entry); an `own` entry gives the target its new range; ONE
//                `vdb.rebalance.switch` metadata entry changes the ranges and bumps the epoch.
//                A switch not done SERVICE_RESHARD_SWITCH_TIMEOUT_MS after its fence is rolled
//                back as a reshard's is (`switch-bound.ts`): a `vdb.rebalance.rollback` entry,
//                then `own` entries numbered above the fence give the source (and a merge's
//                target) their ranges back.
//   cleaning     a split's source purges the moved documents and `_local` documents through log
//                entries (every replica alike); a merged source, retired (not routed) by the
//                switch but still hosted and fenced, leaves the placement with the end entry
//                (every node drops its copy).
//   done | failed | cancelled
//
// Cancel (`DELETE /vdb/:vdb/_rebalance`, before the switching step only, and not while a
// rolled-back switch's fence is being lifted: the source may be fenced): the operator's
// `cancel` progress entry stops every later step; the coordinator finishes the copy batch in
// hand, then, for a merge, purges the moving range from the target (it owns none of it: what is
// there are this job's copies), and ends the job `cancelled`; a split's pending group leaves the
// placement with that end.
//
// Every step is idempotent (a copy merges revision trees; own, purge and the switch are no-ops
// the second time), so a step a crash interrupted is run again. As for a reshard, a new
// metadata leader waits `takeoverMs` before it runs a job, so an old leader's writes are over.
import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import { type Backoff, nominalDelayMs } from '../core/backoff.js';
import { FirkinError, isFirkinError } from '../core/errors.js';
import type { HybridClock } from '../core/hlc.js';
import { type DocEdit, bulkEdits } from '../docdb/engine.js';
import type { DocShardCommand, DocShardOutcome, LocalOutcome } from '../docdb/vdb/shard-commands.js';
import { FatalJobError, MetadataJobRunner } from './job-runner.js';
import type { ClusterMember } from './member.js';
import { type Job, type ShardPlacement, type VdbPlacement, isReshardEnded, rebalanceMisfit, showRange } from './meta-state.js';
import { protocolShortfall } from './versions.js';
import { SWITCH_ROLLBACK_PROTOCOL, SwitchDeadlines, SwitchTimeout, awaitNextAttempt, newSwitchAttempt, raceDeadline, undoSwitchBeforeFailing } from './switch-bound.js';
import type { HashFunction } from '../core/shard-hash.js';

/** What the coordinator needs of the VDB shard host. */
export interface RebalanceShards {
  /** A read on the shard's leader after its ReadIndex barrier (`dshard.read`). */
  read(shard: ShardPlacement, q: Record<string, unknown>): Promise<Record<string, unknown>>;
  propose(shard: ShardPlacement, command: DocShardCommand): Promise<DocShardOutcome>;
}

export interface RebalanceOptions {
  member: ClusterMember;
  shards: RebalanceShards;
  hlc: HybridClock;
  newId: () => string;
  log: Logger;
  /** Documents read and copied per batch. */
  batchSize: number;
  /** The copy goes no faster than this on average (SERVICE_VDB_REBALANCE_DOCS_PER_SEC). */
  docsPerSecond: number;
  /** The chaos suite's broken build (lost-checkpoints): no `_local` document is carried. */
  unsafeNoLocalCarry?: boolean;
  /** A switch not done this long after its fence is rolled back (SERVICE_RESHARD_SWITCH_TIMEOUT_MS). */
  switchTimeoutMs: number;
  /** Tests only (FIRKIN_TEST_RESHARD_SWITCH_STALLS): the first this many switch attempts stall past their timeout. */
  switchStalls?: number;
}

/** Progress is recorded at most this often. */
const PROGRESS_EVERY_MS = 2_000;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A failed merge's purge of its copies: a few tries over about ten seconds, then they stay. */
const FAILED_MERGE_PURGE_TRIES = 5;
const FAILED_MERGE_PURGE_BACKOFF: Backoff = { baseMs: 500, capMs: 5_000 };

type Seq = readonly [number, number];

export class VdbRebalanceCoordinator {
  readonly #o: RebalanceOptions;
  readonly #runner: MetadataJobRunner;
  readonly #deadlines: SwitchDeadlines;

  constructor(o: RebalanceOptions) {
    this.#o = o;
    this.#deadlines = new SwitchDeadlines(o.switchTimeoutMs);
    this.#runner = new MetadataJobRunner({ member: o.member, log: o.log, kind: 'vdb-rebalance', what: 'VDB rebalance' });
    this.#runner.drive({
      step: (jobId) => this.#step(jobId),
      fail: async (jobId, error) => {
        // A failed job leaves no range fenced: nobody would give it back after.
        const job = o.member.state.jobs[jobId];
        const undo = { switchingAttempt: job?.step === 'switching' ? job.vdb?.attempt : undefined, lifting: job?.vdb?.lifting === true };
        await undoSwitchBeforeFailing(undo, (attempt) => this.#rollback(this.#job(jobId), attempt, `failed: ${error}`), () => this.#lift(jobId));
        const purged = await this.#purgeFailedMerge(jobId);
        await o.member.propose({ type: 'vdb.rebalance.end', jobId, atMs: Date.now(), step: 'failed', error: purged ? error : `${error} (its copies stay in the merge's target, outside its range: reads never show them, its doc_count counts them)` });
      },
      noteError: (jobId, error) => this.#progress(jobId, { error }),
    });
  }

  /** Called periodically: on the metadata leader, run the rebalance jobs nobody runs here yet. */
  tick(): void {
    this.#runner.tick();
  }

  close(): void {
    this.#runner.close();
  }

  #job(id: string): Job & { vdb: NonNullable<Job['vdb']> } {
    const job = this.#o.member.state.jobs[id];
    if (job?.vdb === undefined) throw new FatalJobError(`VDB rebalance job ${id} is gone`);
    return job as Job & { vdb: NonNullable<Job['vdb']> };
  }

  #vdb(job: Job): VdbPlacement {
    const v = this.#o.member.state.vdbs[job.target];
    if (v === undefined) throw new FatalJobError(`virtual database ${job.target} was deleted`);
    return v;
  }

  /** The source and target groups of the job, as the metadata says now. */
  #groups(job: Job & { vdb: NonNullable<Job['vdb']> }): { v: VdbPlacement; source: ShardPlacement; target: ShardPlacement } {
    const v = this.#vdb(job);
    const source = v.shards[job.vdb.source];
    const target = job.vdb.op === 'split' ? (v.pending ?? v.shards[job.vdb.target]) : v.shards[job.vdb.target];
    if (source === undefined || target === undefined) throw new FatalJobError(`the shards of job ${job.id} are gone`);
    return { v, source, target };
  }

  #check(): void {
    this.#runner.check();
  }

  /**
   * Before its switch, a job must still fit the map: a merge's shards adjacent and its moving
   * range the source's, a split's the source's upper part. The log checks a begin that names
   * the ranges it was planned on (protocol 9); one from an older proposer names none, and a
   * merge planned on a stale map would widen its target over a third shard (chaos seed 134). It
   * fails here instead, before any fence: a merge's copies are purged from the target.
   */
  #checkRanges(job: Job & { vdb: NonNullable<Job['vdb']> }): void {
    const { source, target } = this.#groups(job);
    if (rebalanceMisfit(job.vdb, source.range, target.range) === undefined) return;
    throw new FatalJobError(
      job.vdb.op === 'merge'
        ? `shard ${job.vdb.source} ${showRange(source.range)} cannot merge into shard ${job.vdb.target} ${showRange(target.range)} moving ${showRange(job.vdb.moving)}: the merge was planned on an older map`
        : `shard ${job.vdb.source} ${showRange(source.range)} cannot give ${showRange(job.vdb.moving)} away: the split was planned on an older map`,
    );
  }

  /** The job's current step; `ended` when it is done. */
  async #step(jobId: string): Promise<'next' | 'ended'> {
    const { log } = this.#o;
    const job = this.#job(jobId);
    if (isReshardEnded(job.step)) return 'ended';
    // The log refuses a step forward once a cancel landed: cancelling is all that is left.
    if (job.vdb.cancelRequested === true) return this.#cancel(job);
    log.info({ job: jobId, vdb: job.target, step: job.step }, `${job.vdb.op} of ${job.target} shard ${job.vdb.source}: ${job.step}`);
    if (job.step !== 'cleaning') this.#checkRanges(job);
    switch (job.step) {
      case 'copying':
        await this.#copyAll(job);
        if (this.#cancelRequested(jobId)) return 'next';
        await this.#progress(jobId, { step: 'catching_up' });
        return 'next';
      case 'catching_up': {
        if (job.vdb.lifting === true) await this.#lift(jobId);
        await this.#catchUp(job);
        if (this.#cancelRequested(jobId)) return 'next';
        const waited = await awaitNextAttempt(() => this.#job(jobId).vdb, this.#o.switchTimeoutMs, { serving: 'the source serves the range', again: 'the split or merge' }, async () => {
          await this.#catchUp(this.#job(jobId));
          return !this.#cancelRequested(jobId);
        });
        if (!waited) return 'next';
        // Both groups have a leader before the fence (a switch that cannot finish only rolls back).
        const { source, target } = this.#groups(this.#job(jobId));
        await Promise.all([this.#o.shards.read(source, { op: 'info' }), this.#o.shards.read(target, { op: 'info' })]);
        const attempt = newSwitchAttempt(this.#o.member, this.#o.log, "a split's or merge's");
        await this.#progress(jobId, { step: 'switching', ...(attempt === undefined ? {} : { attempt }) });
        return 'next';
      }
      case 'switching':
        await this.#switch(job);
        return 'next';
      case 'cleaning':
        await this.#cleanup(job);
        await this.#o.member.propose({ type: 'vdb.rebalance.end', jobId, atMs: Date.now(), step: 'done' });
        log.info({ job: jobId, vdb: job.target, copied: job.vdb.copied }, `${job.vdb.op} of ${job.target} shard ${job.vdb.source} done`);
        return 'ended';
    }
    return 'next';
  }

  #cancelRequested(jobId: string): boolean {
    return this.#job(jobId).vdb.cancelRequested === true;
  }

  /** Undo what the copy did, then end the job `cancelled` (idempotent: the purge has a fixed request id). */
  async #cancel(job: Job & { vdb: NonNullable<Job['vdb']> }): Promise<'ended'> {
    const { log } = this.#o;
    if (job.vdb.op === 'merge') {
      const v = this.#vdb(job);
      const target = v.shards[job.vdb.target];
      if (target !== undefined && target.retired !== true) {
        const outcome = await this.#o.shards.propose(target, { kind: 'purge', rid: `cancel-purge-${job.id}`, hash: v.config.hashFunction, range: job.vdb.moving });
        if (outcome.kind !== 'purge') throw new FirkinError('error', `${target.group} answered the purge of a cancelled merge with ${outcome.kind}`);
      }
    }
    this.#check();
    await this.#o.member.propose({ type: 'vdb.rebalance.end', jobId: job.id, atMs: Date.now(), step: 'cancelled' });
    log.info({ job: job.id, vdb: job.target, copied: job.vdb.copied }, `${job.vdb.op} of ${job.target} shard ${job.vdb.source} cancelled (${job.vdb.copied} documents had been copied; the ranges never moved)`);
    return 'ended';
  }

  /**
   * A merge failing before its switch would leave its copies in the target, outside the
   * target's range: reads never show them, but its counts would. They go, as a cancel's do.
   * Only before a switch (copying, or catching up with no fence up), and tried for a bounded
   * time: false when the copies stay (the target cannot be reached now).
   */
  async #purgeFailedMerge(jobId: string): Promise<boolean> {
    const job = this.#o.member.state.jobs[jobId];
    if (job?.vdb?.op !== 'merge') return true;
    if ((job.step !== 'copying' && job.step !== 'catching_up') || job.vdb.lifting === true) return false;
    const target = this.#o.member.state.vdbs[job.target]?.shards[job.vdb.target];
    const hash = this.#o.member.state.vdbs[job.target]?.config.hashFunction;
    if (target === undefined || hash === undefined || target.retired === true) return true;
    for (let attempt = 1; attempt <= FAILED_MERGE_PURGE_TRIES; attempt++) {
      try {
        this.#check();
        const outcome = await this.#o.shards.propose(target, { kind: 'purge', rid: `fail-purge-${job.id}`, hash, range: job.vdb.moving });
        if (outcome.kind === 'purge') return true;
        this.#o.log.warn({ job: jobId, outcome: outcome.kind }, `${target.group} answered the purge of a failed merge's copies with ${outcome.kind}`);
        return false;
      } catch (err) {
        if (isFirkinError(err) && err.code === 'not_leader') throw err; // the next metadata leader fails the job
        this.#o.log.warn({ job: jobId, attempt, err: (err as Error).message }, `purging the copies of a failed merge from ${target.group}`);
        if (attempt < FAILED_MERGE_PURGE_TRIES) await sleep(nominalDelayMs(attempt, FAILED_MERGE_PURGE_BACKOFF));
      }
    }
    return false;
  }

  async #progress(jobId: string, p: { step?: 'catching_up' | 'switching'; from?: Seq; targetFrom?: Seq; caught?: Seq; copied?: number; error?: string; attempt?: number; lifted?: number }): Promise<void> {
    this.#check();
    await this.#o.member.propose({ type: 'vdb.rebalance.progress', jobId, atMs: Date.now(), ...p });
  }

  // ---- copy --------------------------------------------------------------------------------

  async #copyAll(job: Job & { vdb: NonNullable<Job['vdb']> }): Promise<void> {
    const { source, target } = this.#groups(job);
    if (job.vdb.from === null) {
      // Recorded before any document is copied: catch-up starts after it, whatever happens later.
      const info = await this.#o.shards.read(source, { op: 'info' });
      await this.#progress(job.id, { from: info.last as Seq });
    }
    if (job.vdb.op === 'merge' && job.vdb.targetFrom === undefined) {
      // Before any copy lands in the target: old `_changes` cursors read the target from here.
      const info = await this.#o.shards.read(target, { op: 'info' });
      await this.#progress(job.id, { targetFrom: info.last as Seq });
    }
    await this.#copyChanges(job.id, null);
  }

  /**
   * Copy every document of the moving range the source changed after `since` (null: all), in
   * its sequence order, to the end of its feed as it is now. Returns the position reached.
   */
  async #copyChanges(jobId: string, since: Seq | null, deadline?: number): Promise<Seq | null> {
    const { shards, log } = this.#o;
    let cursor = since;
    let copied = this.#job(jobId).vdb.copied;
    let reported = copied;
    let lastReport = Date.now();
    const started = Date.now();
    const startCopied = copied;
    for (;;) {
      this.#check();
      if (deadline !== undefined && Date.now() > deadline) throw new SwitchTimeout(`the copy after the fence stood at ${JSON.stringify(cursor)}`);
      const job = this.#job(jobId);
      // Stop between batches: the step that called sees the cancel and takes no step forward.
      if (job.vdb.cancelRequested === true) return cursor;
      const { v, source, target } = this.#groups(job);
      // `x`: the coordinator reads the moving range whatever the source owns now (after the fence too).
      const page = await shards.read(source, { op: 'changes', since: cursor, limit: this.#o.batchSize, docs: false, x: true, m: job.vdb.moving, h: v.config.hashFunction });
      const ids = [...new Set((page.results as { id: string }[]).map((e) => e.id))];
      if (ids.length > 0) {
        const reply = await shards.read(source, { op: 'revs', ids, x: true });
        const edits = bulkEdits(reply.docs as Record<string, unknown>[], false, this.#o.newId);
        const bad = edits.find((e) => !('kind' in e));
        if (bad !== undefined) throw new FirkinError('error', `copying ${job.target} shard ${job.vdb.source}: a revision did not parse: ${JSON.stringify(bad)}`);
        const outcome = await shards.propose(target, { kind: 'edits', rid: randomBytes(12).toString('base64url'), at: this.#o.hlc.now(), edits: edits as DocEdit[], copy: true });
        if (outcome.kind !== 'edits') throw new FirkinError('error', `${target.group} answered a copy with ${outcome.kind}`);
        const failed = outcome.results.filter((r) => !r.ok);
        if (failed.length > 0) throw new FirkinError('error', `copying into ${target.group}: ${failed.length} revisions refused, the first ${JSON.stringify(failed[0])}`);
        copied += ids.length;
        // Rate limit: never ahead of docsPerSecond on average over this pass; not after the
        // fence (switching), where the moving range's writes wait for this drain.
        const ahead = ((copied - startCopied) / this.#o.docsPerSecond) * 1000 - (Date.now() - started);
        if (ahead > 0 && job.step !== 'switching') await sleep(ahead);
      }
      const scanned = page.scanned as Seq | null;
      if (scanned !== null) cursor = scanned;
      const done = page.more !== true;
      if (copied !== reported && (done || Date.now() - lastReport > PROGRESS_EVERY_MS)) {
        lastReport = Date.now();
        reported = copied;
        log.info({ job: jobId, copied }, `${job.vdb.op} of ${job.target}: ${copied} documents copied`);
        await this.#progress(jobId, { copied, ...(cursor !== null && job.vdb.from !== null && job.step !== 'copying' ? { caught: cursor } : {}) });
      }
      if (done) return cursor;
    }
  }

  async #catchUp(job: Job & { vdb: NonNullable<Job['vdb']> }): Promise<void> {
    // One pass to the end of the feed; what the source takes meanwhile is copied after the fence.
    const reached = await this.#copyChanges(job.id, job.vdb.caught ?? job.vdb.from);
    if (reached !== null) await this.#progress(job.id, { caught: reached });
  }

  // ---- switch ------------------------------------------------------------------------------

  async #switch(job: Job & { vdb: NonNullable<Job['vdb']> }): Promise<void> {
    const attempt = job.vdb.attempt;
    // Entered switching while an older member could not read numbered entries: no time bound.
    if (attempt === undefined) return this.#fenceAndSwitch(job, undefined, undefined);
    await this.#deadlines.run(
      job.id,
      attempt,
      (deadline) => this.#fenceAndSwitch(job, attempt, deadline),
      (timeout) => this.#rollback(job, attempt, `switch attempt ${(job.vdb.rollbacks ?? 0) + 1} did not finish within ${this.#o.switchTimeoutMs} ms of its fence (${timeout.message}); the source serves the range again`),
    );
  }

  /**
   * Fence the moving range on the source, copy what changed up to the fence and the range's
   * `_local` documents, widen the target, then the switch entry. With a deadline, SwitchTimeout
   * once it passes before the switch entry is proposed.
   */
  async #fenceAndSwitch(job: Job & { vdb: NonNullable<Job['vdb']> }, attempt: number | undefined, deadline: number | undefined): Promise<void> {
    const started = Date.now();
    const { v, source, target } = this.#groups(job);
    const hash = v.config.hashFunction;
    const moving = job.vdb.moving;
    const kept: [number, number][] = job.vdb.op === 'split' ? [[source.range[0], moving[0] - 1]] : [];
    const order = attempt === undefined ? {} : { n: 2 * attempt };
    const drained = (async () => {
      const fence = await this.#o.shards.propose(source, { kind: 'own', rid: randomBytes(12).toString('base64url'), owned: { hash, ranges: kept, ...order } });
      if (fence.kind !== 'own' || fence.stale === true) throw new FirkinError('error', `${source.group} did not take the fence (${fence.kind}${fence.kind === 'own' ? ', numbered below what it holds' : ''})`);
      // The source takes no more writes of the moving range: copy what changed up to the fence,
      // then its `_local` documents as they are (replications through the VDB keep their checkpoints).
      await this.#copyChanges(job.id, job.vdb.caught ?? job.vdb.from, deadline);
      await this.#carryLocals(job, source, hash, moving, target);
      const widened: [number, number] = job.vdb.op === 'split' ? [moving[0], moving[1]] : [Math.min(source.range[0], target.range[0]), Math.max(source.range[1], target.range[1])];
      const own = await this.#o.shards.propose(target, { kind: 'own', rid: randomBytes(12).toString('base64url'), owned: { hash, ranges: [widened], ...order } });
      if (own.kind !== 'own' || own.stale === true) throw new FirkinError('error', `${target.group} did not take its new range (${own.kind})`);
    })();
    if (deadline === undefined) await drained;
    else {
      const stall = (job.vdb.rollbacks ?? 0) < (this.#o.switchStalls ?? 0) ? deadline - Date.now() + 1_000 : undefined;
      await raceDeadline(drained.then(() => (stall === undefined ? undefined : sleep(stall))), deadline, () => `${source.group} was still draining`);
    }
    this.#check();
    if (deadline !== undefined && Date.now() > deadline) throw new SwitchTimeout(`${source.group} drained too late`);
    await this.#o.member.propose({ type: 'vdb.rebalance.switch', jobId: job.id, atMs: Date.now(), ...(attempt === undefined ? {} : { attempt }) });
    this.#o.log.info({ job: job.id, vdb: job.target, fenceToSwitchMs: Date.now() - started }, `${job.vdb.op} of ${job.target} shard ${job.vdb.source}: switched (writes of the moving range waited at most ${Date.now() - started} ms)`);
  }

  /** Record the rollback (only then can no switch of `attempt` apply), then give the ranges back. */
  async #rollback(job: Job & { vdb: NonNullable<Job['vdb']> }, attempt: number, why: string): Promise<void> {
    this.#o.log.warn({ job: job.id, vdb: job.target, attempt }, `${job.vdb.op} of ${job.target} shard ${job.vdb.source}: ${why}`);
    this.#check();
    await this.#o.member.propose({ type: 'vdb.rebalance.rollback', jobId: job.id, atMs: Date.now(), attempt, error: why });
    await this.#lift(job.id);
  }

  /**
   * The source owns its whole range again, a merge's target its own (numbered above the
   * rolled-back attempt's fence and widening: a late one of those changes nothing); then record it.
   */
  async #lift(jobId: string): Promise<void> {
    const job = this.#job(jobId);
    const attempt = job.vdb.attempt;
    if (job.vdb.lifting !== true || attempt === undefined) return;
    const { v, source, target } = this.#groups(job);
    const hash = v.config.hashFunction;
    const giveBack = async (shard: ShardPlacement) => {
      const o = await this.#o.shards.propose(shard, { kind: 'own', rid: `lift-${job.id}-${attempt}-${shard.group}`, owned: { hash, ranges: [[shard.range[0], shard.range[1]]], n: 2 * attempt + 1 } });
      if (o.kind !== 'own') throw new FirkinError('error', `${shard.group} answered the lift of a rolled-back switch with ${o.kind}`);
    };
    await Promise.all([giveBack(source), ...(job.vdb.op === 'merge' ? [giveBack(target)] : [])]);
    // The moving range's `_local` documents carried into the target go too: the next attempt
    // carries them again as they are then, and one the source deleted meanwhile must not stay.
    await this.#carryLocals(job, target, hash, job.vdb.moving, undefined);
    await this.#progress(jobId, { lifted: attempt });
    this.#o.log.info({ job: jobId, vdb: job.target, attempt }, `${job.vdb.op} of ${job.target} shard ${job.vdb.source}: the fence of the rolled-back switch is lifted; the source serves the range until the next attempt`);
  }

  /**
   * A split's source purges the documents it gave away. A merged source stays hosted (fenced)
   * for one proposal timeout, so a write a router sent on the map before the switch is refused
   * there and routed again; the end entry then removes it from the placement.
   */
  async #cleanup(job: Job & { vdb: NonNullable<Job['vdb']> }): Promise<void> {
    if (job.vdb.op !== 'split') {
      await sleep(this.#o.member.timings.proposalTimeoutMs);
      return;
    }
    const v = this.#vdb(job);
    const source = v.shards[job.vdb.source]!;
    const outcome = await this.#o.shards.propose(source, { kind: 'purge', rid: `purge-${job.id}`, hash: v.config.hashFunction, range: job.vdb.moving });
    if (outcome.kind !== 'purge') throw new FirkinError('error', `${source.group} answered the purge with ${outcome.kind}`);
    await this.#carryLocals(job, source, v.config.hashFunction, job.vdb.moving, undefined);
  }

  /**
   * The `_local` documents of the moving range in `source`, page by page: put as they are into
   * `target`, or (no target: a split's cleanup) removed from the source. Both are idempotent.
   * Skipped while a member predates cluster protocol 4 (it could not apply the entries): the
   * moved checkpoints are then left behind, as before, and replications through them restart.
   */
  async #carryLocals(job: Job, source: ShardPlacement, hash: HashFunction, moving: readonly [number, number], target: ShardPlacement | undefined): Promise<void> {
    if (this.#o.unsafeNoLocalCarry === true) return;
    const shortfall = protocolShortfall(this.#o.member.liveNodes(), 4, 'carrying _local documents in a split or merge');
    if (shortfall !== undefined) {
      this.#o.log.warn({ job: job.id, vdb: job.target }, `${shortfall}; the moved replication checkpoints are left behind`);
      return;
    }
    let after: string | undefined;
    let carried = 0;
    // Into a target, the source's recent `_local` write outcomes go with the first page
    // (protocol 7): a write retried after the switch answers what it did on the source.
    const withRequests = target !== undefined && protocolShortfall(this.#o.member.liveNodes(), SWITCH_ROLLBACK_PROTOCOL, 'carrying _local request ids') === undefined;
    for (;;) {
      this.#check();
      const first = after === undefined;
      const page = await this.#o.shards.read(source, { op: 'locals', m: [moving[0], moving[1]], h: hash, ...(after === undefined ? {} : { after }), ...(first && withRequests ? { r: true } : {}) });
      const entries = page.l as [string, Uint8Array][];
      const reqs = first && Array.isArray(page.reqs) ? (page.reqs as [string, LocalOutcome][]) : [];
      if (entries.length > 0 || reqs.length > 0) {
        const to = target ?? source;
        const command: DocShardCommand = target === undefined ? { kind: 'locals', rid: randomBytes(12).toString('base64url'), put: [], drop: entries.map(([id]) => id) } : { kind: 'locals', rid: randomBytes(12).toString('base64url'), put: entries, drop: [], ...(reqs.length > 0 ? { reqs } : {}) };
        const outcome = await this.#o.shards.propose(to, command);
        if (outcome.kind !== 'locals') throw new FirkinError('error', `${to.group} answered a carry of local documents with ${outcome.kind}`);
        carried += entries.length;
        if (entries.length > 0) after = entries[entries.length - 1]![0];
      }
      if (page.more !== true) break;
    }
    if (carried > 0) this.#o.log.info({ job: job.id, vdb: job.target, locals: carried }, `${job.vdb!.op} of ${job.target}: ${carried} _local documents ${target === undefined ? 'removed from the source' : 'carried'}`);
  }
}

/** A VDB rebalance job as `GET /_cluster/jobs` and the split/merge routes show it. */
export function rebalanceView(job: Job, pending?: ShardPlacement): Record<string, unknown> {
  const d = job.vdb!;
  // A running split's new group and where it is placed (repair moves it off a node that leaves or is lost).
  const newGroup = pending === undefined || isReshardEnded(job.step) ? {} : { new_group: { group: pending.group, range: pending.range, replicas: pending.replicas } };
  return { id: job.id, vdb: job.target, op: d.op, state: job.step, source: d.source, target: d.target, moving: d.moving, documents_copied: d.copied, documents_expected: d.expected ?? null, cancel_requested: d.cancelRequested === true, last_error: d.error ?? null, switch_rollbacks: d.rollbacks ?? 0, ...newGroup };
}
