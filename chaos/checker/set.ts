// Checker of the `set` workload: clients add elements to a set and delete them while faults
// run; after healing, each node reads the whole set (the final reads). Pure: a history in,
// anomalies and figures out.
//
// For each element and each final read (invoked after every other operation ended, or gave
// up), the read must show the element present or absent as some order of the operations
// allows: any order consistent with real time (an op precedes another if it completed before
// the other was invoked), failed ops left out, unknown ops in or out, and unknown ops ending
// at +infinity. Elements are independent, and the final state of one is set by whichever of
// its adds and deletes comes last, which gives three anomalies:
//
// - lost: absent, though an acknowledged add came after every add-or-delete that could have
//   removed it (every delete that is ok or unknown completed before that add was invoked);
// - unexpected: present, though nobody attempted to add it (no add that is ok or unknown);
// - deleted-present: present, though an acknowledged delete came after every add that is ok
//   or unknown (each completed before that delete was invoked).
//
// These are exact, not only sound: a read that raises none of them is consistent with some
// such order (property-tested against brute force in test/chaos/checker/set.test.ts).
import { type OutcomeCounts, type SetElement, type SetOp, countOutcomes } from './history.js';

export interface SetAnomaly {
  readonly type: 'lost' | 'unexpected' | 'deleted-present' | 'no-final-read';
  readonly element?: SetElement;
  /** The node whose final read shows it. */
  readonly node?: string;
  readonly detail: string;
}

export interface SetCheck {
  readonly ok: boolean;
  readonly anomalies: readonly SetAnomaly[];
  /** Distinct elements per anomaly, over all final reads. */
  readonly lost: readonly SetElement[];
  readonly unexpected: readonly SetElement[];
  readonly deletedPresent: readonly SetElement[];
  readonly finalReads: number;
  readonly counts: OutcomeCounts;
  readonly stats: {
    /** Distinct elements someone attempted to add (ok or unknown). */
    readonly attempted: number;
    /** Distinct elements with an acknowledged add. */
    readonly acknowledged: number;
    /** Distinct elements whose adds were all unknown and that every final read shows. */
    readonly recovered: number;
  };
}

type Timed = Extract<SetOp, { kind: 'add' | 'delete' }>;
type Read = Extract<SetOp, { kind: 'read' }>;

/** A map key that keeps 1 and '1' apart. */
const id = (e: SetElement) => `${typeof e}:${e}`;
const end = (op: Timed) => (op.outcome === 'unknown' ? Infinity : op.completeMs);
const precedes = (a: Timed, b: Timed) => end(a) < b.invokeMs;

export function checkSet(history: readonly SetOp[]): SetCheck {
  const counts = countOutcomes(history);
  const ops = new Map<string, { element: SetElement; adds: Timed[]; deletes: Timed[] }>();
  for (const op of history) {
    if (op.kind === 'read' || op.outcome === 'fail') continue; // a failed op did not happen
    let e = ops.get(id(op.element));
    if (e === undefined) ops.set(id(op.element), (e = { element: op.element, adds: [], deletes: [] }));
    (op.kind === 'add' ? e.adds : e.deletes).push(op);
  }
  const finals = history.filter((op): op is Read => op.kind === 'read' && op.final === true && op.outcome === 'ok');

  // Per element: must it be present (an ok add after every delete), must it be absent (an ok
  // delete after every add), and was it ever added.
  const mustBePresent = new Map<string, Timed>();
  const mustBeAbsent = new Map<string, Timed>();
  for (const [key, e] of ops) {
    const add = e.adds.find((a) => a.outcome === 'ok' && e.deletes.every((d) => precedes(d, a)));
    if (add !== undefined) mustBePresent.set(key, add);
    const del = e.deletes.find((d) => d.outcome === 'ok' && e.adds.every((a) => precedes(a, d)));
    if (del !== undefined) mustBeAbsent.set(key, del);
  }

  const anomalies: SetAnomaly[] = [];
  const lost = new Map<string, SetElement>();
  const unexpected = new Map<string, SetElement>();
  const deletedPresent = new Map<string, SetElement>();
  for (const read of finals) {
    const shown = new Map((read.elements ?? []).map((x) => [id(x), x]));
    for (const [key, add] of mustBePresent) {
      if (shown.has(key)) continue;
      lost.set(key, add.element);
      anomalies.push({ type: 'lost', element: add.element, node: read.node, detail: `added (acknowledged at ${add.completeMs} ms) after every delete, but missing from the final read` });
    }
    for (const [key, element] of shown) {
      const e = ops.get(key);
      if (e === undefined || e.adds.length === 0) {
        unexpected.set(key, element);
        anomalies.push({ type: 'unexpected', element, node: read.node, detail: 'in the final read, but nobody added it (or every add of it failed)' });
        continue;
      }
      const del = mustBeAbsent.get(key);
      if (del !== undefined) {
        deletedPresent.set(key, element);
        anomalies.push({ type: 'deleted-present', element, node: read.node, detail: `deleted (acknowledged at ${del.completeMs} ms) after every add, but in the final read` });
      }
    }
  }
  if (finals.length === 0 && history.length > 0) anomalies.push({ type: 'no-final-read', detail: 'no final read was acknowledged: nothing could be checked' });

  const shownByAll = (key: string) => finals.length > 0 && finals.every((r) => (r.elements ?? []).some((x) => id(x) === key));
  const all = [...ops.entries()];
  return {
    ok: anomalies.length === 0,
    anomalies,
    lost: [...lost.values()],
    unexpected: [...unexpected.values()],
    deletedPresent: [...deletedPresent.values()],
    finalReads: finals.length,
    counts,
    stats: {
      attempted: all.filter(([, e]) => e.adds.length > 0).length,
      acknowledged: all.filter(([, e]) => e.adds.some((a) => a.outcome === 'ok')).length,
      recovered: all.filter(([key, e]) => e.adds.length > 0 && e.adds.every((a) => a.outcome === 'unknown') && shownByAll(key)).length,
    },
  };
}
