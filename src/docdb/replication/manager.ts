// Replication tasks: one-shot runs for `_replicate`, and persisted tasks (continuous
// `_replicate` and every policy task) that run in the background, retry with backoff,
// survive restarts, and report progress. The only I/O shell around replicator.ts.
//
// A task record lives in the `system` column family under ['repl.task', id] (JSON, with the
// credentials it needs: server-side only, never returned or logged).
import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import { FirkinError } from '../../core/errors.js';
import type { HealthViewer } from '../../core/health.js';
import type { Clock, HybridClock } from '../../core/hlc.js';
import { encodeKey, prefixRange } from '../../core/keys.js';
import type { Store } from '../../storage/db.js';
import type { DocEngine } from '../engine.js';
import type { OutboundPolicy } from '../../core/outbound.js';
import { BOOLEAN, NUMBER, OBJECT, STRING, jsonRecordCodec, nullable, objectSchema } from '../../core/codec.js';
import type { Backoff } from '../../core/backoff.js';
import type { Rand } from '../../core/rand.js';
import { replicationId } from './checkpoint.js';
import {
  type EndpointSpec,
  type StoredEndpoint,
  checkOutbound,
  displayEndpoint,
  localDbOfDisplayed,
  loadEndpoint,
  parseAuth,
  parseEndpoint,
  storeEndpoint,
} from './endpoint-spec.js';
import { type Endpoint, type EndpointDeps, openEndpoint } from './endpoints.js';
import { type ReplicationFilter, parseFilter } from './filter.js';
import { LocalDocs } from './local-docs.js';
import { type Progress, type ReplicationResult, replicate } from './replicator.js';
import { INITIAL, type TaskMachine, type TaskStatus, lastError, step } from './task-state.js';
import { isPlainObject } from '../../core/values.js';

export interface ReplicationSettings {
  readonly allow: readonly string[];
  readonly allowLoopback: boolean;
  readonly timeoutMs: number;
  readonly batchSize: number;
  readonly waitMs: number;
  readonly retryBaseMs: number;
  readonly retryMaxMs: number;
  readonly keepAliveMs: number;
}

export interface ManagerOptions {
  readonly docs: DocEngine;
  readonly store: Store;
  readonly hlc: HybridClock;
  readonly log: Logger;
  readonly clock: Clock;
  readonly rand: Rand;
  readonly settings: ReplicationSettings;
}

/** A replication request after validation. */
export interface ReplicationRequest {
  readonly source: EndpointSpec;
  readonly target: EndpointSpec;
  readonly filter: ReplicationFilter;
  readonly continuous: boolean;
  readonly createTarget: boolean;
}

interface TaskRecord {
  readonly id: string;
  readonly source: StoredEndpoint;
  readonly target: StoredEndpoint;
  readonly filter: unknown;
  readonly continuous: boolean;
  readonly create_target: boolean;
  readonly policy: string | null;
  readonly created_at: number;
  /** Durable part of the state: a stopped or completed task is not restarted at boot. */
  status: 'run' | 'stopped' | 'completed';
  docs_read: number;
  docs_written: number;
  doc_write_failures: number;
  last_seq: string | null;
  last_error: string | null;
}

const taskCodec = jsonRecordCodec<TaskRecord>(
  'replication task record',
  objectSchema({
    id: STRING,
    source: OBJECT,
    target: OBJECT,
    continuous: BOOLEAN,
    create_target: BOOLEAN,
    policy: nullable(STRING),
    created_at: NUMBER,
    status: { enum: ['run', 'stopped', 'completed'] },
    docs_read: NUMBER,
    docs_written: NUMBER,
    doc_write_failures: NUMBER,
    last_seq: nullable(STRING),
    last_error: nullable(STRING),
  }),
);

interface Task {
  record: TaskRecord;
  request: ReplicationRequest;
  machine: TaskMachine;
  abort: AbortController | undefined;
  running: Promise<void> | undefined;
  updatedAtMs: number;
}

export interface TaskView {
  task_id: string;
  policy: string | null;
  source: string;
  target: string;
  mode: 'continuous' | 'one_shot';
  filter: unknown;
  status: TaskStatus;
  docs_read: number;
  docs_written: number;
  doc_write_failures: number;
  last_seq: string | null;
  last_error: string | null;
  retry_at: string | null;
  consecutive_failures: number;
  created_at: string;
  updated_at: string;
}

/**
 * The local databases a task touches (its source, its target, or both): who may see a task
 * (`GET /_replications`, `/health`) and who may remove it is decided by keys on these.
 */
export function localDbsOf(view: TaskView): string[] {
  return [view.source, view.target].map(localDbOfDisplayed).filter((db): db is string => db !== undefined);
}

/** Ended one-shot runs kept for `GET /_replications` (memory only: a run belongs to its request). */
const RECENT_ONE_SHOTS = 20;

const taskKey = (id: string) => encodeKey(['repl.task', id]);

function errorText(err: unknown): string {
  return err instanceof FirkinError ? `${err.code}: ${err.message}` : `error: ${(err as Error).message}`;
}

/** Resolves after `ms` or when aborted, whichever comes first (a retry timer, not a sync). */
function delay(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const timer = setTimeout(done, Math.max(0, ms));
    signal.addEventListener('abort', done, { once: true });
    function done() {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
  });
}

export class ReplicationManager {
  readonly #o: ManagerOptions;
  readonly #tasks = new Map<string, Task>();
  readonly #endpointDeps: EndpointDeps;
  readonly #outbound: OutboundPolicy;
  readonly #backoff: Backoff;
  readonly localDocs: LocalDocs;
  /** One-shot `_replicate` runs in flight: aborted at shutdown. */
  /** `_replicate` runs without `continuous`: listed while they run, and a while after. */
  readonly #oneShots = new Map<AbortController, TaskView>();
  readonly #recentOneShots: TaskView[] = [];
  #closed = false;
  /** Tasks only run once the node is listening (a policy may point at this very node). */
  #started = false;

  get settings(): ReplicationSettings {
    return this.#o.settings;
  }

  private constructor(options: ManagerOptions) {
    this.#o = options;
    this.localDocs = new LocalDocs(options.store);
    this.#endpointDeps = { docs: options.docs, localDocs: this.localDocs, hlc: options.hlc, timeoutMs: options.settings.timeoutMs };
    this.#outbound = { allow: options.settings.allow, allowLoopback: options.settings.allowLoopback };
    this.#backoff = { baseMs: options.settings.retryBaseMs, capMs: options.settings.retryMaxMs };
  }

  /** Load persisted tasks (not started: call `start`). */
  static async open(options: ManagerOptions): Promise<ReplicationManager> {
    const m = new ReplicationManager(options);
    options.docs.onDrop((db) => m.localDocs.dropDb(db));
    for await (const [, value] of options.store.entries('system', prefixRange(['repl.task']))) {
      const record = taskCodec.decode(value);
      try {
        m.#tasks.set(record.id, m.#newTask(record, m.#requestOf(record)));
      } catch (err) {
        options.log.error({ task: record.id, err: errorText(err) }, 'stored replication task is unreadable; skipped');
      }
    }
    return m;
  }

  /** Start every task that was running before the last shutdown. */
  start(): void {
    this.#started = true;
    for (const task of this.#tasks.values()) if (task.record.status === 'run') this.#launch(task);
  }

  // ---- requests -----------------------------------------------------------------------

  /** Validate a `_replicate` body for source database `db`. Bad input is a 400, a blocked host a 403. */
  parseRequest(db: string, body: unknown): ReplicationRequest {
    if (!isPlainObject(body)) throw new FirkinError('bad_request', 'the body must be a JSON object {target, auth?, filter?, continuous?, create_target?}');
    const allowed = ['target', 'auth', 'target_auth', 'filter', 'continuous', 'create_target', 'cancel'];
    for (const key of Object.keys(body)) if (!allowed.includes(key)) throw new FirkinError('bad_request', `unknown field ${JSON.stringify(key)} (expected ${allowed.join(', ')})`);
    for (const key of ['continuous', 'create_target', 'cancel']) {
      if (body[key] !== undefined && typeof body[key] !== 'boolean') throw new FirkinError('bad_request', `${key} must be a boolean`);
    }
    // `target_auth` (a bare bearer token) is the original's field; `auth` wins.
    const rawAuth = body.auth ?? (typeof body.target_auth === 'string' ? { bearer_token: body.target_auth } : body.target_auth);
    const auth = parseAuth(rawAuth);
    const target = parseEndpoint(body.target, auth, 'target');
    const source: EndpointSpec = parseEndpoint(db, { kind: 'none' }, 'source');
    if (displayEndpoint(source) === displayEndpoint(target)) throw new FirkinError('bad_request', 'source and target are the same database');
    checkOutbound(target, this.#outbound);
    return { source, target, filter: parseFilter(body.filter), continuous: body.continuous === true, createTarget: body.create_target === true };
  }

  replicationId(request: ReplicationRequest): string {
    return replicationId(displayEndpoint(request.source), displayEndpoint(request.target), request.filter.raw ?? null);
  }

  /** A one-shot replication, run now; the result once caught up. */
  async runOnce(request: ReplicationRequest): Promise<ReplicationResult> {
    this.#checkOpen();
    const abort = new AbortController();
    const startedAt = new Date(this.#o.clock.nowMs()).toISOString();
    const view: TaskView = {
      task_id: this.replicationId(request),
      policy: null,
      source: displayEndpoint(request.source),
      target: displayEndpoint(request.target),
      mode: 'one_shot',
      filter: request.filter.raw ?? null,
      status: 'active',
      docs_read: 0,
      docs_written: 0,
      doc_write_failures: 0,
      last_seq: null,
      last_error: null,
      retry_at: null,
      consecutive_failures: 0,
      created_at: startedAt,
      updated_at: startedAt,
    };
    this.#oneShots.set(abort, view);
    const onBatch = (p: Progress) => {
      Object.assign(view, { docs_read: p.docs_read, docs_written: p.docs_written, doc_write_failures: p.doc_write_failures, last_seq: p.last_seq });
      view.updated_at = new Date(this.#o.clock.nowMs()).toISOString();
    };
    try {
      const { source, target } = await this.#prepare(request, abort.signal);
      const result = await replicate(this.#runOptions(request, source, target, false, abort.signal, onBatch));
      onBatch(result);
      view.status = 'completed';
      return result;
    } catch (err) {
      view.status = 'error';
      view.last_error = errorText(err);
      view.consecutive_failures = 1;
      throw err;
    } finally {
      view.updated_at = new Date(this.#o.clock.nowMs()).toISOString();
      this.#oneShots.delete(abort);
      this.#recentOneShots.push(view);
      if (this.#recentOneShots.length > RECENT_ONE_SHOTS) this.#recentOneShots.shift();
    }
  }

  /** One-shot `_replicate` runs: the running ones, then the last few that ended (newest last). */
  oneShots(): TaskView[] {
    return [...this.#oneShots.values(), ...this.#recentOneShots].map((v) => ({ ...v }));
  }

  /** Cancels running one-shot runs with this id; how many there were. */
  cancelOneShots(id: string): number {
    let n = 0;
    for (const [abort, view] of this.#oneShots) {
      if (view.task_id !== id) continue;
      abort.abort(new FirkinError('unavailable', 'the replication was cancelled'));
      n++;
    }
    return n;
  }

  async #prepare(request: ReplicationRequest, signal: AbortSignal | undefined): Promise<{ source: Endpoint; target: Endpoint }> {
    checkOutbound(request.source, this.#outbound);
    checkOutbound(request.target, this.#outbound);
    const source = openEndpoint(request.source, this.#endpointDeps, signal);
    const target = openEndpoint(request.target, this.#endpointDeps, signal);
    if (!(await source.exists())) throw new FirkinError('not_found', `source database ${JSON.stringify(source.display)} does not exist`);
    if (!(await target.exists())) {
      if (!request.createTarget) throw new FirkinError('not_found', `target database ${JSON.stringify(target.display)} does not exist (send create_target: true to create it)`);
      await target.create();
    }
    return { source, target };
  }

  #runOptions(request: ReplicationRequest, source: Endpoint, target: Endpoint, continuous: boolean, signal: AbortSignal | undefined, onBatch?: (p: Progress, b: { rows: number; written: number }) => void) {
    const log = this.#o.log;
    return {
      onSourceReadOnly: (reason: string) =>
        log.warn({ source: displayEndpoint(request.source), target: displayEndpoint(request.target), reason }, 'the replication source refused its checkpoint (a read-only key): the target alone keeps it'),
      source,
      target,
      repId: this.replicationId(request),
      filter: request.filter,
      continuous,
      sessionId: randomBytes(16).toString('hex'),
      batchSize: this.#o.settings.batchSize,
      waitMs: this.#o.settings.waitMs,
      clock: this.#o.clock,
      signal,
      onBatch,
    };
  }

  // ---- tasks --------------------------------------------------------------------------

  #requestOf(record: TaskRecord): ReplicationRequest {
    return {
      source: loadEndpoint(record.source),
      target: loadEndpoint(record.target),
      filter: parseFilter(record.filter ?? undefined),
      continuous: record.continuous,
      createTarget: record.create_target,
    };
  }

  #newTask(record: TaskRecord, request: ReplicationRequest): Task {
    const machine: TaskMachine =
      record.status === 'stopped'
        ? { state: { kind: 'stopped', lastError: record.last_error ?? undefined }, failures: 0 }
        : record.status === 'completed'
          ? { state: { kind: 'completed' }, failures: 0 }
          : INITIAL;
    return { record, request, machine, abort: undefined, running: undefined, updatedAtMs: this.#o.clock.nowMs() };
  }

  /**
   * Create or update a persisted task and make it run. An existing task with the same id
   * keeps its counters; a changed spec restarts it; `restart` also restarts a stopped or
   * completed one.
   */
  async upsertTask(id: string, request: ReplicationRequest, options: { policy: string | null; restart: boolean }): Promise<TaskView> {
    this.#checkOpen();
    const existing = this.#tasks.get(id);
    const record: TaskRecord = {
      id,
      source: storeEndpoint(request.source),
      target: storeEndpoint(request.target),
      filter: request.filter.raw ?? null,
      continuous: request.continuous,
      create_target: request.createTarget,
      policy: options.policy,
      created_at: existing?.record.created_at ?? this.#o.clock.nowMs(),
      status: 'run',
      docs_read: existing?.record.docs_read ?? 0,
      docs_written: existing?.record.docs_written ?? 0,
      doc_write_failures: existing?.record.doc_write_failures ?? 0,
      last_seq: existing?.record.last_seq ?? null,
      last_error: existing?.record.last_error ?? null,
    };
    const spec = (r: TaskRecord) => JSON.stringify([r.source, r.target, r.filter, r.continuous, r.create_target, r.policy]);
    if (existing !== undefined && spec(existing.record) === spec(record)) {
      const status = existing.record.status;
      // Running (or waiting for start) stays as it is; stopped or completed unless restarted.
      if (status === 'run' && (existing.running !== undefined || !this.#started)) return this.#view(existing);
      if (status !== 'run' && !options.restart) return this.#view(existing);
    }
    if (existing !== undefined) await this.#halt(existing);
    const task = this.#newTask(record, request);
    this.#tasks.set(id, task);
    await this.#persist(task, true);
    this.#launch(task);
    return this.#view(task);
  }

  async stopTask(id: string): Promise<TaskView> {
    const task = this.#get(id);
    await this.#halt(task);
    task.machine = step(task.machine, { kind: 'stop' }, this.#o.rand, this.#backoff);
    if (task.record.status === 'run') task.record.status = 'stopped';
    task.record.last_error = lastError(task.machine.state);
    await this.#persist(task, true);
    return this.#view(task);
  }

  async removeTask(id: string): Promise<void> {
    const task = this.#get(id);
    await this.#halt(task);
    this.#tasks.delete(id);
    await this.#o.store.del('system', taskKey(id), { sync: true });
  }

  has(id: string): boolean {
    return this.#tasks.has(id);
  }

  get(id: string): TaskView {
    return this.#view(this.#get(id));
  }

  list(filter?: { policy?: string }): TaskView[] {
    return [...this.#tasks.values()].filter((t) => filter?.policy === undefined || t.record.policy === filter.policy).map((t) => this.#view(t)).sort((a, b) => (a.task_id < b.task_id ? -1 : 1));
  }

  #get(id: string): Task {
    const task = this.#tasks.get(id);
    if (task === undefined) throw new FirkinError('not_found', `replication task ${JSON.stringify(id)} not found`);
    return task;
  }

  #view(task: Task): TaskView {
    const r = task.record;
    const s = task.machine.state;
    return {
      task_id: r.id,
      policy: r.policy,
      source: displayEndpoint(task.request.source),
      target: displayEndpoint(task.request.target),
      mode: r.continuous ? 'continuous' : 'one_shot',
      filter: r.filter,
      status: s.kind,
      docs_read: r.docs_read,
      docs_written: r.docs_written,
      doc_write_failures: r.doc_write_failures,
      last_seq: r.last_seq,
      last_error: lastError(s) ?? r.last_error,
      retry_at: s.kind === 'error' ? new Date(s.retryAtMs).toISOString() : null,
      consecutive_failures: task.machine.failures,
      created_at: new Date(r.created_at).toISOString(),
      updated_at: new Date(task.updatedAtMs).toISOString(),
    };
  }

  async #persist(task: Task, sync: boolean): Promise<void> {
    task.updatedAtMs = this.#o.clock.nowMs();
    if (this.#o.store.state !== 'open') return;
    await this.#o.store.put('system', taskKey(task.record.id), taskCodec.encode(task.record), { sync });
  }

  async #halt(task: Task): Promise<void> {
    task.abort?.abort();
    await task.running;
  }

  #launch(task: Task): void {
    if (!this.#started || this.#closed || task.running !== undefined) return;
    const abort = new AbortController();
    task.abort = abort;
    task.machine = step(task.machine, { kind: 'start' }, this.#o.rand, this.#backoff);
    task.running = this.#loop(task, abort.signal)
      .catch((err: unknown) => this.#o.log.error({ task: task.record.id, err }, 'replication task crashed'))
      .finally(() => {
        task.running = undefined;
        task.abort = undefined;
      });
  }

  async #loop(task: Task, signal: AbortSignal): Promise<void> {
    const log = this.#o.log.child({ task: task.record.id, source: displayEndpoint(task.request.source), target: displayEndpoint(task.request.target) });
    log.info({ mode: task.record.continuous ? 'continuous' : 'one_shot' }, 'replication task started');
    while (!signal.aborted) {
      const state = task.machine.state;
      if (state.kind === 'error') {
        await delay(state.retryAtMs - this.#o.clock.nowMs(), signal);
        if (signal.aborted) break;
        task.machine = step(task.machine, { kind: 'retry' }, this.#o.rand, this.#backoff);
        task.updatedAtMs = this.#o.clock.nowMs();
        log.info({ attempt: task.machine.failures + 1 }, 'replication task retrying');
      }
      const base = { docs_read: task.record.docs_read, docs_written: task.record.docs_written, doc_write_failures: task.record.doc_write_failures };
      try {
        const { source, target } = await this.#prepare(task.request, signal);
        const onBatch = (p: Progress, b: { rows: number; written: number }) => {
          task.record.docs_read = base.docs_read + p.docs_read;
          task.record.docs_written = base.docs_written + p.docs_written;
          task.record.doc_write_failures = base.doc_write_failures + p.doc_write_failures;
          task.record.last_seq = p.last_seq;
          task.record.last_error = null;
          task.machine = step(task.machine, { kind: 'progress' }, this.#o.rand, this.#backoff);
          void this.#persist(task, false).catch(() => undefined);
          if (b.written > 0) log.info({ changes: b.rows, written: b.written, docs_written: task.record.docs_written, last_seq: p.last_seq }, 'replication progress');
        };
        await replicate(this.#runOptions(task.request, source, target, task.record.continuous, signal, onBatch));
        if (signal.aborted) break;
        task.machine = step(task.machine, { kind: 'done' }, this.#o.rand, this.#backoff);
        task.record.status = 'completed';
        await this.#persist(task, true);
        log.info({ docs_written: task.record.docs_written }, 'replication task completed');
        return;
      } catch (err) {
        if (signal.aborted) break;
        const error = errorText(err);
        task.machine = step(task.machine, { kind: 'failure', error, nowMs: this.#o.clock.nowMs() }, this.#o.rand, this.#backoff);
        task.record.last_error = error;
        await this.#persist(task, true).catch(() => undefined);
        const s = task.machine.state;
        log.warn({ error, retry_at: s.kind === 'error' ? new Date(s.retryAtMs).toISOString() : undefined, attempt: task.machine.failures }, 'replication task failed');
      }
    }
    log.info('replication task halted');
  }

  /** For /health: `degraded` while a task is in error. */
  /**
   * For /health: the counts for anyone; a failing task is described (ids, endpoints, error)
   * to a viewer who may read one of its local databases, as `GET /_replications` lists it.
   */
  health(viewer: HealthViewer): { status: 'ok' | 'degraded'; tasks: number; active: number; error: number; stopped: number; completed: number; problems?: string[] } {
    const views = this.list();
    const count = (s: TaskStatus) => views.filter((v) => v.status === s).length;
    const failing = views.filter((v) => v.status === 'error');
    const report = { tasks: views.length, active: count('active'), error: failing.length, stopped: count('stopped'), completed: count('completed') };
    if (failing.length === 0) return { status: 'ok', ...report };
    const shown = failing.filter((v) => localDbsOf(v).some((db) => viewer.mayRead(db)));
    const problems = shown.map((v) => `replication ${v.task_id} (${v.source} -> ${v.target}) failing: ${v.last_error}`);
    const hidden = failing.length - shown.length;
    if (hidden > 0) problems.push(`${hidden} failing replication ${hidden === 1 ? 'task' : 'tasks'} of databases this key may not read`);
    return { status: 'degraded', ...report, problems };
  }

  #checkOpen(): void {
    if (this.#closed) throw new FirkinError('unavailable', 'replication is shutting down');
  }

  /** Stop every task (their state stays as persisted, so they resume at the next start). */
  async close(): Promise<void> {
    this.#closed = true;
    for (const abort of this.#oneShots.keys()) abort.abort();
    await Promise.all([...this.#tasks.values()].map((t) => this.#halt(t)));
  }
}
