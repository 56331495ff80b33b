// Membership arithmetic, pure: a conf state and a one-at-a-time change in, the next conf state
// out (voters and learners sorted). The core applies committed changes with it; offline
// recovery (recover.ts) reads a log's membership with it.
import { unreachable } from '../core/unreachable.js';
import type { ConfChange, ConfState, Entry } from './types.js';

const sorted = (ids: Iterable<string>): string[] => [...new Set(ids)].sort();

/** `addVoter` on a learner promotes it; `addLearner` on a voter changes nothing. */
export function applyConfChange(conf: ConfState, change: ConfChange): ConfState {
  const { node } = change;
  switch (change.type) {
    case 'addVoter':
      return { voters: sorted([...conf.voters, node]), learners: sorted(conf.learners.filter((n) => n !== node)) };
    case 'addLearner':
      return { voters: sorted(conf.voters), learners: sorted(conf.voters.includes(node) ? conf.learners : [...conf.learners, node]) };
    case 'removeNode':
      return { voters: sorted(conf.voters.filter((n) => n !== node)), learners: sorted(conf.learners.filter((n) => n !== node)) };
    default:
      return unreachable(change.type);
  }
}

/** The membership after every conf entry of `entries`, from `conf`. */
export function confAfter(conf: ConfState, entries: Iterable<Entry>): ConfState {
  let out: ConfState = { voters: sorted(conf.voters), learners: sorted(conf.learners) };
  for (const e of entries) if (e.kind === 'conf') out = applyConfChange(out, e.change);
  return out;
}
