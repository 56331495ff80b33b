// CouchDB 2+ lists in `GET /_active_tasks` what every node of the cluster works on, each task
// naming its `node`. A node's replications, compactions and VDB imports are its own (an import
// runs inside the request that started it, on the node that took it), so the node asked
// gathers the other members' lists over the cluster links (`tasks.list`), and a cancel of a
// VDB's imports reaches the node running them wherever it was asked (`tasks.cancel_imports`).
// A member that does not answer within the bound (a link down, a stopped process) is left out
// and logged; a down one is not asked, nor one of a build before these calls (protocol 2).
import type { Logger } from 'pino';
import { decodeCbor, encodeCbor } from '../core/codec.js';
import { FirkinError } from '../core/errors.js';
import type { ClusterMember } from './member.js';

/** The cluster protocol of the first builds that answer `tasks.*`. */
export const TASKS_PROTOCOL = 2;
/** How long the node asked waits for each member's answer. */
const PEER_TIMEOUT_MS = 2_000;

/** What this node works on, as its own `_active_tasks` entries. */
export interface LocalTasks {
  list(): Record<string, unknown>[];
  /** Cancels the imports into `vdb` running here; how many. */
  cancelImports(vdb: string): number;
}

export interface PeerCancel {
  cancelled: number;
  /** Members of a build before these calls: not asked. */
  older: string[];
  /** Members that did not answer. */
  unreachable: string[];
}

export class PeerTasks {
  readonly #member: ClusterMember;
  readonly #local: LocalTasks;
  readonly #log: Logger;

  constructor(member: ClusterMember, local: LocalTasks, log: Logger) {
    this.#member = member;
    this.#local = local;
    this.#log = log;
    member.handleCalls('tasks', (_from, method, body) => this.#answer(method, body));
  }

  async #answer(method: string, body: Buffer): Promise<Uint8Array> {
    switch (method) {
      case 'tasks.list':
        return encodeCbor(this.#local.list());
      case 'tasks.cancel_imports': {
        const { vdb } = (decodeCbor(body) ?? {}) as { vdb?: unknown };
        if (typeof vdb !== 'string') throw new FirkinError('bad_request', 'tasks.cancel_imports without a VDB name');
        return encodeCbor({ cancelled: this.#local.cancelImports(vdb) });
      }
      default:
        throw new FirkinError('not_found', `unknown cluster call ${method}`);
    }
  }

  /** The other members to ask (live and not down, on protocol 2 or later), and the older ones left out. */
  #peers(): { ask: string[]; older: string[] } {
    const ask: string[] = [];
    const older: string[] = [];
    for (const n of this.#member.liveNodes()) {
      if (n.name === this.#member.name || n.status === 'down') continue;
      if ((n.protocol ?? 0) < TASKS_PROTOCOL) older.push(n.name);
      else ask.push(n.name);
    }
    return { ask, older };
  }

  /** The other members' tasks (each entry names its node); a member that fails to answer is left out. */
  async list(): Promise<Record<string, unknown>[]> {
    const { ask } = this.#peers();
    const lists = await Promise.all(
      ask.map((n) =>
        this.#member.callPeer(n, 'tasks.list', encodeCbor({}), PEER_TIMEOUT_MS).then(
          (reply) => {
            const list = decodeCbor(reply);
            return Array.isArray(list) ? (list as Record<string, unknown>[]) : [];
          },
          (err: unknown) => {
            this.#log.warn({ node: n, err: (err as Error).message }, `active tasks: ${n} did not answer; its tasks are left out`);
            return [];
          },
        ),
      ),
    );
    return lists.flat();
  }

  /** Cancels the imports into `vdb` on every other member. */
  async cancelImports(vdb: string): Promise<PeerCancel> {
    const { ask, older } = this.#peers();
    const unreachable: string[] = [];
    const counts = await Promise.all(
      ask.map((n) =>
        this.#member.callPeer(n, 'tasks.cancel_imports', encodeCbor({ vdb }), PEER_TIMEOUT_MS).then(
          (reply) => Number((decodeCbor(reply) as { cancelled?: unknown }).cancelled) || 0,
          () => {
            unreachable.push(n);
            return 0;
          },
        ),
      ),
    );
    return { cancelled: counts.reduce((a, b) => a + b, 0), older, unreachable: unreachable.sort() };
  }
}
