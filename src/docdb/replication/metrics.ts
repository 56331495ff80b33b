// Replication on /metrics, sampled from the task list at scrape time (no bookkeeping on the
// replication path): tasks by status, and per task its cumulative counters and failures in
// a row. Task ids are bounded by the tasks that exist, so the label set stays small.
import { Gauge, type Registry } from 'prom-client';
import type { ReplicationManager } from './manager.js';
import { TASK_STATUSES } from './task-state.js';

export function registerReplicationMetrics(registry: Registry, tasks: Pick<ReplicationManager, 'list'>): void {
  new Gauge({
    name: 'firkin_replication_tasks',
    help: 'Replication tasks by status',
    labelNames: ['status'] as const,
    registers: [registry],
    collect() {
      const counts = new Map<string, number>(TASK_STATUSES.map((s) => [s, 0]));
      for (const t of tasks.list()) counts.set(t.status, (counts.get(t.status) ?? 0) + 1);
      this.reset();
      for (const [status, n] of counts) this.set({ status }, n);
    },
  });
  const perTask = (name: string, help: string, pick: (t: ReturnType<typeof tasks.list>[number]) => number) =>
    new Gauge({
      name,
      help,
      labelNames: ['task'] as const,
      registers: [registry],
      collect() {
        this.reset(); // a deleted task's series disappears
        for (const t of tasks.list()) this.set({ task: t.task_id }, pick(t));
      },
    });
  perTask('firkin_replication_docs_read', 'Documents read from the source, cumulative per task', (t) => t.docs_read);
  perTask('firkin_replication_docs_written', 'Documents written to the target, cumulative per task', (t) => t.docs_written);
  perTask('firkin_replication_doc_write_failures', 'Documents the target refused, cumulative per task', (t) => t.doc_write_failures);
  perTask('firkin_replication_consecutive_failures', 'Failed attempts in a row (0 when healthy)', (t) => t.consecutive_failures);
}
