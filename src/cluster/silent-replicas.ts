// Replicas of groups this node leads that answer nothing while their node is up: a replica
// whose store failed stops, and its node's links and heartbeats go on, so the failure
// detector sees nothing. Looked at each membership round; /health reports those silent long
// enough. The leader's `recentActive` is cleared at each check-quorum round and set by any
// answer: a live replica sets it again within a heartbeat, so only a silent one is found
// unset at every look.
import type { Progress } from '../raft/progress.js';

/** What a look needs of a group's Raft core. */
export interface LedCore {
  readonly role: string;
  readonly quiesced: boolean;
  readonly progress: ReadonlyMap<string, Pick<Progress, 'recentActive'>>;
}

/** How long a replica must be silent, or a group leaderless, to be reported: 10 election timeouts, at least 5 s. */
export function reportAfterMs(t: { readonly electionTicks: number; readonly tickMs: number }): number {
  return Math.max(5_000, 10 * t.electionTicks * t.tickMs);
}

export class SilentReplicas {
  /** "group peer" -> since when it has been silent at every look. */
  readonly #since = new Map<string, number>();

  /** One look at `group`'s replicas; `core` undefined: no longer hosted here. */
  look(group: string, core: LedCore | undefined, me: string, peerAlive: (node: string) => boolean, nowMs: number): void {
    const led = core !== undefined && core.role === 'leader' && !core.quiesced;
    for (const key of [...this.#since.keys()]) if (key.startsWith(`${group} `) && (!led || !core.progress.has(key.slice(group.length + 1)))) this.#since.delete(key);
    if (!led) return;
    for (const [peer, pr] of core.progress) {
      if (peer === me) continue;
      const key = `${group} ${peer}`;
      if (pr.recentActive || !peerAlive(peer)) this.#since.delete(key);
      else if (!this.#since.has(key)) this.#since.set(key, nowMs);
    }
  }

  /** Forgets every group `keep` refuses (no longer hosted here). */
  retain(keep: (group: string) => boolean): void {
    for (const key of [...this.#since.keys()]) if (!keep(key.slice(0, key.indexOf(' ')))) this.#since.delete(key);
  }

  /** The replicas silent for `forMs` or more. */
  silentFor(forMs: number, nowMs: number): { group: string; peer: string; ms: number }[] {
    const out: { group: string; peer: string; ms: number }[] = [];
    for (const [key, sinceMs] of this.#since) {
      if (nowMs - sinceMs < forMs) continue;
      const space = key.indexOf(' ');
      out.push({ group: key.slice(0, space), peer: key.slice(space + 1), ms: nowMs - sinceMs });
    }
    return out;
  }
}
