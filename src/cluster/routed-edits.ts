// A VDB write's edits routed to the shards that own their ids, and routed again when a split or
// merge switched the map under them. The loop only: the caller injects the map, the routing and
// the proposals (`DocShards.#write`), so its retry rules are tested with fakes.
//
// A proposal that failed outright once the map moved may have applied before its range moved:
// the new shard then has its documents (copied), but not its request id, and routing it there
// again would apply it again (a create answered 409). So it is first asked again of the same
// shard under the same request id, as first sent: the shard answers from its request table if
// it applied it (the table is read before the fence), or refuses it whole, with no effect, if
// it did not, and only then are its edits routed on. Each edit also keeps the request id of the
// command it was first proposed in (a retry groups edits by shard and request id), so a shard
// that applied a command and is sent part of it again answers that part from its table.

import { FirkinError } from '../core/errors.js';

/** What a shard answered a command of edits: their results, in order, or a refusal with no effect. */
export type EditsAnswer<R> = { readonly kind: 'fenced' } | { readonly kind: 'edits'; readonly results: readonly R[] };

export interface RoutedEditsDeps<M, E, R> {
  /** The map to route on now. */
  map(): Promise<M>;
  /** The shard `edit` goes to on `map`, or the result refusing it there (a read-only shard). */
  route(map: M, edit: E): { readonly shard: number } | { readonly refused: R };
  /** Proposes `edits` to `shard` of `map` under request id `rid`. */
  propose(map: M, shard: number, rid: string, edits: E[]): Promise<EditsAnswer<R>>;
  /** A newer map than `map` has been applied here. */
  moved(map: M): boolean;
  /** Waits (bounded) for a newer map than `map`. */
  awaitNewer(map: M): Promise<void>;
  newRid(): string;
  /** Is `result` the result of `edit`? (An answer from a request table can hold more edits than were sent: see below.) */
  resultOf(edit: E, result: R): boolean;
  /** Routings again past this many: the error to throw. */
  readonly retriesMax: number;
  tooManyRetries(): Error;
}

/** A command whose proposal failed after the map moved: applied or not, only its shard can say. */
interface Uncertain<M> {
  readonly map: M;
  readonly shard: number;
  readonly rid: string;
  readonly idx: readonly number[];
  /** Times it was asked again and did not answer. */
  readonly asks: number;
}

/** A command in doubt is asked again of its shard this many times before its edits are routed on (a merged source gone costs each its proposal timeout). */
const UNCERTAIN_ASKS = 2;

/** Results in the order of `edits`; an entry that is a result already is kept as it is. */
export async function routeEdits<M, E, R>(edits: readonly (E | { readonly result: R })[], deps: RoutedEditsDeps<M, E, R>): Promise<R[]> {
  const results: R[] = new Array(edits.length);
  /** Edit index -> the request id it was first proposed under. */
  const ridOf = new Map<number, string>();
  let todo: number[] = [];
  edits.forEach((e, i) => {
    if (isResult(e)) results[i] = e.result;
    else todo.push(i);
  });
  let uncertain: Uncertain<M>[] = [];
  for (let attempt = 0; todo.length > 0 || uncertain.length > 0; attempt++) {
    const again: number[] = [];
    const stillUncertain: Uncertain<M>[] = [];
    /** Takes the results of edits `idx` from `answer`, or sends them to `refused` (no effect: to be routed). */
    const settle = (shard: number, idx: readonly number[], answer: EditsAnswer<R>, refused: number[]): void => {
      if (answer.kind === 'fenced') {
        refused.push(...idx);
        return;
      }
      const matched = matchResults(idx.map((i) => edits[i] as E), answer.results, deps.resultOf);
      if (matched === undefined) throw new FirkinError('error', `shard ${shard} answered ${idx.length} edits with ${answer.results.length} results that do not match them`);
      matched.forEach((r, j) => (results[idx[j]!] = r));
    };
    // First the commands that may have applied: asked again of the same shard, same id, as
    // first sent. It answers what it did (its request table is read before its fence), or
    // refuses them whole with no effect, and they are routed now; unreachable, it is asked again
    // next round, up to UNCERTAIN_ASKS times, then they are routed (a merged source's replicas
    // are gone for good: a write it applied before the copy may then be applied again).
    await Promise.all(
      uncertain.map(async (u) => {
        try {
          settle(u.shard, u.idx, await deps.propose(u.map, u.shard, u.rid, u.idx.map((i) => edits[i] as E)), todo);
        } catch {
          if (u.asks + 1 < UNCERTAIN_ASKS) stillUncertain.push({ ...u, asks: u.asks + 1 });
          else todo.push(...u.idx);
        }
      }),
    );
    todo.sort((a, b) => a - b);
    const map = await deps.map();
    // Keyed by shard and request id: a shard's new edits share a fresh id.
    const groups = new Map<string, { shard: number; rid: string; idx: number[] }>();
    const fresh = new Map<number, string>();
    for (const i of todo) {
      const routed = deps.route(map, edits[i] as E);
      if ('refused' in routed) {
        results[i] = routed.refused;
        continue;
      }
      let rid = ridOf.get(i);
      if (rid === undefined) {
        rid = fresh.get(routed.shard) ?? deps.newRid();
        fresh.set(routed.shard, rid);
        ridOf.set(i, rid);
      }
      const key = `${routed.shard}\0${rid}`;
      const group = groups.get(key) ?? { shard: routed.shard, rid, idx: [] };
      group.idx.push(i);
      groups.set(key, group);
    }
    await Promise.all(
      [...groups.values()].map(async ({ shard, rid, idx }) => {
        let answer: EditsAnswer<R>;
        try {
          answer = await deps.propose(map, shard, rid, idx.map((i) => edits[i] as E));
        } catch (err) {
          // Failed as the map moved: it may have applied before its range moved.
          if (!deps.moved(map)) throw err;
          stillUncertain.push({ map, shard, rid, idx, asks: 0 });
          return;
        }
        settle(shard, idx, answer, again);
      }),
    );
    uncertain = stillUncertain;
    todo = again.sort((a, b) => a - b);
    if (todo.length === 0 && uncertain.length === 0) break;
    if (attempt >= deps.retriesMax) throw deps.tooManyRetries();
    // Refused edits wait for the map that moved them; commands in doubt are only asked again.
    if (todo.length > 0) await deps.awaitNewer(map);
  }
  return results;
}

/**
 * The results of `part`, in order. A shard's request table answers with the results of the
 * whole command it applied under that id, which holds more edits than `part` when the same
 * shard was asked again for part of it only (the command applied, its answer was lost twice,
 * and the map moved some of its ids away): each edit then takes the first unused result that
 * is its own.
 */
function matchResults<E, R>(part: readonly E[], results: readonly R[], resultOf: (edit: E, result: R) => boolean): R[] | undefined {
  if (results.length === part.length && part.every((edit, j) => resultOf(edit, results[j]!))) return [...results];
  const used = new Set<number>();
  const out: R[] = [];
  for (const edit of part) {
    const at = results.findIndex((r, i) => !used.has(i) && resultOf(edit, r));
    if (at < 0) return undefined;
    used.add(at);
    out.push(results[at]!);
  }
  return out;
}

function isResult<E, R>(e: E | { readonly result: R }): e is { readonly result: R } {
  return typeof e === 'object' && e !== null && 'result' in e;
}
