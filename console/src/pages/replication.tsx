import { api, enc } from '../api.js';
import { usePoll } from '../hooks.js';
import { ConfirmButton, Loaded, Pager, StatusDot, usePaged } from '../ui.js';

const REPLICATION_POLL_MS = 2_000;
const TASK_ID_SHOWN_CHARS = 12;

interface Task {
  task_id: string;
  policy: string | null;
  source: string;
  target: string;
  mode: 'continuous' | 'one_shot';
  status: string;
  docs_read: number;
  docs_written: number;
  doc_write_failures: number;
  last_error: string | null;
  retry_at: string | null;
}

interface Policy {
  name: string;
  pattern: 'chain' | 'group' | 'fanout';
  mode?: string;
  enabled: boolean;
  nodes?: string[];
  database?: string;
  members?: string[];
  source?: string;
  targets?: string[];
  has_auth?: boolean;
}

function endpoints(p: Policy): string {
  switch (p.pattern) {
    case 'chain':
      return `${(p.nodes ?? []).join(' → ')} (database ${p.database ?? '?'})`;
    case 'group':
      return `${(p.members ?? []).join(' ⇄ ')}`;
    case 'fanout':
      return `${p.source ?? '?'} → ${(p.targets ?? []).join(', ')}`;
  }
}

function shortId(id: string): string {
  return id.length > TASK_ID_SHOWN_CHARS ? `${id.slice(0, TASK_ID_SHOWN_CHARS)}…` : id;
}

function TaskActions({ task, reload }: { task: Task; reload: () => void }) {
  // A policy's tasks follow the policy: the API refuses to delete one alone (409).
  if (task.policy !== null) return <span class="muted">managed by policy {task.policy}</span>;
  if (task.mode === 'one_shot') {
    if (task.status !== 'active') return null;
    return (
      <ConfirmButton label="Cancel" ariaLabel={`Cancel replication ${task.task_id}`} question="Cancel this run?" confirmLabel="Yes, cancel" danger
        onConfirm={() => api('DELETE', `/_replications/${enc(task.task_id)}`)} onDone={reload} />
    );
  }
  return (
    <ConfirmButton label="Delete" ariaLabel={`Delete replication ${task.task_id}`} question={`Delete task ${shortId(task.task_id)}? It stops replicating.`} confirmLabel="Yes, delete" danger
      onConfirm={() => api('DELETE', `/_replications/${enc(task.task_id)}`)} onDone={reload} />
  );
}

function TasksTable({ tasks, reload }: { tasks: Task[]; reload: () => void }) {
  const [view, setPage] = usePaged(tasks);
  if (tasks.length === 0) return <p class="muted">No replication tasks. Start one with <code>POST /db/:db/_replicate</code> (<code>continuous: true</code> keeps it) or a policy.</p>;
  return (
    <>
      <table aria-label="Replication tasks">
        <thead>
          <tr><th>task</th><th>source → target</th><th>mode</th><th>status</th><th>docs read</th><th>docs written</th><th>write failures</th><th>last error</th><th>actions</th></tr>
        </thead>
        <tbody>
          {view.rows.map((task) => (
            <tr key={`${task.task_id}:${task.mode}`} data-task={task.task_id}>
              <td title={task.task_id}><code>{shortId(task.task_id)}</code></td>
              <td class="wrap">{task.source} → {task.target}</td>
              <td>{task.mode === 'one_shot' ? 'one-shot' : 'continuous'}</td>
              <td class="task-status"><StatusDot status={task.status} /> {task.status}</td>
              <td>{task.docs_read}</td>
              <td>{task.docs_written}</td>
              <td>{task.doc_write_failures}</td>
              <td class="wrap">{task.last_error ?? ''}{task.retry_at !== null && <span class="muted"> (retry at {task.retry_at})</span>}</td>
              <td><TaskActions task={task} reload={reload} /></td>
            </tr>
          ))}
        </tbody>
      </table>
      <Pager view={view} total={tasks.length} onPage={setPage} label="Replication tasks" />
    </>
  );
}

function taskSummary(policy: string, tasks: Task[]): string {
  const mine = tasks.filter((t) => t.policy === policy);
  if (mine.length === 0) return 'no tasks';
  const byStatus = new Map<string, number>();
  for (const t of mine) byStatus.set(t.status, (byStatus.get(t.status) ?? 0) + 1);
  return [...byStatus].map(([status, n]) => `${n} ${status}`).join(', ');
}

function PoliciesTable({ policies, tasks, reload }: { policies: Policy[]; tasks: Task[]; reload: () => void }) {
  const [view, setPage] = usePaged(policies);
  if (policies.length === 0) return <p class="muted">No policies. Create one with <code>POST /_policies</code> (chain, group or fanout).</p>;
  return (
    <>
      <table aria-label="Replication policies">
        <thead>
          <tr><th>policy</th><th>pattern</th><th>endpoints</th><th>mode</th><th>enabled</th><th>tasks</th><th>actions</th></tr>
        </thead>
        <tbody>
          {view.rows.map((p) => (
            <tr key={p.name} data-policy={p.name}>
              <td>{p.name}</td>
              <td>{p.pattern}</td>
              <td class="wrap">{endpoints(p)}{p.has_auth === true && <span class="muted"> (with credentials)</span>}</td>
              <td>{p.mode ?? 'continuous'}</td>
              <td class="policy-enabled">{p.enabled ? 'enabled' : 'disabled'}</td>
              <td>{taskSummary(p.name, tasks)}</td>
              <td>
                <span class="row">
                  {p.enabled ? (
                    <ConfirmButton label="Disable" ariaLabel={`Disable policy ${p.name}`} question={`Disable ${p.name}? Its tasks stop.`} confirmLabel="Yes, disable"
                      onConfirm={() => api('POST', `/_policies/${enc(p.name)}/_disable`)} onDone={reload} />
                  ) : (
                    <ConfirmButton label="Enable" ariaLabel={`Enable policy ${p.name}`} question={`Enable ${p.name}? Its tasks start.`} confirmLabel="Yes, enable"
                      onConfirm={() => api('POST', `/_policies/${enc(p.name)}/_enable`)} onDone={reload} />
                  )}
                  <ConfirmButton label="Delete" ariaLabel={`Delete policy ${p.name}`} question={`Delete ${p.name} and its tasks?`} confirmLabel="Yes, delete" danger
                    onConfirm={() => api('DELETE', `/_policies/${enc(p.name)}`)} onDone={reload} />
                </span>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      <Pager view={view} total={policies.length} onPage={setPage} label="Replication policies" />
    </>
  );
}

export function ReplicationPage() {
  const [tasks, reloadTasks] = usePoll(async () => (await api<{ replications: Task[] }>('GET', '/_replications')).replications, [], REPLICATION_POLL_MS);
  // Policies need an admin key: any other key sees the node's 403 here, and the tasks above.
  const [policies, reloadPolicies] = usePoll(async () => (await api<{ policies: Policy[] }>('GET', '/_policies')).policies, [], REPLICATION_POLL_MS);
  const reload = () => {
    reloadTasks();
    reloadPolicies();
  };
  const taskList = tasks.state === 'ready' ? tasks.value : [];
  return (
    <>
      <section aria-label="Tasks">
        <h2>Tasks</h2>
        <p class="muted">Continuous replications and policy tasks, then one-shot runs (running, and the last few that ended). Refreshed every 2 s.</p>
        <Loaded load={tasks}>{(list) => <TasksTable tasks={list} reload={reload} />}</Loaded>
      </section>
      <section aria-label="Policies">
        <h2>Policies</h2>
        <Loaded load={policies}>{(list) => <PoliciesTable policies={list} tasks={taskList} reload={reload} />}</Loaded>
      </section>
    </>
  );
}
