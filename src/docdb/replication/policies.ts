// Replication policies: stored recipes (['repl.policy', name] in the `system` column family,
// JSON with credentials, never returned) that own their replication tasks. A new policy is
// disabled unless its body says `enabled: true`; enable starts its tasks, disable stops them
// (they stay listed as `stopped`), delete removes them. Enabled policies resume at boot.
import { BOOLEAN, STRING, STRING_ARRAY, jsonRecordCodec, objectSchema } from '../../core/codec.js';
import { FirkinError } from '../../core/errors.js';
import { encodeKey, prefixRange } from '../../core/keys.js';
import type { Store } from '../../storage/db.js';
import type { ReplicationManager, TaskView } from './manager.js';
import { MODES, PATTERNS, type Policy, type TaskSpec, checkPolicyName, expandPolicy, parsePolicy, publicPolicy } from './policy.js';
import type { OutboundPolicy } from '../../core/outbound.js';
import { SerialQueue } from '../../core/serial.js';
import { checkOutbound } from './endpoint-spec.js';

const policyKey = (name: string) => encodeKey(['repl.policy', name]);

export interface PolicyStatus {
  name: string;
  pattern: string;
  mode: string;
  enabled: boolean;
  task_count: number;
  tasks: Pick<TaskView, 'task_id' | 'source' | 'target' | 'status' | 'docs_read' | 'docs_written' | 'doc_write_failures' | 'last_seq' | 'last_error' | 'retry_at'>[];
}

const policyCodec = jsonRecordCodec<Policy>(
  'replication policy record',
  objectSchema({ name: STRING, pattern: { enum: PATTERNS }, mode: { enum: MODES }, enabled: BOOLEAN }, { nodes: STRING_ARRAY, database: STRING, members: STRING_ARRAY, source: STRING, targets: STRING_ARRAY }),
);

export class PolicyManager {
  readonly #store: Store;
  readonly #tasks: ReplicationManager;
  readonly #outbound: OutboundPolicy;
  readonly #policies = new Map<string, Policy>();
  /** Policy operations run one at a time: enable/disable/delete of one name never interleave. */
  readonly #queue = new SerialQueue();

  private constructor(store: Store, tasks: ReplicationManager, outbound: OutboundPolicy) {
    this.#store = store;
    this.#tasks = tasks;
    this.#outbound = outbound;
  }

  /** Load the policies and reconcile their tasks (call after the task manager is open). */
  static async open(store: Store, tasks: ReplicationManager, outbound: OutboundPolicy): Promise<PolicyManager> {
    const pm = new PolicyManager(store, tasks, outbound);
    for await (const [, value] of store.entries('system', prefixRange(['repl.policy']))) {
      const policy = policyCodec.decode(value);
      pm.#policies.set(policy.name, policy);
    }
    for (const policy of pm.#policies.values()) if (policy.enabled) await pm.#apply(policy, false);
    return pm;
  }

  #serial<T>(fn: () => Promise<T>): Promise<T> {
    return this.#queue.run(fn);
  }

  #get(name: string): Policy {
    checkPolicyName(name);
    const policy = this.#policies.get(name);
    if (policy === undefined) throw new FirkinError('not_found', `policy ${JSON.stringify(name)} not found`);
    return policy;
  }

  #check(policy: Policy): TaskSpec[] {
    const specs = expandPolicy(policy);
    for (const s of specs) {
      checkOutbound(s.source, this.#outbound);
      checkOutbound(s.target, this.#outbound);
    }
    return specs;
  }

  async #save(policy: Policy): Promise<void> {
    await this.#store.put('system', policyKey(policy.name), policyCodec.encode(policy), { sync: true });
    this.#policies.set(policy.name, policy);
  }

  /** Start (or keep running) the policy's tasks; drop tasks it no longer has. */
  async #apply(policy: Policy, restart: boolean): Promise<void> {
    const specs = expandPolicy(policy);
    const ids = new Set(specs.map((s) => s.id));
    for (const t of this.#tasks.list({ policy: policy.name })) if (!ids.has(t.task_id)) await this.#tasks.removeTask(t.task_id);
    for (const s of specs) {
      await this.#tasks.upsertTask(s.id, { source: s.source, target: s.target, filter: s.filter, continuous: s.continuous, createTarget: false }, { policy: policy.name, restart });
    }
  }

  async #removeTasks(name: string): Promise<void> {
    for (const t of this.#tasks.list({ policy: name })) await this.#tasks.removeTask(t.task_id);
  }

  create(raw: unknown): Promise<{ ok: true; name: string; enabled: boolean }> {
    return this.#serial(async () => {
      const policy = parsePolicy(raw);
      if (this.#policies.has(policy.name)) throw new FirkinError('conflict', `policy ${JSON.stringify(policy.name)} already exists`);
      this.#check(policy);
      await this.#save(policy);
      if (policy.enabled) await this.#apply(policy, true);
      return { ok: true, name: policy.name, enabled: policy.enabled };
    });
  }

  /** PUT: replace the definition; an enabled policy keeps running with the new one. */
  replace(name: string, raw: unknown): Promise<{ ok: true; name: string; enabled: boolean }> {
    return this.#serial(async () => {
      checkPolicyName(name);
      const parsed = parsePolicy(raw, name);
      const before = this.#policies.get(name);
      const enabled = (raw as { enabled?: unknown }).enabled === undefined ? (before?.enabled ?? false) : parsed.enabled;
      const policy: Policy = { ...parsed, enabled };
      this.#check(policy);
      await this.#save(policy);
      if (enabled) await this.#apply(policy, true);
      else await this.#removeTasks(name);
      return { ok: true, name, enabled };
    });
  }

  list(): Record<string, unknown>[] {
    return [...this.#policies.values()].sort((a, b) => (a.name < b.name ? -1 : 1)).map(publicPolicy);
  }

  get(name: string): Record<string, unknown> {
    return publicPolicy(this.#get(name));
  }

  enable(name: string): Promise<{ ok: true; name: string; enabled: true; task_count: number }> {
    return this.#serial(async () => {
      const policy = { ...this.#get(name), enabled: true };
      this.#check(policy);
      await this.#save(policy);
      await this.#apply(policy, true);
      return { ok: true, name, enabled: true, task_count: this.#tasks.list({ policy: name }).length };
    });
  }

  disable(name: string): Promise<{ ok: true; name: string; enabled: false }> {
    return this.#serial(async () => {
      const policy = { ...this.#get(name), enabled: false };
      await this.#save(policy);
      for (const t of this.#tasks.list({ policy: name })) await this.#tasks.stopTask(t.task_id);
      return { ok: true, name, enabled: false };
    });
  }

  delete(name: string): Promise<{ ok: true; name: string }> {
    return this.#serial(async () => {
      this.#get(name);
      await this.#removeTasks(name);
      await this.#store.del('system', policyKey(name), { sync: true });
      this.#policies.delete(name);
      return { ok: true, name };
    });
  }

  status(name: string): PolicyStatus {
    const policy = this.#get(name);
    const tasks = this.#tasks.list({ policy: name });
    return {
      name,
      pattern: policy.pattern,
      mode: policy.mode,
      enabled: policy.enabled,
      task_count: tasks.length,
      tasks: tasks.map((t) => ({
        task_id: t.task_id,
        source: t.source,
        target: t.target,
        status: t.status,
        docs_read: t.docs_read,
        docs_written: t.docs_written,
        doc_write_failures: t.doc_write_failures,
        last_seq: t.last_seq,
        last_error: t.last_error,
        retry_at: t.retry_at,
      })),
    };
  }
}
