// POST /db/:db/_replicate and the task listing GET/DELETE /_replications[/:id].
import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import { keyAllows, requireKey } from '../hooks/auth.js';
import { FirkinError } from '../../core/errors.js';
import type { DocEngine } from '../../docdb/engine.js';
import { type ReplicationManager, type TaskView, localDbsOf } from '../../docdb/replication/manager.js';
import { answerWhenDone } from '../long-answer.js';

export interface ReplicationRouteDeps {
  docs: DocEngine;
  replication: ReplicationManager;
}

const dbParams = { type: 'object', required: ['db'], properties: { db: { type: 'string' } } } as const;
const idParams = { type: 'object', required: ['id'], properties: { id: { type: 'string', minLength: 1, maxLength: 200 } } } as const;

export const replicationRoutes: FastifyPluginAsync<ReplicationRouteDeps> = async (app, { docs, replication }) => {
  app.post<{ Params: { db: string }; Body: unknown }>('/db/:db/_replicate', { schema: { params: dbParams } }, async (request, reply) => {
    const req = replication.parseRequest(request.params.db, request.body);
    // The key must also be allowed to write a local target, not only the source.
    if (req.target.kind === 'local') requireKey(request, 'write', req.target.db);
    const taskId = replication.replicationId(req);
    if ((request.body as { cancel?: boolean }).cancel === true) {
      const running = replication.cancelOneShots(taskId);
      if (replication.has(taskId)) await replication.removeTask(taskId);
      else if (running === 0) throw new FirkinError('not_found', `no replication ${JSON.stringify(taskId)} to cancel`);
      return { ok: true, task_id: taskId, cancelled: true };
    }
    if (req.continuous) {
      docs.assertDb(request.params.db);
      if (req.target.kind === 'local' && !req.createTarget && !docs.has(req.target.db)) {
        throw new FirkinError('not_found', `target database ${JSON.stringify(req.target.db)} does not exist (send create_target: true to create it)`);
      }
      const task = await replication.upsertTask(taskId, req, { policy: null, restart: true });
      reply.code(202);
      return { ok: true, continuous: true, task_id: task.task_id, status: task.status };
    }
    const run = replication.runOnce(req).catch((err: unknown) => {
      if (err instanceof FirkinError && (err.code === 'bad_gateway' || err.code === 'timeout' || err.code === 'unavailable')) {
        throw new FirkinError(err.code, err.message, { details: { ...err.details, ok: false } });
      }
      throw err;
    });
    return answerWhenDone(run, replication.settings.keepAliveMs, request, reply);
  });

  /**
   * A key sees a task that touches a local database it may read, and may cancel or delete one
   * only with write on every local database it touches (what creating it needed).
   */
  const may = (request: FastifyRequest, permission: 'read' | 'write', view: TaskView): boolean => {
    if (request.apiKey === undefined) return true; // auth is off
    const dbs = localDbsOf(view);
    return permission === 'read' ? dbs.some((db) => keyAllows(request, 'read', db)) : dbs.length > 0 && dbs.every((db) => keyAllows(request, 'write', db));
  };
  const notFound = (id: string) => new FirkinError('not_found', `replication task ${JSON.stringify(id)} not found`);
  /** The task, else the newest one-shot run, with this id (undefined when neither). */
  const find = (id: string): TaskView | undefined => (replication.has(id) ? replication.get(id) : replication.oneShots().findLast((v) => v.task_id === id));

  // Tasks first, then one-shot runs (running, then the last few that ended).
  app.get('/_replications', async (request) => ({ replications: [...replication.list(), ...replication.oneShots()].filter((v) => may(request, 'read', v)) }));

  app.get<{ Params: { id: string } }>('/_replications/:id', { schema: { params: idParams } }, async (request) => {
    const view = find(request.params.id);
    // Another key's task is not found, as it is not listed.
    if (view === undefined || !may(request, 'read', view)) throw notFound(request.params.id);
    return view;
  });

  app.delete<{ Params: { id: string } }>('/_replications/:id', { schema: { params: idParams } }, async (request) => {
    const view = find(request.params.id);
    if (view === undefined || !may(request, 'read', view)) throw notFound(request.params.id);
    if (!may(request, 'write', view)) throw new FirkinError('forbidden', `this API key lacks the write permission on the databases of replication task ${JSON.stringify(request.params.id)}`);
    if (!replication.has(request.params.id) && replication.cancelOneShots(request.params.id) > 0) {
      return { ok: true, task_id: request.params.id, cancelled: true };
    }
    const task = replication.get(request.params.id);
    if (task.policy !== null) throw new FirkinError('conflict', `task ${JSON.stringify(task.task_id)} belongs to policy ${JSON.stringify(task.policy)}: disable or delete the policy`);
    await replication.removeTask(request.params.id);
    return { ok: true, task_id: request.params.id };
  });
};
