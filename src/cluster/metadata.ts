// The metadata group's state machine shell: decodes committed entries into commands, applies
// them with the pure `applyMeta`, snapshots and restores the state, and tells listeners what
// changed (transport peers, API keys, gateway tenants). The state lives in memory: a restart
// rebuilds it from the Raft snapshot plus the log tail, which is the only durable copy.
import { decodeCbor, encodeCbor } from '../core/codec.js';
import type { StateMachine } from '../raft/group.js';
import type { Entry } from '../raft/types.js';
import { EMPTY_META, type MetaCommand, type MetaResult, type MetaState, applyMeta, canonicalMeta, checkMetaCommand, checkMetaState, isLive } from './meta-state.js';
import { PROTOCOL } from './versions.js';

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
    if (entry.kind !== 'normal') {
      this.applied = entry.index;
      return undefined;
    }
    let cmd: MetaCommand;
    try {
      cmd = checkMetaCommand(decodeCbor(entry.data));
    } catch (err) {
      // A member on a newer protocol may have proposed what this build cannot read: skipping it
      // here alone would leave this node's state apart from the others'. Stop applying (the
      // group halts on this node, /health says why) until it runs the newer build.
      const newer = Object.values(this.state.nodes).filter((n) => isLive(n) && (n.protocol ?? 0) > PROTOCOL);
      if (newer.length > 0) {
        const names = newer.map((n) => `${n.name} (${n.version ?? '?'}, protocol ${n.protocol})`).join(', ');
        throw new Error(`this build (cluster protocol ${PROTOCOL}) cannot read metadata entry ${entry.index}, which newer members may have written (${names}): upgrade this node (${(err as Error).message})`);
      }
      // Every member runs this protocol: only our code proposes, so an undecodable entry is a
      // bug. Skipping it on every replica keeps them equal, where throwing would stop the group
      // everywhere.
      this.applied = entry.index;
      this.#onBadEntry(entry.index, err);
      return { result: { ok: false, code: 'conflict', message: 'undecodable metadata command' }, index: entry.index };
    }
    this.applied = entry.index;
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
