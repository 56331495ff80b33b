// The metadata group's state machine shell: decodes committed entries into commands, applies
// them with the pure `applyMeta`, snapshots and restores the state, and tells listeners what
// changed (transport peers, API keys, gateway tenants). The state lives in memory: a restart
// rebuilds it from the Raft snapshot plus the log tail, which is the only durable copy.
import { decodeCbor, encodeCbor } from '../core/codec.js';
import type { StateMachine } from '../raft/group.js';
import type { Entry } from '../raft/types.js';
import { EMPTY_META, type MetaCommand, type MetaResult, type MetaState, applyMeta, canonicalMeta, checkMetaCommand, checkMetaState } from './meta-state.js';

export const META_GROUP = 'meta';

/** What a proposer gets back: the command's result and the log index it was applied at. */
export interface Applied {
  readonly result: MetaResult;
  readonly index: number;
}

export type MetaListener = (state: MetaState, cmd: MetaCommand | undefined) => void;

export class MetaFsm implements StateMachine {
  state: MetaState = EMPTY_META;
  /** Index of the last entry applied (or restored). */
  applied = 0;
  readonly #listeners: MetaListener[] = [];
  readonly #onBadEntry: (index: number, err: unknown) => void;

  constructor(onBadEntry: (index: number, err: unknown) => void) {
    this.#onBadEntry = onBadEntry;
  }

  listen(listener: MetaListener): void {
    this.#listeners.push(listener);
  }

  apply(entry: Entry): Applied | undefined {
    this.applied = entry.index;
    if (entry.kind !== 'normal') return undefined;
    let cmd: MetaCommand;
    try {
      cmd = checkMetaCommand(decodeCbor(entry.data));
    } catch (err) {
      // Only our code proposes; an undecodable entry is a bug. Skipping it on every replica
      // keeps them equal, where throwing would stop the group everywhere.
      this.#onBadEntry(entry.index, err);
      return { result: { ok: false, code: 'conflict', message: 'undecodable metadata command' }, index: entry.index };
    }
    const { state, result } = applyMeta(this.state, cmd);
    this.state = state;
    for (const l of this.#listeners) l(state, cmd);
    return { result, index: entry.index };
  }

  snapshot(): Uint8Array {
    return encodeCbor({ applied: this.applied, state: canonicalMeta(this.state) });
  }

  restore(data: Uint8Array): void {
    const snap = decodeCbor(data) as { applied?: unknown; state?: unknown };
    this.state = checkMetaState(snap.state);
    this.applied = typeof snap.applied === 'number' ? snap.applied : this.applied;
    for (const l of this.#listeners) l(this.state, undefined);
  }
}
